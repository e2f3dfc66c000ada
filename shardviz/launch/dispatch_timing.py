"""Measure what dispatching a step costs, with many controllers and with one.

The same processes of a notebook cluster (:func:`shardviz.cluster`: jax processes joined by
``jax.distributed``) run one step program four ways (see :mod:`shardviz.model.dispatch`):

- **multi-controller**: every process runs the loop itself (:func:`engine_loop`, sent once to
  every process), as a ``jax.distributed`` program does; synchronous waits for each step's
  result before dispatching the next, pipelined queues them all and waits for the last;
- **single controller**: this client sends every step to every process (:func:`engine_step`,
  one message per process per step), as a Pathways client does; synchronous waits for every
  process's answer before sending the next step, pipelined sends all of them ahead and waits
  once at the end.

The step program multiplies activations split over every device of every process, optionally
holds each device for a while (:attr:`~shardviz.model.dispatch.StepProgram.wait`), then takes
off their mean over all devices (an all-reduce that crosses processes, so the processes
advance in step, as a training step's gradient all-reduce makes them). Each process runs its
steps on one queue thread, in order (see :data:`_PROGRAM`). By default: a tiny step
(dispatching is nearly all there is) and one that holds each device 20 ms.

The functions named ``engine_*`` run in the engines (ipyparallel sends them by reference: the
engines import this module); the program and its state stay there.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

from shardviz.errors import ProcessError, problem
from shardviz.explainer.background import OwnedPool
from shardviz.model.dispatch import SHAPES, DispatchRun, DispatchTiming, StepProgram

#: A tiny step: 8 rows of 8 per device; dispatching it is all there is.
TINY = StepProgram(name="tiny", rows=8, width=8)
#: A longer step as an accelerator runs one: the device is busy 20 ms and the host's cores are
#: free meanwhile (a host callback that sleeps stands in for the kernels).
WAIT = StepProgram(name="20 ms on device", rows=8, width=8, wait=0.020)
#: A longer step that keeps the host's cores busy (fake CPU devices compute on them).
MATMUL = StepProgram(name="matmul", rows=512, width=1024)
#: What :func:`measure` runs by default: the tiny step and the one that leaves the host free.
PROGRAMS = (TINY, WAIT)
#: Steps per repeat, and repeats per shape (the figures are medians over the repeats).
STEPS = 20
REPEATS = 5
#: Seconds to wait for the processes to answer one shape's run.
TIMEOUT = 120.0

Clock = Callable[[], float]

#: The step program and its state in this process (an engine), set by :func:`engine_prepare`:
#: ``step``, ``x``, ``w``; ``queue``, one thread that runs the steps in the order they are
#: queued, and ``last``, the latest step's future. The queue is what a jax process on an
#: accelerator has in its device's stream: XLA:CPU runs a program with a host callback in the
#: thread that dispatches it, so without the queue "dispatching" the 20 ms step would take 20
#: ms and no host could send or receive anything meanwhile.
_PROGRAM: dict[str, Any] = {}


class Engines(Protocol):
    """What the measurement needs of a cluster (:class:`shardviz.engines.Cluster` has it)."""

    @property
    def processes(self) -> Sequence[Any]:
        """The processes, each with ``.engine``, its ipyparallel engine id."""
        ...

    @property
    def client(self) -> Any:
        """The ipyparallel client."""
        ...

    def run(self, fn: Any, *args: Any, **kwargs: Any) -> list[Any]: ...


def engine_prepare(rows: int, width: int, wait: float = 0.0, warmup: int = 3) -> int:
    """Build the step program on every device of the program (run in every process at once):
    activations ``[devices x rows, width]`` split by rows, a replicated ``width x width``
    weight; each device multiplies its rows, waits ``wait`` seconds in a host callback when
    asked (device time that leaves the host's cores free), then the mean over every device is
    taken off (an all-reduce across the processes). Compiles it and runs ``warmup`` steps.
    Returns the number of devices."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    devices = jax.devices()
    mesh = Mesh(np.array(devices), ("data",))
    split, whole = NamedSharding(mesh, P("data", None)), NamedSharding(mesh, P())
    shape = (len(devices) * rows, width)
    x0 = np.full(shape, 0.01, dtype=np.float32)
    w0 = (np.eye(width, dtype=np.float32) + 1 / width) / 2
    x = jax.make_array_from_callback(shape, split, lambda idx: x0[idx])
    w = jax.make_array_from_callback((width, width), whole, lambda idx: w0[idx])

    def held(y: Any) -> Any:  # runs on the host, per device, while the step holds its device
        time.sleep(wait)
        return y

    def step(x: Any, w: Any) -> Any:
        y = jnp.tanh(x @ w)
        if wait > 0:
            y = jax.pure_callback(held, jax.ShapeDtypeStruct(y.shape, y.dtype), y)
        return y - jax.lax.pmean(jnp.mean(y), "data") + 0.01

    program = jax.jit(
        jax.shard_map(step, mesh=mesh, in_specs=(P("data", None), P()), out_specs=P("data", None))
    )
    for _ in range(warmup):
        x = program(x, w)
    x.block_until_ready()
    old = _PROGRAM.get("queue")
    if old is not None:
        old.shutdown(wait=True)
    _PROGRAM.clear()
    _PROGRAM.update(step=program, x=x, w=w, queue=OwnedPool(1, "shardviz-dispatch"), last=None)
    return len(devices)


def _prepared() -> dict[str, Any]:
    if "step" not in _PROGRAM:
        raise RuntimeError("no step program in this process: run engine_prepare first")
    return _PROGRAM


def _advance() -> None:
    """One step, on the process's queue thread (its stand-in for a device's stream)."""
    p = _PROGRAM
    p["x"] = p["step"](p["x"], p["w"])


def engine_step(block: bool) -> None:
    """Queue one step in this process (see :data:`_PROGRAM`'s queue); with ``block``, return
    only when its result is ready."""
    p = _prepared()
    p["last"] = p["queue"].submit(_advance)
    if block:
        engine_block()


def engine_block() -> None:
    """Return when the latest step's result is ready (raising what the step raised)."""
    p = _prepared()
    if p["last"] is not None:
        p["last"].result()
    p["x"].block_until_ready()


def engine_loop(steps: int, block: bool, clock: Clock = time.perf_counter) -> float:
    """The multi-controller loop: ``steps`` steps dispatched by this process itself, waiting
    for each one (``block``) or only for the last; returns its seconds by ``clock``."""
    _prepared()
    start = clock()
    for _ in range(steps):
        engine_step(block)
    engine_block()
    return clock() - start


def _wait(pending: Any, what: str, timeout: float) -> Any:
    """An engine answer, or a ProcessError saying which dispatch failed."""
    try:
        return pending.get(timeout=timeout)
    except Exception as err:
        raise ProcessError(
            problem(
                "dispatch timing",
                f"the processes failed while {what}: {type(err).__name__}: {err}",
                "check that the cluster is alive (cluster.alive) and start a new one if not",
            )
        ) from err


def single_controller(
    view: Any, steps: int, pipelined: bool, *, clock: Clock = time.perf_counter,
    timeout: float = TIMEOUT,
) -> float:  # fmt: skip
    """This client dispatches ``steps`` steps to every process of ``view`` (an ipyparallel
    view on them): synchronous waits for all of a step's answers before sending the next;
    pipelined sends every step, then one last message that waits for the last step's result.
    Returns the seconds from the first send to the last answer, by ``clock``."""
    start = clock()
    if pipelined:
        sent = [view.apply_async(engine_step, False) for _ in range(steps)]
        _wait(view.apply_async(engine_block), "finishing pipelined steps", timeout)
        elapsed = clock() - start
        for ar in sent:  # answered already (each engine runs its messages in order)
            _wait(ar, "running a pipelined step", timeout)
        return elapsed
    for _ in range(steps):
        _wait(view.apply_async(engine_step, True), "running a synchronous step", timeout)
    return clock() - start


def multi_controller(cluster: Engines, steps: int, pipelined: bool) -> float:
    """Every process runs ``steps`` steps itself (:func:`engine_loop`); the slowest process's
    seconds (a program's step is its slowest process's)."""
    return max(cluster.run(engine_loop, steps, not pipelined))


def measure(
    cluster: Engines,
    programs: Iterable[StepProgram] = PROGRAMS,
    *,
    steps: int = STEPS,
    repeats: int = REPEATS,
    clock: Clock = time.perf_counter,
) -> tuple[DispatchRun, ...]:
    """Every shape (:data:`~shardviz.model.dispatch.SHAPES`) for every program on ``cluster``'s
    processes: ``repeats`` rounds, each running every shape once for ``steps`` steps, the
    shapes' order turned by one each round (so that a slow moment of the machine does not
    always fall on the same shape).

    Returns:
        One :class:`DispatchRun` per program and shape, each with ``repeats`` timings.
    """
    _count(steps, "steps")
    _count(repeats, "repeats")
    n = len(cluster.processes)
    view = cluster.client[[p.engine for p in cluster.processes]]
    runs: list[DispatchRun] = []
    for program in programs:
        cluster.run(engine_prepare, program.rows, program.width, program.wait)
        seconds: dict[tuple[str, str], list[float]] = {shape: [] for shape in SHAPES}
        for r in range(repeats):
            k = r % len(SHAPES)
            for controller, mode in SHAPES[k:] + SHAPES[:k]:
                pipelined = mode == "pipelined"
                took = (
                    multi_controller(cluster, steps, pipelined)
                    if controller == "multi"
                    else single_controller(view, steps, pipelined, clock=clock)
                )
                seconds[(controller, mode)].append(took)
        runs.extend(
            DispatchRun(controller=c, mode=m, processes=n, step=program.name, steps=steps,
                        seconds=tuple(seconds[(c, m)]))
            for c, m in SHAPES
        )  # fmt: skip
    return tuple(runs)


def measure_dispatch(
    start: Callable[[int], Any],
    processes: Iterable[int] = (1, 2, 4),
    programs: Sequence[StepProgram] = PROGRAMS,
    *,
    devices_per_process: int = 1,
    steps: int = STEPS,
    repeats: int = REPEATS,
    command: str = "",
) -> DispatchTiming:
    """Start a cluster of each size with ``start(n)`` (e.g. ``lambda n: sv.cluster(n, 1)``),
    :func:`measure` it, stop it; every figure side by side.

    Args:
        start: makes a cluster of ``n`` processes (an :class:`Engines` with ``stop()``) with
            ``devices_per_process`` devices each (recorded as such).
        processes: the numbers of processes, each a cluster of its own.
        programs: the step programs, shortest first.
        devices_per_process: what ``start`` gives each process (for the record).
        steps, repeats: as in :func:`measure`.
        command: how the numbers were made (recorded with them).
    """
    runs: list[DispatchRun] = []
    for n in processes:
        cluster = start(_count(n, "processes"))
        try:
            runs.extend(measure(cluster, programs, steps=steps, repeats=repeats))
        finally:
            cluster.stop()
    return DispatchTiming(
        programs=tuple(programs), runs=tuple(runs), devices_per_process=devices_per_process,
        command=command,
    )  # fmt: skip


def _count(value: object, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ProcessError(
            problem("dispatch timing", f"{what} must be a positive whole number, got {value!r}",
                    f"pass e.g. {what}=2")
        )  # fmt: skip
    return value
