"""The steps of a live run, without a view: state, batches, donation, timing and memory.

A :class:`Stepper` runs ``step_fn(*state, batch) -> (*new_state, loss)`` one step at a time
(jitted, blocked on, so each time is the real one) and reads the memory of the program's
devices. :class:`~shardviz.widgets.live.run.LiveRun` drives one in its thread; in a
multi-process program every process drives its own (:mod:`shardviz.engines_live`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from shardviz.capture.calls import copy_arrays, donated_positions
from shardviz.capture.device_memory import (
    compiler_memory_bytes,
    devices_memory_stats,
    program_devices_by_id,
)
from shardviz.capture.processes import is_multi_process, own_devices
from shardviz.capture.train_step import abstract_arrays, call_blocking, compile_step, jitted_step
from shardviz.widgets.live.memory import DEVICE_NOTE, Json, device_memory, estimated_memory
from shardviz.widgets.live.steps import batch_source, split_output


class Stepper:
    """One training loop's state and its next step (see :mod:`shardviz.widgets.live.widget`).

    Args:
        step_fn: ``step_fn(*state, batch) -> (*new_state, loss)``; jitted unless it is already.
        state: the arguments before the batch: a plain ``tuple`` for several, else one.
        batches: one batch, an iterator of batches or a callable ``step index -> batch``.
    """

    def __init__(self, step_fn: Callable[..., Any], state: Any, batches: Any) -> None:
        self._tuple_state = type(state) is tuple
        args: tuple = state if self._tuple_state else (state,)
        self._jitted = jitted_step(step_fn)
        n_args = len(args) + 1
        donated = donated_positions(self._jitted, n_args)
        # A donating step deletes its inputs: the caller's state is copied once (the steps
        # then thread their own outputs), and a donated batch is copied every step (one batch
        # may be reused, and a buffer donated twice crashes the process).
        self._args = tuple(copy_arrays(x) if i in donated else x for i, x in enumerate(args))
        self._copy_batch = n_args - 1 in donated
        self._next_batch = batch_source(batches)
        self._specs: tuple | None = None
        self._devices: list[Any] = []
        #: Where the memory comes from: ``"device"``, ``"estimate"`` or "" (not measured).
        self.memory_source = ""

    @property
    def state(self) -> Any:
        """The latest state, in the form given (a tuple or one item)."""
        return self._args if self._tuple_state else self._args[0]

    def step(self, i: int) -> tuple[float, float]:
        """Run step ``i`` (0-based) and keep its new state; returns ``(loss, ms)``.

        Raises:
            BatchesExhausted: the batches ran out (the loop is done).
        """
        batch = self._next_batch(i)  # fetched outside the time measured
        if self._copy_batch:
            batch = copy_arrays(batch)
        args = (*self._args, batch)
        if self._specs is None:
            self._specs = abstract_arrays(args)
        t0 = time.perf_counter()
        out = call_blocking(self._jitted, args)
        ms = (time.perf_counter() - t0) * 1e3
        self._args, loss = split_output(out, len(self._args))
        return loss, ms

    def measure_memory(self) -> tuple[list[Json], str]:
        """After the first step: the program's devices and their memory, with a note on what
        the figures are (the devices' own statistics, else the compiler's estimate).

        Never raises: memory is extra, so a failure is the note and no entries.
        """
        try:
            if self._specs is None:
                raise RuntimeError("no step has run yet")
            compiled = compile_step(self._jitted, self._specs)
            # A process reads its own devices only (another host's are not addressable).
            self._devices = own_devices(program_devices_by_id(compiled))
            stats = devices_memory_stats(self._devices)
            if self._devices and all(stats):
                self.memory_source = "device"
                entries = device_memory(self._devices, [s or {} for s in stats])
                return _tagged(entries, self._devices), DEVICE_NOTE
            self.memory_source = "estimate"
            entries, note = estimated_memory(self._devices, compiler_memory_bytes(compiled))
            return _tagged(entries, self._devices), note
        except Exception as err:  # memory is extra: never fail the run for it
            self.memory_source = ""
            return [], f"memory not available ({type(err).__name__}: {err})"[:300]

    def live_memory(self) -> list[Json] | None:
        """The devices' memory now, when it comes from their statistics (else ``None``: an
        estimate does not change between steps)."""
        if self.memory_source != "device":
            return None
        stats = devices_memory_stats(self._devices)
        if not all(stats):
            return None
        return _tagged(device_memory(self._devices, [s or {} for s in stats]), self._devices)


def _tagged(entries: list[Json], devices: list[Any]) -> list[Json]:
    """In a multi-process program, each entry says its device's process (the view labels
    bars ``p1 d5``); in one process the entries stay as they are."""
    if not is_multi_process():
        return entries
    return [{**e, "process": int(d.process_index)} for e, d in zip(entries, devices, strict=True)]
