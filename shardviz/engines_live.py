"""The live training view of a multi-process program: steps run in every engine of a cluster,
the view (here, in the notebook's kernel) shows each host's step time and memory.

In a multi-process program every process must run the same steps (each one a collective), so
:class:`ClusterLiveRun` asks every engine for the same steps in rounds: each engine runs them
with its own :class:`~shardviz.widgets.live.stepper.Stepper` on the variables a ``%%px`` cell
made there, and answers with its losses, its own step times and its devices' memory. A round
grows while steps are fast (a round trip per step would be most of the time) and shrinks when
slow, so the view moves about every :data:`ROUND_SECONDS`.

The functions named ``engine_*`` run in the engines (ipyparallel sends them by reference: the
engines import this module); the state stays there and is written back to the same names
when the run ends.
"""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING, Any

import jax

from shardviz.errors import ProcessError, problem
from shardviz.widgets.live.memory import Json
from shardviz.widgets.live.run import LiveRunBase
from shardviz.widgets.live.stepper import Stepper
from shardviz.widgets.live.steps import BatchesExhausted, check_live_args
from shardviz.widgets.live.widget import LiveWidget

if TYPE_CHECKING:
    from shardviz.engines import Cluster

#: A round of steps aims to take about this long (seconds): the view's update interval.
ROUND_SECONDS = 0.25
#: At most this many steps in one round (so Stop is never far away).
MAX_ROUND = 64

#: The steppers of the live runs in this process (an engine), by run id.
_RUNS: dict[str, Stepper] = {}

#: ``state`` as :meth:`Cluster.live` takes it: one variable name, or a tuple of names.
StateNames = str | tuple[str, ...]


def _namespace() -> dict[str, Any]:
    """The engine's user namespace, where ``%%px`` cells define their variables."""
    try:
        from IPython import get_ipython

        shell = get_ipython()
    except ImportError:  # pragma: no cover - engines run IPython
        shell = None
    if shell is not None:
        return shell.user_ns
    import __main__

    return vars(__main__)


def _lookup(namespace: dict[str, Any], name: str, what: str) -> Any:
    """``name``'s value: a variable, or a dotted path from one (``mlp.train_step``)."""
    first, *attrs = name.split(".")
    if first not in namespace:
        raise NameError(
            f"there is no variable {first!r} ({what}) in this process: define it in a %%px cell "
            "first, so that every process has it"
        )
    value = namespace[first]
    for i, attr in enumerate(attrs):
        if not hasattr(value, attr):
            got = ".".join([first, *attrs[:i]])
            raise NameError(f"{got} has no attribute {attr!r} ({what} {name!r}) in this process")
        value = getattr(value, attr)
    return value


def engine_start(
    run_id: str, step: str, state: StateNames, batches: str, steps: int | None, every: int
) -> None:
    """In an engine: look the step, state and batches up by name, and make the run's stepper."""
    namespace = _namespace()
    step_fn = _lookup(namespace, step, "the step function")
    if isinstance(state, tuple):
        args: Any = tuple(_lookup(namespace, n, "a state argument") for n in state)
    else:
        args = _lookup(namespace, state, "the state")
    data = _lookup(namespace, batches, "the batches")
    check_live_args(step_fn, data, steps, every)
    _RUNS[run_id] = Stepper(step_fn, args, data)


def engine_round(run_id: str, start: int, count: int) -> dict[str, Any]:
    """In an engine: run steps ``start .. start + count - 1``; return what the view needs.

    ``{"process", "losses", "step_ms", "exhausted", "memory", "source", "note"}``: the memory
    is measured after the first step (with its note), then read again each round when it
    comes from the devices' statistics (else ``None``).
    """
    stepper = _RUNS[run_id]
    losses: list[float] = []
    step_ms: list[float] = []
    exhausted = False
    for i in range(start, start + count):
        try:
            loss, ms = stepper.step(i)
        except BatchesExhausted:
            exhausted = True
            break
        losses.append(loss)
        step_ms.append(ms)
    memory: list[Json] | None
    note = None
    if start == 0 and losses:
        memory, note = stepper.measure_memory()
    else:
        memory = stepper.live_memory()
    return {
        "process": jax.process_index(),
        "losses": losses,
        "step_ms": step_ms,
        "exhausted": exhausted,
        "memory": memory,
        "source": stepper.memory_source,
        "note": note,
    }


def engine_finish(run_id: str, state: StateNames) -> None:
    """In an engine: put the run's latest state back under the names it came from."""
    stepper = _RUNS.pop(run_id, None)
    if stepper is None:
        return
    namespace = _namespace()
    if isinstance(state, tuple):
        namespace.update(zip(state, stepper.state, strict=True))
    else:
        namespace[state] = stepper.state


def next_round(count: int, seconds: float, every: int) -> int:
    """How many steps the next round runs: doubled while a round takes under half of
    :data:`ROUND_SECONDS`, halved when one takes over four times it, never under ``every``
    (the view is updated after every ``every`` steps at most) nor over :data:`MAX_ROUND`."""
    if seconds < ROUND_SECONDS / 2:
        count *= 2
    elif seconds > ROUND_SECONDS * 4:
        count //= 2
    return max(every, 1, min(MAX_ROUND, count))


def merge_round(rows: list[dict[str, Any]]) -> tuple[list[float], list[float], dict[int, list]]:
    """Every process's answer to one round -> the losses (process 0's: the loss is one global
    value), each step's time (the slowest process's: the step ends when it does) and each
    process's own times.

    Raises:
        ProcessError: the processes ran different numbers of steps (their batches ran out at
            different steps), which a multi-process program cannot do.
    """
    rows = sorted(rows, key=lambda r: r["process"])
    counts = {r["process"]: len(r["losses"]) for r in rows}
    if len(set(counts.values())) > 1:
        each = ", ".join(f"process {p}: {n}" for p, n in counts.items())
        raise ProcessError(
            problem(
                "Cluster.live",
                f"the processes ran different numbers of steps in one round ({each}): their "
                "batches ran out at different steps",
                "give every process the same number of batches (or pass steps=N)",
            )
        )
    hosts = {int(r["process"]): list(r["step_ms"]) for r in rows}
    slowest = [max(times) for times in zip(*hosts.values(), strict=True)]
    return list(rows[0]["losses"]), slowest, hosts


class ClusterLiveRun(LiveRunBase):
    """Training steps run in every process of a :class:`~shardviz.engines.Cluster`, drawn live
    in :attr:`view` here (see :meth:`shardviz.engines.Cluster.live`).

    Besides a :class:`~shardviz.widgets.live.run.LiveRun`'s figures: :attr:`host_step_ms`
    (each process's own step times); the view's memory has every process's devices. The state
    stays in the engines, under the names given (updated when the run ends).
    """

    def __init__(
        self,
        cluster: Cluster,
        step: str,
        state: StateNames,
        batches: str,
        *,
        steps: int | None,
        every: int,
        view: LiveWidget,
    ) -> None:
        super().__init__(steps=steps, every=every, view=view)
        self._cluster = cluster
        self._id = uuid.uuid4().hex
        self._state_names = state
        self._live_memory: list[Json] | None = None
        # Here, not in the thread: a wrong name or argument raises at once, naming the process.
        cluster.run(engine_start, self._id, step, state, batches, steps, every)

    @property
    def state(self) -> StateNames:
        """The names of the state in the engines (the values live there, not here)."""
        return self._state_names

    @property
    def thread(self) -> Any:
        """The run's thread (the only one that may use the cluster while the run goes)."""
        return self._thread

    def _loop(self) -> str:
        i, count = 0, 1  # the first round is the compile step alone
        while self._steps is None or i < self._steps:
            if self._stop.is_set():
                return "stopped"
            n = count if self._steps is None else min(count, self._steps - i)
            t0 = time.monotonic()
            rows = self._cluster.run(engine_round, self._id, i, n)
            seconds = time.monotonic() - t0
            losses, step_ms, hosts = merge_round(rows)
            self._record(losses, step_ms, hosts)
            self._memory(rows, first=i == 0)
            i += len(losses)
            self._sync()
            if any(r["exhausted"] for r in rows):
                return "done"
            count = next_round(count, seconds, self._every)
        return "done"

    def _memory(self, rows: list[dict[str, Any]], *, first: bool) -> None:
        """Every process's devices in one list (by device id); after the first round with
        process 0's note on what the figures are."""
        rows = sorted(rows, key=lambda r: r["process"])
        known = all(r["memory"] is not None for r in rows)
        entries = sorted((e for r in rows for e in r["memory"] or ()), key=lambda e: e["device"])
        if first:
            self._show_memory(entries if known else [], rows[0]["source"] if known else "",
                              rows[0]["note"] or "")  # fmt: skip
            self._running()
        else:
            self._live_memory = entries if known else None

    def _memory_now(self) -> list[Json] | None:
        entries, self._live_memory = self._live_memory, None
        return entries

    def _finish(self) -> None:
        if self._cluster.alive:
            self._cluster.run(engine_finish, self._id, self._state_names)
