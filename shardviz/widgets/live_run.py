"""The live training run: a daemon thread that runs the steps and writes them into a view.

:class:`LiveRun` follows the step-function convention of :mod:`shardviz.widgets.live_steps`,
calls the step through :mod:`shardviz.capture.train_step` (jitted, blocked on, so each step
time is the real one), reads device memory through :mod:`shardviz.capture.device_memory`,
and pushes losses, times and memory to its view in small batches (at most every
:data:`SYNC_SECONDS`), so a thousand fast steps do not flood the comm.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from shardviz.capture.calls import context_mesh, copy_arrays, donated_positions, in_mesh
from shardviz.capture.device_memory import (
    compiler_memory_bytes,
    devices_memory_stats,
    program_devices_by_id,
)
from shardviz.capture.train_step import (
    abstract_arrays,
    call_blocking,
    compile_step,
    jitted_step,
)

from .live_format import format_loss, json_loss, median_step_ms, progress_text
from .live_memory import DEVICE_NOTE, device_memory, estimated_memory
from .live_steps import BatchesExhausted, batch_source, split_output

if TYPE_CHECKING:
    from .live import LiveView

#: The view is updated at most this often (seconds), however fast the steps are.
SYNC_SECONDS = 0.1
#: An error shown in the view is cut to this many characters (the full one is ``run.exception``).
MAX_ERROR_CHARS = 4000


class LiveRun:
    """Training steps running in a daemon thread, drawn live in :attr:`view`.

    Made by :func:`shardviz.live`, which gives it a fresh
    :class:`~shardviz.widgets.live.LiveView` to write to. Showing it in a notebook shows its
    view.
    """

    def __init__(
        self,
        step_fn: Callable[..., Any],
        state: Any,
        batches: Any,
        *,
        steps: int | None,
        every: int,
        view: LiveView,
    ) -> None:
        self._tuple_state = type(state) is tuple
        self._state_args: tuple = state if self._tuple_state else (state,)
        self._jitted = jitted_step(step_fn)
        n_args = len(self._state_args) + 1
        self._donated = donated_positions(self._jitted, n_args)
        # A donating step deletes its inputs: the caller's state is copied once (the steps
        # then thread their own outputs), and a donated batch is copied every step (one batch
        # may be reused, and a buffer donated twice crashes the process).
        self._state_args = tuple(
            copy_arrays(x) if i in self._donated else x for i, x in enumerate(self._state_args)
        )
        self._copy_batch = n_args - 1 in self._donated
        self._next_batch = batch_source(batches)
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
        self._devices: list[Any] = []
        self._memory_source = ""
        self.exception: BaseException | None = None
        self.view = view
        self.view.observe(self._on_stop_button, names="stop_requested")
        self._thread = threading.Thread(target=self._run, name="shardviz-live", daemon=True)

    # -- public -------------------------------------------------------------------------------

    @property
    def state(self) -> Any:
        """The latest state, in the form given to :func:`shardviz.live` (a tuple or one item)."""
        args = self._state_args
        return args if self._tuple_state else args[0]

    @property
    def losses(self) -> list[float]:
        """The loss of every finished step (floats; NaN stays NaN here)."""
        with self._lock:
            return list(self._losses)

    @property
    def step_ms(self) -> list[float]:
        """The wall time of every finished step, in ms; the first includes compiling."""
        with self._lock:
            return list(self._step_ms)

    @property
    def median_step_ms(self) -> float | None:
        """Median step time without the compile step; ``None`` before two steps."""
        return median_step_ms(self.step_ms)

    @property
    def status(self) -> str:
        """One of :data:`shardviz.widgets.live.STATUSES` (the view's)."""
        return self.view.status

    @property
    def error(self) -> str:
        """The error message shown in the view, or ""."""
        return self.view.error

    @property
    def running(self) -> bool:
        """Whether the thread is still going."""
        return self._thread.is_alive()

    def wait(self, timeout: float | None = None) -> LiveRun:
        """Block until the run ends (or ``timeout`` seconds pass); returns the run.

        Errors in a step do not raise here: see :attr:`status`, :attr:`error`, :attr:`exception`.
        """
        self._thread.join(timeout)
        return self

    def stop(self) -> LiveRun:
        """Ask the run to stop after its current step; returns at once (``.wait()`` to join)."""
        self._stop.set()
        with self._status_lock:
            if not self._finished and self.view.status in ("compiling", "running"):
                self.view.status = "stopping"
        return self

    def save_html(self, path: str | Path) -> str:
        """Write the view's current state as a self-contained offline HTML file."""
        return self.view.save_html(path)

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.view._repr_mimebundle_(**kwargs)

    def __repr__(self) -> str:
        losses = self.losses
        last = f", loss {format_loss(losses[-1])}" if losses else ""
        return f"<LiveRun {self.status}, {progress_text(len(losses), self.view.total_steps)}{last}>"

    # -- the thread ---------------------------------------------------------------------------

    def start(self) -> LiveRun:
        """Start the thread (once); :func:`shardviz.live` does this."""
        self.view.status = "compiling"
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
            with self._status_lock:
                self._finished = True
                self.view.status = outcome

    def _loop(self) -> str:
        """Run the steps; returns ``"done"`` or ``"stopped"``."""
        last_sync, pending = -math.inf, 0
        i = 0
        while self._steps is None or i < self._steps:
            if self._stop.is_set():
                return "stopped"
            try:
                batch = self._next_batch(i)
            except BatchesExhausted:
                return "done"
            self._step(i, batch)
            i += 1
            pending += 1
            now = time.monotonic()
            if pending >= self._every and now - last_sync >= self._sync_seconds:
                self._sync()
                last_sync, pending = now, 0
        return "done"

    def _step(self, i: int, batch: Any) -> None:
        """One step: call, block, time; keep the new state, loss and time."""
        if self._copy_batch:
            batch = copy_arrays(batch)
        args = (*self._state_args, batch)
        specs = abstract_arrays(args) if i == 0 else None
        t0 = time.perf_counter()
        out = call_blocking(self._jitted, args)
        ms = (time.perf_counter() - t0) * 1e3
        new_state, loss = split_output(out, len(self._state_args))
        self._state_args = new_state
        with self._lock:
            self._losses.append(loss)
            self._step_ms.append(ms)
        if specs is not None:
            self._measure_memory(specs)
            with self._status_lock:
                if not self._stop.is_set():
                    self.view.status = "running"

    def _measure_memory(self, specs: tuple) -> None:
        """After the first step: which devices, and their memory (device stats or estimate)."""
        try:
            compiled = compile_step(self._jitted, specs)
            self._devices = program_devices_by_id(compiled)
            stats = devices_memory_stats(self._devices)
            if self._devices and all(stats):
                self._memory_source = "device"
                entries, note = device_memory(self._devices, [s or {} for s in stats]), DEVICE_NOTE
            else:
                analysis = compiler_memory_bytes(compiled)
                self._memory_source = "estimate"
                entries, note = estimated_memory(self._devices, analysis)
        except Exception as err:  # memory is extra: never fail the run for it
            self._memory_source = ""
            entries, note = [], f"memory not available ({type(err).__name__}: {err})"[:300]
        with self.view.hold_sync():
            self.view.memory = entries
            self.view.memory_source = self._memory_source
            self.view.memory_note = note

    def _sync(self) -> None:
        """Push the losses, times and (live) device memory to the view in one message."""
        with self._lock:
            losses = [json_loss(v) for v in self._losses]
            step_ms = list(self._step_ms)
        memory = None
        if self._memory_source == "device":
            stats = devices_memory_stats(self._devices)
            if all(stats):
                memory = device_memory(self._devices, [s or {} for s in stats])
        with self.view.hold_sync():
            self.view.losses = losses
            self.view.step_ms = step_ms
            self.view.step = len(step_ms)
            if memory is not None:
                self.view.memory = memory


def _error_text(step: int, err: BaseException) -> str:
    """The view's line on a failed step, cut to :data:`MAX_ERROR_CHARS`."""
    text = f"step {step} failed: {type(err).__name__}: {err}"
    if len(text) > MAX_ERROR_CHARS:
        text = text[: MAX_ERROR_CHARS - 1] + "…"
    return text
