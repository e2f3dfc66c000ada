"""Several parallelism strategies run on the same model, side by side, as plain data."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from shardviz.model import display
from shardviz.model._codec import JsonMixin
from shardviz.model.hardware import Target
from shardviz.model.mesh import MeshLayout
from shardviz.model.program import Report
from shardviz.model.schedule import Schedule

#: Built-in strategies known by two names: the other name -> the name results carry.
STRATEGY_ALIASES = {"fsdp": "zero3"}


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

    Host memory is apart: ``peak`` is HBM, ``host`` the bytes one device keeps in host
    memory (the report's :attr:`~shardviz.model.MemoryReport.host_bytes`), and
    ``host_params`` / ``host_optimizer`` the parameter and optimizer leaves among them
    (those also count in ``params`` / ``optimizer``, which are by role, wherever they live),
    ``host_outputs``, ``host_scratch`` and ``host_padding`` the rest: the five add up to
    ``host``.
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
    host: int = 0
    host_params: int = 0
    host_optimizer: int = 0
    #: Host outputs not written over a host argument, and host scratch (values a remat
    #: policy offloads).
    host_outputs: int = 0
    host_scratch: int = 0
    #: What the compiler's host figure holds beyond the leaves: its layout padding (a TPU
    #: pads each array to its 8 x 128 tiles); 0 where the host figures are the leaves'.
    host_padding: int = 0

    @property
    def reconciled(self) -> bool:
        return self.arguments_from_leaves == self.arguments_from_compiler


@dataclass(frozen=True)
class CollectiveSummary:
    """The ledger of one step summarised: how many collectives of a kind over some axes run
    per step, and their bytes. One inside a loop counts once per trip (a pipeline's permute
    runs once per tick); one in a loop of unknown trip count, once. ``cross_host_bytes`` is
    the part of ``moved_bytes`` that crosses hosts (see
    :attr:`shardviz.model.Collective.cross_host_bytes`; 0 on one host)."""

    kind: str
    axes: tuple[str, ...]
    count: int
    in_bytes: int
    moved_bytes: int
    cross_host_bytes: int = 0


def target_short_label(target: Target) -> str:
    """A target named briefly for row labels: ``TPU v5e 2x4``, ``2 x TPU v5e 16x16``."""
    slices = f"{target.num_slices} x " if target.num_slices > 1 else ""
    return f"{slices}{target.hardware.name} {target.shape_text}"


@dataclass(frozen=True)
class StrategyResult:
    """One strategy on the model: its mesh, the full report, and the figures compared.

    The target its estimate is made for is the report's (``report.target``; ``None`` without
    one). A comparison on several targets holds one result per strategy and target.
    """

    #: A loss measured NaN (a diverged run) is a result: a document may hold it.
    NON_FINITE: ClassVar[frozenset[str]] = frozenset({"loss", "reference_loss"})

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
    #: A pipeline strategy's schedule (stages x microbatches; ``None`` for the others).
    schedule: Schedule | None = None
    #: Per device per step: bytes the compiler's host transfers move each way.
    to_host_bytes: int = 0
    to_device_bytes: int = 0

    @property
    def host_transfer_bytes(self) -> int:
        """Bytes crossing the host link per device per step, both ways together."""
        return self.to_host_bytes + self.to_device_bytes

    @property
    def target(self) -> Target | None:
        """The target the report's estimate describes (``None`` without one)."""
        return self.report.target

    @property
    def target_label(self) -> str:
        """The target named briefly (``TPU v5e 2x4``; ``TPU v5e 2x4 (from CPU)`` when the
        program was compiled on CPU devices and only estimated for it), or ``""``."""
        t = self.report.target
        if t is None:
            return ""
        # Compiled on CPU devices and estimated for the target, or compiled for it (a
        # topology's or the real devices): on one comparison both can name the same target.
        return (
            f"{target_short_label(t)} (from CPU)"
            if self.report.platform == "cpu"
            else (target_short_label(t))
        )

    def on_target(self, target: str) -> bool:
        """Whether this result is for ``target``: its name (``v5e:2x4``), preset (``v5e``),
        label or short label."""
        t = self.report.target
        if t is None:
            return False
        names = {t.name, t.label, target_short_label(t), t.hardware.name, t.hardware.preset}
        return target in names - {""}


@dataclass(frozen=True, repr=False)  # one line: see display.Shown._repr_pretty_
class Comparison(JsonMixin, display.Shown):
    """The same model under several strategies, on the same devices.

    On several targets (``compare(..., target=["v5e", "h100"])``) it holds one result per
    strategy and target, each report with its ``target`` set; :meth:`label` tells them apart
    (``fsdp @ TPU v5e 2x4``) and :meth:`result` finds one by that label or by strategy and
    target.
    """

    #: What a document read back may hold (see :mod:`shardviz.model._codec`).
    DOCUMENT_LIMITS: ClassVar[dict[str, int]] = {"results": 1024}

    model: str
    num_params: int
    param_dtype: str
    results: tuple[StrategyResult, ...]
    notes: tuple[str, ...] = ()

    @property
    def targets(self) -> tuple[str, ...]:
        """The distinct targets estimated for, named briefly, in order of first appearance."""
        return tuple(dict.fromkeys(r.target_label for r in self.results if r.target_label))

    @property
    def by_target(self) -> bool:
        """Whether the results are on more than one target (rows are then labelled by it)."""
        return len(self.targets) > 1

    def label(self, r: StrategyResult) -> str:
        """How views name a result: the strategy, with ``@ target`` when targets differ."""
        if self.by_target and r.target_label:
            return f"{r.strategy} @ {r.target_label}"
        return r.strategy

    @property
    def labels(self) -> tuple[str, ...]:
        """:meth:`label` of every result, in order."""
        return tuple(self.label(r) for r in self.results)

    def result(self, strategy: str, target: str | None = None) -> StrategyResult:
        """The result labelled ``strategy`` (see :meth:`label`), else the first of that
        strategy (on ``target`` when given: a name such as ``v5e:2x4``, a preset or a label).
        A built-in strategy's other name finds it too (``"fsdp"`` is ``"zero3"``).

        Raises:
            KeyError: no such result.
        """
        names = (strategy, STRATEGY_ALIASES.get(strategy, strategy))
        if target is None:
            for r in self.results:
                if self.label(r) in names:
                    return r
        for r in self.results:
            if r.strategy in names and (target is None or r.on_target(target)):
                return r
        raise KeyError(strategy if target is None else f"{strategy} @ {target}")

    def figure(self):
        """An interactive plotly figure: memory stacked by component, bytes moved by kind."""
        return display.render(self, "plotly")

    def matplotlib_figure(self):
        """The same as a static matplotlib figure, for slides."""
        return display.render(self, "matplotlib")
