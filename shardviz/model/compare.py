"""Several parallelism strategies run on the same model, side by side, as plain data."""

from __future__ import annotations

from dataclasses import dataclass

from shardviz.model._codec import JsonMixin
from shardviz.model.mesh import MeshLayout
from shardviz.model.program import Report


@dataclass(frozen=True)
class MemoryBreakdown:
    """Bytes on the device holding the most, by component.

    ``params``, ``optimizer`` and ``batch`` are the argument leaves by role (their sum is
    ``arguments_from_leaves``, reconciled against the compiler's ``arguments_from_compiler``).
    ``grads`` is the gradient tree under the strategy's gradient specs, as ZeRO's accounting
    counts it; the compiler keeps gradients in its temp, or fuses them into the update and
    never holds them whole, so ``activations`` (the rest of temp: activations and scratch) is
    ``temp - grads`` and never below zero. ``peak`` is the report's peak figure; views show
    what the components leave of it (mostly outputs not written in place) as "other".
    """

    params: int
    grads: int
    optimizer: int
    batch: int
    activations: int
    arguments_from_leaves: int
    arguments_from_compiler: int
    temp: int
    output: int
    alias: int
    peak: int

    @property
    def reconciled(self) -> bool:
        return self.arguments_from_leaves == self.arguments_from_compiler


@dataclass(frozen=True)
class CollectiveSummary:
    """The ledger of one step summarised: how many collectives of a kind over some axes."""

    kind: str
    axes: tuple[str, ...]
    count: int
    in_bytes: int
    moved_bytes: int


@dataclass(frozen=True)
class StrategyResult:
    """One strategy on the model: its mesh, the full report, and the figures compared."""

    strategy: str
    title: str
    description: str
    mesh: MeshLayout
    report: Report
    memory: MemoryBreakdown
    collectives: tuple[CollectiveSummary, ...]
    loss: float | None = None
    reference_loss: float | None = None
    loss_matches: bool | None = None
    step_seconds: float | None = None
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Comparison(JsonMixin):
    """The same model under several strategies, on the same devices."""

    model: str
    num_params: int
    param_dtype: str
    results: tuple[StrategyResult, ...]
    notes: tuple[str, ...] = ()

    def result(self, strategy: str) -> StrategyResult:
        for r in self.results:
            if r.strategy == strategy:
                return r
        raise KeyError(strategy)

    def __str__(self) -> str:
        from shardviz.render.compare_text import comparison_text

        return comparison_text(self)

    def _repr_html_(self) -> str:
        from shardviz.render.compare_html import comparison_html

        return comparison_html(self)

    def save_html(self, path: str) -> str:
        """Write the comparison as one self-contained offline HTML file; return the path."""
        from shardviz.render.html import page

        with open(path, "w", encoding="utf-8") as f:
            f.write(page(f"shardviz: {self.model} under {len(self.results)} strategies",
                         [self._repr_html_()]))  # fmt: skip
        return path

    def figure(self):
        """An interactive plotly figure: memory stacked by component, bytes moved by kind."""
        from shardviz.render.compare_plotly import comparison_figure

        return comparison_figure(self)

    def matplotlib_figure(self):
        """The same as a static matplotlib figure, for slides."""
        from shardviz.render.compare_mpl import comparison_mpl

        return comparison_mpl(self)
