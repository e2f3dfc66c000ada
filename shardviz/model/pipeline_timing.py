"""A profiled pipeline step read back as its schedule: each slot as it ran, and the bubble.

A pipeline runs in ticks, and the schedule says what each stage does at each tick (the
forward or the backward of one microbatch, or nothing). The profiled step's timeline
(:attr:`~shardviz.model.Report.timeline`) gives every op each device ran, with its start and
duration. Mapping one onto the other needs the tick each op belongs to:

- ``shard_map`` pipelines (:mod:`shardviz.strategies.pipeline.shard_map`): every tick each
  stage runs two conditionals, the forward's then the backward's. The conditionals that run
  once per tick are these two, and the k-th of each on a stage's device starts tick k's
  forward, then its backward. A conditional's own event does not always last as long as its
  branch (on CPU the runtime may finish a branch after the event ends), so a phase is timed
  by the compute ops from its conditional's start to the next one's (the last: to the end of
  the loop's last op) that do not run every tick: the branch that ran, without the tick's
  fixed work (looking up the tables, storing into the buffers, passing along).
- GSPMD's form (:mod:`shardviz.strategies.pipeline.gspmd`): one loop of ``M + S - 1`` iterations
  and autodiff's reversed loop of as many; every stage computes at each iteration, on a
  microbatch or, in the bubble, on nothing useful. A loop body without branches runs each of
  its ops once per iteration, so the k-th run of each body op is iteration k. Iteration k of
  the forward loop is the GPipe schedule's time k, iteration k of the backward loop its time
  ``M + S - 1 + k``. A slot's time is what its iteration's compute ops cover (collectives
  left out: on CPU they are mostly waiting).

Each stage is timed on one device: its first along every other mesh axis (with data
parallelism, the first data row). The bubble is ``1 - busy / (stages x span)``: the slots'
seconds summed over the stages, over the time from the first tick's start on any stage to
the last tick's end. No jax.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace

from shardviz.model.mesh import MeshLayout
from shardviz.model.program import OpEvent
from shardviz.model.schedule import MeasuredSlot, Phase, Schedule
from shardviz.model.timeline import COMPUTE, op_kind

#: When work ran: ``(start, seconds)``.
Work = tuple[float, float]
#: One tick of one stage: for each phase its code ran there, when (the phase's work, or its
#: idle branch when the schedule has nothing for it).
Tick = dict[Phase, Work]


@dataclass(frozen=True)
class StageTicks:
    """One stage's device through the pipeline: its ticks in order, and when the first
    began and the last ended (seconds after the step's first op)."""

    ticks: tuple[Tick, ...]
    start: float
    end: float


def _is_control(name: str) -> bool:
    """Conditionals and loops: their events stand for the ops they run, not work of their own."""
    return name.split(".", 1)[0] in ("conditional", "while")


def _union_seconds(spans: list[tuple[float, float]]) -> float:
    """Seconds covered by ``(start, end)`` intervals (ops on one device may overlap)."""
    total, reach = 0.0, float("-inf")
    for start, end in sorted(spans):
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total


def _work(spans: list[tuple[float, float]], lo: float) -> Work:
    """The work of ``spans`` (sorted): from the first one's start, the seconds they cover;
    none at ``lo`` when there are none."""
    return (spans[0][0], _union_seconds(spans)) if spans else (lo, 0.0)


def stage_devices(mesh: MeshLayout, axis: str) -> tuple[int, ...]:
    """Per stage, the id of the device that stands for it: the device at that index of
    ``axis`` and index 0 of every other axis (the first data row of a stage x data mesh).

    Raises:
        ValueError: the mesh has no ``axis``.
    """
    if axis not in mesh.axis_names:
        raise ValueError(f"the mesh {mesh.axis_names} has no {axis!r} axis")
    at = mesh.axis_names.index(axis)
    stride = 1
    for size in mesh.axis_sizes[at + 1 :]:
        stride *= size
    return tuple(mesh.devices[i * stride].id for i in range(mesh.axis_sizes[at]))


def shard_map_ticks(events: Sequence[OpEvent], ticks: int) -> StageTicks:
    """One device's ticks of a ``shard_map`` pipeline, found by its two conditionals per tick.

    Raises:
        ValueError: not exactly two conditionals ran ``ticks`` times, or they do not
            alternate forward, backward.
    """
    runs: dict[str, list[OpEvent]] = defaultdict(list)
    for e in events:
        if e.name.split(".", 1)[0] == "conditional":
            runs[e.name].append(e)
    per_tick = [sorted(v, key=lambda e: e.start) for v in runs.values() if len(v) == ticks]
    if len(per_tick) != 2:
        raise ValueError(
            f"{len(per_tick)} conditionals ran once per tick ({ticks} times) on a stage's "
            "device; the pipeline runs two (the forward's and the backward's)"
        )
    fwd, bwd = sorted(per_tick, key=lambda v: v[0].start)
    bounds = [t for f, b in zip(fwd, bwd, strict=True) for t in (f.start, b.start)]
    if any(x > y for x, y in zip(bounds, bounds[1:], strict=False)):
        raise ValueError("the forward and backward conditionals do not alternate tick by tick")
    counts = Counter(e.name for e in events)
    # The loop ends with the last tick's fixed work (every op outside the branches runs
    # once per tick); what comes after is the step's own work.
    end = max(e.start + e.seconds for e in events if counts[e.name] == ticks)
    bounds.append(end)
    branch = sorted(
        (e.start, e.start + e.seconds)
        for e in events
        if counts[e.name] < ticks and op_kind(e.name) == COMPUTE and not _is_control(e.name)
    )
    phases: list[Work] = []
    for lo, hi in zip(bounds, bounds[1:], strict=False):
        phases.append(_work([sp for sp in branch if lo <= sp[0] < hi], lo))
    out: tuple[Tick, ...] = tuple(
        {"F": phases[2 * k], "B": phases[2 * k + 1]} for k in range(ticks)
    )
    return StageTicks(out, bounds[0], end)


def loop_ticks(events: Sequence[OpEvent], iterations: int) -> StageTicks:
    """One device's ticks of GSPMD's pipeline: the forward loop's iterations (phase ``F``),
    then the backward loop's (``B``), each timed by its compute ops.

    Raises:
        ValueError: the ops run ``iterations`` times do not form exactly two loops.
    """
    if iterations < 2:
        raise ValueError("a loop of one iteration cannot be told apart from the rest")
    runs: dict[str, list[OpEvent]] = defaultdict(list)
    for e in events:
        if not _is_control(e.name):
            runs[e.name].append(e)
    body = {n: sorted(v, key=lambda e: e.start) for n, v in runs.items() if len(v) == iterations}
    # Body ops of one loop run between its first and last iteration; the loops run one after
    # the other, so overlapping ranges are one loop.
    ranges = sorted((v[0].start, max(e.start + e.seconds for e in v), n) for n, v in body.items())
    loops: list[tuple[float, list[str]]] = []
    for first, last, name in ranges:
        if loops and first < loops[-1][0]:
            loops[-1] = (max(loops[-1][0], last), [*loops[-1][1], name])
        else:
            loops.append((last, [name]))
    if len(loops) != 2:
        raise ValueError(
            f"the ops run {iterations} times form {len(loops)} loops; GSPMD's pipeline has two "
            "(the forward and autodiff's backward)"
        )
    compute = sorted(
        (e.start, e.start + e.seconds)
        for e in events
        if op_kind(e.name) == COMPUTE and not _is_control(e.name)
    )
    out: list[Tick] = []
    start, end = float("inf"), float("-inf")
    order: tuple[Phase, Phase] = ("F", "B")
    for phase, (_, names) in zip(order, loops, strict=True):
        for k in range(iterations):
            # Iteration k: from its first body op's start to its last one's end; its work,
            # every compute op that started there (a nested loop's too).
            lo = min(body[n][k].start for n in names)
            hi = max(body[n][k].start + body[n][k].seconds for n in names)
            start, end = min(start, lo), max(end, hi)
            out.append({phase: _work([sp for sp in compute if lo <= sp[0] < hi], lo)})
    return StageTicks(tuple(out), start, end)


def measure(
    schedule: Schedule, per_stage: Sequence[StageTicks]
) -> tuple[tuple[MeasuredSlot, ...], float]:
    """Each of ``schedule``'s slots as its stage's tick timed it, and the bubble:
    ``1 - busy / (stages x span)``, ``span`` from the earliest stage's first tick's start to
    the latest stage's last tick's end.

    Raises:
        ValueError: a stage has another number of ticks than the schedule, or a tick does
            not time a slot's phase.
    """
    if len(per_stage) != schedule.stages:
        raise ValueError(f"{len(per_stage)} stages timed for a schedule of {schedule.stages}")
    for s, stage in enumerate(per_stage):
        if len(stage.ticks) != schedule.length:
            raise ValueError(
                f"stage {s} ran {len(stage.ticks)} ticks; the schedule has {schedule.length}"
            )
    slots = []
    for slot in schedule.slots:
        tick = per_stage[slot.stage].ticks[slot.time]
        if slot.phase not in tick:
            raise ValueError(f"tick {slot.time} of stage {slot.stage} has no {slot.phase} work")
        start, seconds = tick[slot.phase]
        slots.append(MeasuredSlot(slot.stage, slot.microbatch, slot.phase, start, seconds))
    span = max(t.end for t in per_stage) - min(t.start for t in per_stage)
    if span <= 0:
        raise ValueError("the ticks took no time")
    busy = sum(m.seconds for m in slots)
    return tuple(slots), max(0.0, 1.0 - busy / (schedule.stages * span))


def measured_schedule(
    schedule: Schedule,
    events: Sequence[OpEvent],
    mesh: MeshLayout,
    axis: str,
    platform: str,
) -> tuple[Schedule, str | None]:
    """``schedule`` with its slots and bubble measured from a profiled step's ``events`` on
    ``mesh`` (stages along ``axis``), on ``platform``; or ``schedule`` as it was and a note
    saying why it could not be measured."""
    try:
        devices = stage_devices(mesh, axis)
        if len(devices) != schedule.stages:
            raise ValueError(f"the {axis!r} axis has {len(devices)} devices")
        by_device: dict[int, list[OpEvent]] = defaultdict(list)
        for e in events:
            by_device[e.device].append(e)
        if schedule.form == "shard_map":
            per_stage = [shard_map_ticks(by_device[d], schedule.length) for d in devices]
        else:
            n = schedule.microbatches + schedule.stages - 1
            per_stage = [loop_ticks(by_device[d], n) for d in devices]
        slots, bubble = measure(schedule, per_stage)
    except ValueError as err:
        return schedule, f"no measured bubble ({schedule.stages}-stage pipeline): {err}"
    return replace(
        schedule, measured=slots, measured_bubble=bubble, measured_platform=platform
    ), None
