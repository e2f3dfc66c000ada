"""``shardviz.Explorer``: the explorer view, plus controls and live training for a function.

``Explorer(report)`` and ``Explorer(comparison)`` show what was captured. ``Explorer(fn, *args)``
explains ``fn`` on its (sharded) arguments first, then shows the controls above the panes:
changing the mesh, the axis names, the strategy or a spec recompiles and reruns in the
background (newest request wins, errors inline), and :meth:`Explorer.train` runs training
steps in a live view. :meth:`Explorer.pipeline` compares pipelines of a model and shows a
microbatch slider, stage and schedule choices and a Schedule pane above the panes; a change
reruns the comparison in the background the same way.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import ipywidgets

from shardviz.capture.stages import jax_stage
from shardviz.errors import CompileError, problem
from shardviz.explainer.explain import explain
from shardviz.model import Comparison, Report
from shardviz.render.report.view import status_line
from shardviz.widgets.explorer.widget import ExplorerWidget
from shardviz.widgets.live.widget import LiveRun, live
from shardviz.widgets.pipeline.session import PipelineConnection, PipelineSession
from shardviz.widgets.session import Connection, ExplorerSession, connect
from shardviz.widgets.static_bundle import with_static_html


class Explorer(ExplorerWidget):
    """Linked panes (mesh, arrays, collectives, memory) for a report, a comparison or a function.

    Args:
        shown: a :class:`~shardviz.model.Report`, a :class:`~shardviz.model.Comparison`, or a
            function to explain on ``args`` (plain or jitted).
        *args: the function's arguments (arrays placed with shardings; pytrees allowed).
        steps: steps each (re)run times, for a function.
        target: hardware to estimate on, for a function (see :func:`shardviz.explain`):
            e.g. ``"v5e"`` on fake CPU devices; a topology's devices are their own target.
        logical_axes: for a function, leaf pattern -> logical dim names (``{"layers/*/wq":
            ("embed", "heads")}``): the controls then offer logical rules (``embed=data,
            heads=model``) that set every leaf a pattern names.
        **kwargs: initial selections (``selected_array``, ``selected_device``, ...).

    Raises:
        TypeError: ``shown`` is neither a Report, a Comparison, a jax stage (``Traced``,
            ``Lowered``, ``Compiled``: explained and shown, without controls) nor callable,
            or a report was given with arguments.
        ShardvizError: the function failed to compile or run with its arguments.
    """

    def __init__(
        self,
        shown: Any,
        *args: Any,
        steps: int = 2,
        target: Any = None,
        logical_axes: Mapping[str, Sequence[str | None]] | None = None,
        **kwargs: Any,
    ) -> None:
        self.session: ExplorerSession | None = None
        self.controls: Any = None
        self.connection: Connection | PipelineConnection | None = None
        self._box: ipywidgets.Widget | None = None
        if isinstance(shown, Report | Comparison):
            if args or logical_axes is not None:
                raise TypeError(
                    "Explorer(report) and Explorer(comparison) take no arguments or "
                    "logical_axes; to explore a function pass it first: Explorer(fn, *args)"
                )
            super().__init__(shown, **kwargs)
            return
        if jax_stage(shown) is not None:
            # A stage a framework built (``jax.jit(step).lower(...)``): its shardings are
            # compiled in, so there is nothing for the controls to change; shown explained.
            if logical_axes is not None:
                raise TypeError(
                    "Explorer(stage) takes no logical_axes: a Lowered or Compiled has its "
                    "shardings compiled in; explore the function instead: Explorer(fn, *args)"
                )
            super().__init__(explain(shown, *args, steps=steps, target=target), **kwargs)
            return
        if not callable(shown):
            raise TypeError(
                f"Explorer takes a Report, a Comparison or a function and its arguments, got "
                f"{type(shown).__name__}; e.g. shardviz.Explorer(train_step, params, batch)"
            )
        session = ExplorerSession(shown, *args, steps=steps, target=target)
        super().__init__(session.run(session.initial_config()), **kwargs)
        self.session = session
        self.controls = session.controls(logical_axes)
        self.connection = connect(self, self.controls, session, run_now=False)
        self._box = ipywidgets.VBox([self.controls, self])

    @classmethod
    def pipeline(
        cls,
        model: Any = "transformer",
        strategies: Sequence[str] = ("pp",),
        *,
        stages: int | None = None,
        microbatches: int | None = None,
        schedule: str | None = None,
        checkpoint: bool = False,
        steps: int = 3,
        seed: int = 0,
        **sizes: Any,
    ) -> Explorer:
        """Compare ``model``'s pipelines and explore them: the Explorer of the comparison,
        a Schedule pane, and controls that rerun it.

        Runs :func:`shardviz.compare` (``model``, ``strategies``, ``stages``, ``microbatches``,
        ``schedule``, ``checkpoint``, ``sizes``) once, then shows above the panes: a slider
        over the microbatch counts that divide the batch, the stage counts that divide the
        layers and fit the devices, the schedule (GSPMD, GPipe or 1F1B written with
        ``shard_map``) and activation checkpointing; and the Schedule pane of the strategy
        shown (the stages x time chart, the bubble against the theory ``(S-1)/(M+S-1)`` and
        the measured one when profiled, each stage's microbatches in flight and activation
        bytes, and the step time of every microbatch count run so far). Changing a control
        reruns the comparison in the background (newest wins; a combination that cannot run
        is flagged under the controls and nothing runs); every pane then updates.

        Args:
            model: ``"transformer"`` (the zoo's; its layers are what a pipeline stacks) or a
                :class:`~shardviz.strategies.zoo.ModelDef` with ``batch`` and ``layers`` in
                its ``info``.
            strategies: at least one of ``"pp"`` and ``"pp+dp"``; others run beside them.
            stages, microbatches: where the controls start (default 2 and 4, or the
                nearest counts that fit).
            schedule: ``None`` (GSPMD's form), ``"gpipe"`` or ``"1f1b"``.
            checkpoint: recompute each stage in its backward (``jax.checkpoint``).
            steps, seed: as for :func:`shardviz.compare`.
            **sizes: model sizes (``layers=4, batch=16``) and other :func:`shardviz.compare`
                keywords.

        Raises:
            ShardvizError: no pipeline strategy, an unknown model, size or schedule, or a
                starting combination that cannot run (says which control and the fix).
        """
        session = PipelineSession(model, strategies, steps=steps, seed=seed, **sizes)
        config = session.initial_config(stages, microbatches, schedule, checkpoint)
        controls = session.controls(config)  # an impossible start fails here, before any run
        explorer = cls(session.run(config))
        explorer.controls = controls
        connection = PipelineConnection(explorer, controls, session, config)
        explorer.connection = connection
        explorer._box = ipywidgets.VBox([controls, connection.pane, explorer])
        return explorer

    @property
    def schedule_pane(self) -> ipywidgets.HTML | None:
        """The Schedule pane of an explorer made by :meth:`pipeline` (else ``None``)."""
        connection = self.connection
        return connection.pane if isinstance(connection, PipelineConnection) else None

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the newest recompile has finished (True) or ``timeout`` passed."""
        return self.connection.wait(timeout) if self.connection is not None else True

    def train(
        self, steps: int = 20, *, every: int = 1, title: str = "", pace: float = 0.0
    ) -> LiveRun:
        """Run ``steps`` training steps of the explored function in a live view.

        The function is called as ``fn(*state, batch) -> (*new_state, loss)`` (e.g.
        ``train_step(params, batch) -> (params, loss)``), its last argument being the batch,
        on the arguments placed as the controls currently say. Returns at once; the returned
        run displays as the live view (loss, step time, memory per device). ``pace`` waits
        that many seconds before each step after the first, for teaching: small steps end in
        a blink, paced ones can be watched (the wait is not counted in the step times).

        Raises:
            TypeError: the explorer shows a report, not a function.
            ValueError: ``pace`` is negative.
            SpecError, MeshError: a box of the controls is invalid (the message names it).
            CompileError: the program was compiled for devices that are not here (a
                deviceless topology): there is nothing to train on.
        """
        if self.schedule_pane is not None:
            raise TypeError(
                "train() runs a function's steps; a pipeline explorer compares the model's "
                "strategies, each already run by shardviz.compare"
            )
        if self.session is None or self.controls is None:
            raise TypeError(
                "train() needs a function to run: build the explorer with "
                "shardviz.Explorer(train_step, *args)"
            )
        if pace < 0:
            raise ValueError(f"pace={pace}: give the seconds to wait between steps, 0 or more")
        if self.report.deviceless:
            raise CompileError(
                problem(
                    "Explorer.train",
                    f"the program is {status_line(self.report)}: its devices are not here",
                    "train on devices this machine has (fake CPU devices, or the real TPU/GPU), "
                    "or keep exploring the compiled program without running it",
                )
            )
        config = self.controls.config
        if config is None:  # a box is wrong: say which, rather than run something else
            raise self.controls.invalid_error("Explorer.train")
        placed = self.session.build(config)
        if len(placed) < 2:
            raise TypeError(
                "train() runs fn(*state, batch): the explored function needs at least two "
                "arguments, the state and the batch"
            )
        state = placed[0] if len(placed) == 2 else tuple(placed[:-1])
        name = getattr(self.session.fn, "__name__", "step")
        with self.session.context(config):  # live carries the context mesh to its thread
            batch = _paced(placed[-1], pace) if pace else placed[-1]
            return live(self.session.fn, state, batch, steps=steps, every=every,
                        title=title or f"training {name}")  # fmt: skip

    def static_html(self, *, wait: bool = True) -> str:
        """The static view; for a pipeline explorer the Schedule pane comes first."""
        pane = self.schedule_pane
        shown = super().static_html(wait=wait)
        return pane.value + shown if pane is not None else shown

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        """With controls: the controls above the panes; always a static ``text/html`` too."""
        if self._box is None:
            return super()._repr_mimebundle_(**kwargs)
        static = self.static_html(wait=False)  # never wait on the findings' compiles
        return with_static_html(self._box._repr_mimebundle_(**kwargs), static)


def _paced(batch: Any, pace: float) -> Callable[[int], Any]:
    """The batch for every step, handed over ``pace`` seconds late after the first step (the
    live run fetches a batch outside the time it measures, so step times stay true)."""

    def batch_for(i: int) -> Any:
        if i:
            time.sleep(pace)
        return batch

    return batch_for


# traitlets gives the class a ``__new__(*args, **kwargs)``, which ``inspect.signature`` (and the
# docs) would show instead of the constructor's own parameters.
setattr(  # noqa: B010 (a class attribute the type checker does not know)
    Explorer,
    "__signature__",
    inspect.Signature(list(inspect.signature(Explorer.__init__).parameters.values())[1:]),
)
