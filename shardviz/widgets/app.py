"""``shardviz.Explorer``: the explorer view, plus controls and live training for a function.

``Explorer(report)`` and ``Explorer(comparison)`` show what was captured. ``Explorer(fn, *args)``
explains ``fn`` on its (sharded) arguments first, then shows the controls above the panes:
changing the mesh, the axis names, the strategy or a spec recompiles and reruns in the
background (newest request wins, errors inline), and :meth:`Explorer.train` runs training
steps in a live view.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import ipywidgets

from shardviz.errors import CompileError, problem
from shardviz.model import Comparison, Report
from shardviz.render.report_facts import status_line
from shardviz.widgets.explorer import ExplorerView
from shardviz.widgets.live import LiveRun, live
from shardviz.widgets.session import Connection, ExplorerSession, connect
from shardviz.widgets.static_bundle import with_static_html


class Explorer(ExplorerView):
    """Linked panes (mesh, arrays, collectives, memory) for a report, a comparison or a function.

    Args:
        shown: a :class:`~shardviz.model.Report`, a :class:`~shardviz.model.Comparison`, or a
            function to explain on ``args`` (plain or jitted).
        *args: the function's arguments (arrays placed with shardings; pytrees allowed).
        steps: steps each (re)run times, for a function.
        target: hardware to estimate on, for a function (see :func:`shardviz.explain`):
            e.g. ``"v5e"`` on fake CPU devices; a topology's devices are their own target.
        **kwargs: initial selections (``selected_array``, ``selected_device``, ...).

    Raises:
        TypeError: ``shown`` is neither a Report, a Comparison nor callable, or a report was
            given with arguments.
        ShardvizError: the function failed to compile or run with its arguments.
    """

    def __init__(
        self, shown: Any, *args: Any, steps: int = 2, target: Any = None, **kwargs: Any
    ) -> None:
        self.session: ExplorerSession | None = None
        self.controls: Any = None
        self.connection: Connection | None = None
        self._box: ipywidgets.Widget | None = None
        if isinstance(shown, Report | Comparison):
            if args:
                raise TypeError(
                    "Explorer(report) and Explorer(comparison) take no arguments; to explore "
                    "a function pass it first: Explorer(fn, *args)"
                )
            super().__init__(shown, **kwargs)
            return
        if not callable(shown):
            raise TypeError(
                f"Explorer takes a Report, a Comparison or a function and its arguments, got "
                f"{type(shown).__name__}; e.g. shardviz.Explorer(train_step, params, batch)"
            )
        session = ExplorerSession(shown, *args, steps=steps, target=target)
        super().__init__(session.run(session.initial_config()), **kwargs)
        self.session = session
        self.controls = session.controls()
        self.connection = connect(self, self.controls, session, run_now=False)
        self._box = ipywidgets.VBox([self.controls, self])

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
