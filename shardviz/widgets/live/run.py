"""The live training run: a daemon thread that runs the steps and writes them into a view.

:class:`LiveRunBase` is the thread and its view: status, Stop, the losses and step times,
pushed to the view in small batches (at most every :data:`SYNC_SECONDS`), so a thousand fast
steps do not flood the comm. :class:`LiveRun` runs the steps in this process through a
:class:`~shardviz.widgets.live.stepper.Stepper`; :mod:`shardviz.engines_live` runs them in
every process of a cluster and also keeps each host's step times.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from shardviz.capture.calls import context_mesh, in_mesh
from shardviz.explainer.background import own
from shardviz.model.units import format_loss
from shardviz.render.live.format import json_loss, median_step_ms, progress_text
from shardviz.widgets.live.memory import Json
from shardviz.widgets.live.stepper import Stepper
from shardviz.widgets.live.steps import BatchesExhausted

if TYPE_CHECKING:
    from shardviz.widgets.live.widget import LiveWidget

#: The view is updated at most this often (seconds), however fast the steps are.
SYNC_SECONDS = 0.1
#: An error shown in the view is cut to this many characters (the full one is ``run.exception``).
MAX_ERROR_CHARS = 4000


class LiveRunBase:
    """A daemon thread that runs training steps and draws them live in :attr:`view`.

    Subclasses say how steps run (:meth:`_loop`, which calls :meth:`_record`) and where the
    state is; this class keeps the figures, the status and the Stop button. Showing a run in
    a notebook shows its view.
    """

    def __init__(self, *, steps: int | None, every: int, view: LiveWidget) -> None:
        self._steps = steps
        self._every = every
        self._sync_seconds = SYNC_SECONDS
        self._mesh = context_mesh()  # jax's mesh context is per thread: carry it over
        self._lock = threading.Lock()
        self._status_lock = threading.Lock()
        self._finished = False
        self._stop = threading.Event()
        self._losses: list[float] = []
        self._step_ms: list[float] = []
        self._host_ms: dict[int, list[float]] = {}
        self.exception: BaseException | None = None
        self.view = view
        self.view.observe(self._on_stop_button, names="stop_requested")
        self._thread = threading.Thread(target=self._run, name="shardviz-live", daemon=True)

    # -- public -------------------------------------------------------------------------------

    @property
    def losses(self) -> list[float]:
        """The loss of every finished step (floats; NaN stays NaN here)."""
        with self._lock:
            return list(self._losses)

    @property
    def step_ms(self) -> list[float]:
        """The wall time of every finished step, in ms; the first includes compiling. With
        several processes, the slowest process's time (the step ends when it does)."""
        with self._lock:
            return list(self._step_ms)

    @property
    def host_step_ms(self) -> dict[int, list[float]]:
        """Each process's own step times (ms) by process index; empty for one process."""
        with self._lock:
            return {p: list(ms) for p, ms in self._host_ms.items()}

    @property
    def median_step_ms(self) -> float | None:
        """Median step time without the compile step; ``None`` before two steps."""
        return median_step_ms(self.step_ms)

    @property
    def status(self) -> str:
        """One of :data:`shardviz.widgets.live.widget.STATUSES` (the view's)."""
        return self.view.status

    @property
    def error(self) -> str:
        """The error message shown in the view, or ""."""
        return self.view.error

    @property
    def running(self) -> bool:
        """Whether the thread is still going."""
        return self._thread.is_alive()

    def wait(self, timeout: float | None = None) -> Self:
        """Block until the run ends (or ``timeout`` seconds pass); returns the run.

        Errors in a step do not raise here: see :attr:`status`, :attr:`error`, :attr:`exception`.
        """
        self._thread.join(timeout)
        return self

    def stop(self) -> Self:
        """Ask the run to stop after its current step; returns at once (``.wait()`` to join)."""
        self._stop.set()
        with self._status_lock:
            if not self._finished and self.view.status in ("compiling", "running"):
                self.view.status = "stopping"
        return self

    def close(self, timeout: float | None = None) -> bool:
        """Stop the run and wait for its thread; False if it still runs after ``timeout``
        seconds (what happens before the interpreter exits)."""
        self.stop()
        if self._thread.ident is not None:
            self._thread.join(timeout)
        return not self._thread.is_alive()

    def save_html(self, path: str | Path) -> str:
        """Write the view's current state as a self-contained offline HTML file, whole or
        not at all (see :meth:`LiveWidget.save_html`); return the path."""
        return self.view.save_html(path)

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.view._repr_mimebundle_(**kwargs)

    def __repr__(self) -> str:
        losses = self.losses
        last = f", loss {format_loss(losses[-1])}" if losses else ""
        name = type(self).__name__
        return f"<{name} {self.status}, {progress_text(len(losses), self.view.total_steps)}{last}>"

    # -- the thread ---------------------------------------------------------------------------

    def start(self) -> Self:
        """Start the thread (once); :func:`shardviz.live` does this."""
        self.view.status = "compiling"
        own(self)
        self._thread.start()
        return self

    def _on_stop_button(self, change: dict[str, Any]) -> None:
        if change["new"]:
            self.stop()

    def _run(self) -> None:
        """The thread: run the steps; whatever happens, end with a final sync and a status."""
        outcome = "done"
        try:
            if self._mesh is None:
                outcome = self._loop()
            else:
                with in_mesh(self._mesh):
                    outcome = self._loop()
        except Exception as err:  # the user's code: show it in the view, keep the kernel alive
            outcome = "error"
            self.exception = err
            self.view.error = _error_text(len(self._step_ms) + 1, err)
        finally:
            with contextlib.suppress(Exception):  # the view may be gone; the lists keep it all
                self._sync()
            with contextlib.suppress(Exception):  # ending is best effort too
                self._finish()
            with self._status_lock:
                self._finished = True
                self.view.status = outcome

    def _loop(self) -> str:
        """Run the steps (calling :meth:`_record`); return ``"done"`` or ``"stopped"``."""
        raise NotImplementedError

    def _finish(self) -> None:
        """Called once the steps are over, however they ended (nothing to do here)."""

    def _memory_now(self) -> list[Json] | None:
        """The devices' memory now, if it changes between steps; else ``None``."""
        return None

    def _record(
        self,
        losses: list[float],
        step_ms: list[float],
        host_ms: dict[int, list[float]] | None = None,
    ) -> None:
        """Keep finished steps: their losses and times (and each host's times)."""
        with self._lock:
            self._losses.extend(losses)
            self._step_ms.extend(step_ms)
            for process, ms in (host_ms or {}).items():
                self._host_ms.setdefault(process, []).extend(ms)

    def _running(self) -> None:
        """The first step is over: from compiling to running (unless a stop came first)."""
        with self._status_lock:
            if not self._stop.is_set():
                self.view.status = "running"

    def _show_memory(self, entries: list[Json], source: str, note: str) -> None:
        with self.view.hold_sync():
            self.view.memory = entries
            self.view.memory_source = source
            self.view.memory_note = note

    def _sync(self) -> None:
        """Push the losses, times and (live) device memory to the view in one message."""
        with self._lock:
            losses = [json_loss(v) for v in self._losses]
            step_ms = list(self._step_ms)
            hosts = [{"process": p, "step_ms": list(ms)} for p, ms in sorted(self._host_ms.items())]
        memory = self._memory_now()
        with self.view.hold_sync():
            self.view.losses = losses
            self.view.step_ms = step_ms
            if hosts:
                self.view.host_step_ms = hosts
            self.view.step = len(step_ms)
            if memory is not None:
                self.view.memory = memory


class LiveRun(LiveRunBase):
    """Training steps running in a daemon thread of this process, drawn live in :attr:`view`.

    Made by :func:`shardviz.live`, which gives it a fresh
    :class:`~shardviz.widgets.live.widget.LiveWidget` to write to.
    """

    def __init__(
        self,
        step_fn: Callable[..., Any],
        state: Any,
        batches: Any,
        *,
        steps: int | None,
        every: int,
        view: LiveWidget,
    ) -> None:
        self._stepper = Stepper(step_fn, state, batches)
        super().__init__(steps=steps, every=every, view=view)

    @property
    def state(self) -> Any:
        """The latest state, in the form given to :func:`shardviz.live` (a tuple or one item)."""
        return self._stepper.state

    def _loop(self) -> str:
        """Run the steps; returns ``"done"`` or ``"stopped"``."""
        last_sync, pending = -math.inf, 0
        i = 0
        while self._steps is None or i < self._steps:
            if self._stop.is_set():
                return "stopped"
            try:
                loss, ms = self._stepper.step(i)
            except BatchesExhausted:
                return "done"
            self._record([loss], [ms])
            if i == 0:
                entries, note = self._stepper.measure_memory()
                self._show_memory(entries, self._stepper.memory_source, note)
                self._running()
            i += 1
            pending += 1
            now = time.monotonic()
            if pending >= self._every and now - last_sync >= self._sync_seconds:
                self._sync()
                last_sync, pending = now, 0
        return "done"

    def _memory_now(self) -> list[Json] | None:
        return self._stepper.live_memory()


def _error_text(step: int, err: BaseException) -> str:
    """The view's line on a failed step, cut to :data:`MAX_ERROR_CHARS`."""
    text = f"step {step} failed: {type(err).__name__}: {err}"
    if len(text) > MAX_ERROR_CHARS:
        text = text[: MAX_ERROR_CHARS - 1] + "…"
    return text
