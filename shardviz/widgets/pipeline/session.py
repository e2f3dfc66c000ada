"""The pipeline Explorer's session: ``compare`` rerun per pipeline configuration, in the background.

:class:`PipelineSession` knows the model (its batch rows and layer count, which decide what the
controls offer) and runs :func:`shardviz.compare` for a
:class:`~.checks.PipelineConfig`, keeping the comparisons it ran (a slider moved back
shows at once, and the Schedule pane lists the step time of every count run so far).
:class:`PipelineConnection` wires controls -> background run (newest wins, errors inline, via
:class:`~shardviz.explainer.background.Latest`) -> the explorer's panes and the Schedule pane.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import ipywidgets as widgets

from shardviz.capture.mesh_info import device_pool
from shardviz.errors import ShardvizError, problem
from shardviz.explainer.background import COMPILING, Latest, Stage
from shardviz.model import Comparison
from shardviz.strategies.rules import PIPELINE_NAMES
from shardviz.strategies.runner import compare
from shardviz.strategies.zoo import ModelDef, default_sizes, get_model
from shardviz.widgets.config_checks import invalid_words
from shardviz.widgets.pipeline.checks import PipelineConfig, microbatch_options, stage_options
from shardviz.widgets.pipeline.controls import PipelineControls
from shardviz.widgets.pipeline.pane import SweepRun, pane_html, sweep_row
from shardviz.widgets.session import ExplorerLike, status_setter

__all__ = ["CACHE_SIZE", "PipelineConnection", "PipelineSession"]

#: Comparisons kept per session (most recently used), so a slider moved back shows at once.
#: What the sweep needs of each run (two numbers) is kept for every run.
CACHE_SIZE = 8


class PipelineSession:
    """A model's pipelines, compared under each configuration the controls give.

    Args:
        model: a built-in model name (``"transformer"``) or a :class:`ModelDef` whose
            ``info`` has ``batch`` and ``layers`` (the zoo transformer's does).
        strategies: what :func:`shardviz.compare` runs; at least one pipeline (``"pp"``,
            ``"pp+dp"``); others run as they are, next to it.
        steps, seed: as for :func:`shardviz.compare`.
        **options: model sizes for a built-in model (``layers=4, batch=16``) and any other
            keyword :func:`shardviz.compare` takes, passed on as they are.

    Raises:
        ShardvizError: no pipeline strategy, an unknown model or size, or a model without a
            batch size and layer count.
    """

    def __init__(
        self,
        model: str | ModelDef = "transformer",
        strategies: Sequence[str] = ("pp",),
        *,
        steps: int = 3,
        seed: int = 0,
        **options: Any,
    ) -> None:
        self.strategies = tuple(strategies)
        if not any(s in PIPELINE_NAMES for s in self.strategies):
            raise ShardvizError(
                problem(
                    "Explorer.pipeline",
                    f"strategies {self.strategies!r} hold no pipeline",
                    f"include {' or '.join(map(repr, PIPELINE_NAMES))}, e.g. ['pp', 'pp+dp']",
                )
            )
        self.model = model
        self.steps, self.seed = steps, seed
        self.options = dict(options)
        defined = get_model(model, **self._sizes()) if isinstance(model, str) else model
        info = defined.info
        if "batch" not in info or "layers" not in info:
            raise ShardvizError(
                problem(
                    f"model {defined.name!r}",
                    "its info has no 'batch' and 'layers' sizes to offer microbatches and stages",
                    "explore the built-in 'transformer' (sizes such as layers=4, batch=16)",
                )
            )
        if "config" in info:  # a published architecture: its 'pp' has no microbatch schedule
            raise ShardvizError(
                problem(
                    f"model {defined.name!r}",
                    "a published architecture pipelines as 'pp' over its stage axis, with no "
                    "microbatches, schedule or checkpointing to explore",
                    "explore the built-in 'transformer' (sizes such as layers=4, batch=16), or "
                    f"compare its stages with sv.compare({defined.name!r}, ['pp'], stages=4)",
                )
            )
        self.batch, self.layers = int(info["batch"]), int(info["layers"])
        self.devices = len(device_pool(None))
        self._cache: OrderedDict[PipelineConfig, Comparison] = OrderedDict()
        self._runs: dict[tuple[PipelineConfig, str], SweepRun] = {}
        self._lock = threading.Lock()  # one compare at a time: they share the cores
        self.calls = 0  # how many times compare ran (not counting the cache)

    def _sizes(self) -> dict[str, Any]:
        """The options :func:`get_model` takes (the model's sizes), for a built-in model."""
        known = default_sizes(self.model) if isinstance(self.model, str) else {}
        return {k: v for k, v in self.options.items() if k in known}

    def initial_config(
        self,
        stages: int | None = None,
        microbatches: int | None = None,
        schedule: str | None = None,
        checkpoint: bool = False,
    ) -> PipelineConfig:
        """The configuration to start from: the ones given, else 2 stages (or the most there
        can be) and 4 microbatches (or the largest count under 4 that divides the batch)."""
        if stages is None:
            offered = stage_options(self.layers, self.devices)
            stages = 2 if 2 in offered else offered[-1]
        if microbatches is None:
            microbatches = max(m for m in microbatch_options(self.batch) if m <= 4)
        return PipelineConfig(stages, microbatches, schedule, checkpoint)

    def controls(self, initial: PipelineConfig) -> PipelineControls:
        """:class:`PipelineControls` for this model and these devices, starting at ``initial``.

        Raises:
            ShardvizError: ``initial`` cannot run (names the control and the fix).
        """
        return PipelineControls(
            initial, strategies=self.strategies, batch=self.batch, layers=self.layers,
            devices=self.devices,
        )  # fmt: skip

    def cached(self, config: PipelineConfig) -> Comparison | None:
        """The comparison already run for ``config``, if kept."""
        return self._cache.get(config)

    def run(self, config: PipelineConfig, stage: Stage | None = None) -> Comparison:
        """``compare`` under ``config`` (or the kept comparison). With a
        :class:`~shardviz.explainer.background.Stage`, a request superseded while it waited
        stops there."""
        with self._lock:
            kept = self._cache.get(config)
            if kept is not None:
                self._cache.move_to_end(config)
                return kept
            if stage is not None:
                stage(COMPILING)  # raises Superseded if a newer request came while waiting
            self.calls += 1
            comparison = compare(
                self.model, list(self.strategies), steps=self.steps, seed=self.seed,
                stages=config.stages, microbatches=config.microbatches,
                schedule=config.schedule, checkpoint=config.checkpoint, **self.options,
            )  # fmt: skip
            self._cache[config] = comparison
            for result in comparison.results:
                run = SweepRun.of(result)
                if run is not None:
                    self._runs[(config, comparison.label(result))] = run
            while len(self._cache) > CACHE_SIZE:
                self._cache.popitem(last=False)
            return comparison

    def runs(self, config: PipelineConfig, label: str) -> dict[int, SweepRun]:
        """What the strategy ``label``'s runs at ``config``'s stages, schedule and
        checkpointing measured, by microbatch count."""
        key = (config.stages, config.schedule, config.checkpoint)
        return {
            ran.microbatches: run
            for (ran, name), run in list(self._runs.items())
            if name == label and (ran.stages, ran.schedule, ran.checkpoint) == key
        }

    def pane(self, comparison: Comparison, config: PipelineConfig, label: str) -> str:
        """The Schedule pane's HTML for the strategy ``label`` of ``comparison``."""
        result = comparison.result(label)
        if result.schedule is None:
            pipes = [comparison.label(r) for r in comparison.results if r.schedule is not None]
            return (
                '<div class="shardviz-pipeline-none" style="color:#57606a">'
                f"{_esc(label)} is not a pipeline: pick {_esc(' or '.join(pipes))} above the "
                "panes to see its schedule</div>"
            )
        points = sweep_row(
            config.stages, microbatch_options(self.batch), config.microbatches,
            self.runs(config, label),
        )  # fmt: skip
        return pane_html(label, result, points)


def _esc(text: str) -> str:
    import html

    return html.escape(text, quote=True)


class PipelineConnection:
    """Controls wired to a :class:`PipelineSession`, an explorer and its Schedule pane.

    Every valid configuration the controls hand on runs in a background thread (newest wins);
    its comparison goes to ``explorer.show`` and the pane, its progress to the explorer's
    status and error and to the controls' status line. While the controls hold a combination
    that cannot run, ``explorer.stale`` says why (the panes keep the last one that ran).
    Nothing is raised into the kernel.

    Args:
        explorer: the view (``show``, ``status``, ``error``, ``stale``; and
            ``selected_strategy``, observed so the pane follows the strategy shown).
        controls: the pipeline controls.
        session: runs the configurations.
        shown: the configuration the explorer shows now.
    """

    def __init__(
        self,
        explorer: ExplorerLike,
        controls: PipelineControls,
        session: PipelineSession,
        shown: PipelineConfig,
    ) -> None:
        self.explorer = explorer
        self.controls = controls
        self.session = session
        self.shown = shown
        self.config = shown  # the newest configuration submitted
        #: The Schedule pane (its HTML is :meth:`PipelineSession.pane`).
        self.pane = widgets.HTML()
        self.pane.add_class("shardviz-schedule-pane")
        set_explorer_status = status_setter(explorer)

        def on_status(status: str, error: str) -> None:
            set_explorer_status(status, error)
            controls.show_status(status, error)

        self.latest = Latest(on_result=self._deliver, on_status=on_status)
        controls.on_change(self.submit)
        controls.on_errors(lambda errors: setattr(explorer, "stale", invalid_words(errors)))
        observe = getattr(explorer, "observe", None)
        if callable(observe):
            observe(lambda _change: self.refresh_pane(), names="selected_strategy")
        self.refresh_pane()

    def submit(self, config: PipelineConfig) -> int:
        """Run ``config`` in the background; returns its generation number."""
        self.config = config
        self.controls.show_status(COMPILING, "", config)
        return self.latest.submit(lambda stage: (config, self.session.run(config, stage)))

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the newest run is shown (or failed); False on timeout."""
        return self.latest.wait(timeout)

    def refresh_pane(self) -> None:
        """Redraw the Schedule pane for the strategy the explorer shows."""
        comparison = getattr(self.explorer, "comparison", None)
        label = getattr(self.explorer, "selected_strategy", "")
        if comparison is None or label not in comparison.labels:
            self.pane.value = ""
            return
        self.pane.value = self.session.pane(comparison, self.shown, label)

    def _deliver(self, outcome: tuple[PipelineConfig, Comparison]) -> None:
        config, comparison = outcome
        self.shown = config
        self.explorer.show(comparison)
        self.refresh_pane()
