"""[placement] The mesh's devices in an order that suits the chips badly: a better order exists.

Judged on the report's target (so only once it has an estimate), and only where the devices
say where they sit (TPU coordinates, GPU hosts; not CPU devices placed by assumption): the
mesh's axes laid on the physical chips (:mod:`shardviz.analysis.estimate.physical`), and
other orders of the same devices tiled to the topology
(:mod:`shardviz.analysis.estimate.orders`), each timed by the estimate of the report's own
ledger put back into the compiled schedule. What counts is the communication the step waits
for (exposed, not hidden under the ops in flight beside it): a data-parallel gradient
all-reduce that overlaps the backward pass weighs little, a tensor-parallel all-reduce on
the critical path weighs whole, so an order is not advised for moving bytes that were
hidden anyway. A finding when an order cuts that time by at least :data:`MIN_GAIN`; its
fix is that order, checked by recompiling with it and predicting the fixed program's step
(goal ``"exposed"``). A report without the schedule is judged on its total estimated
communication instead (goal ``"communication"``).
"""

from __future__ import annotations

from shardviz.analysis.detect.candidate import Candidate, order_fix
from shardviz.analysis.estimate.orders import Order, best_order
from shardviz.analysis.estimate.physical import layout_on_chips
from shardviz.analysis.estimate.placement import place
from shardviz.model import Report
from shardviz.model.findings import Finding, FindingCost, Where
from shardviz.model.units import format_seconds

#: The least share of the judged communication time a new order must save to be a finding.
MIN_GAIN = 0.10


def placement(report: Report) -> list[Candidate]:
    """[placement] Another order of the mesh's devices adds less communication to the step."""
    target, mesh, estimate = report.target, report.mesh, report.estimate
    if target is None or mesh is None or estimate is None or target.kind not in ("tpu", "gpu"):
        return []
    if mesh.size > target.devices or place(mesh, target).assumed:
        return []  # where the devices sit is not known (CPU devices): no advice on their order
    found = best_order(report, target)
    if found is None:
        return []
    now, best = found
    if now.seconds <= 0 or best.seconds > now.seconds * (1 - MIN_GAIN):
        return []
    layout = layout_on_chips(report, target)
    busy = sorted(
        (a for a in layout.axes if a.ledger_bytes > 0), key=lambda a: (a.closes, -a.ledger_bytes)
    )
    worst = busy[0] if busy else None
    moved = sum(c.moved_bytes * (c.trips or 1) for c in report.collectives
                if worst is None or worst.axis in c.axes)  # fmt: skip
    cut = _cut(now, best)
    where = target.label
    if worst is not None and not worst.closes:
        title = f"mesh axis {worst.axis!r} {_short(worst.shape)}: another device order cuts {cut}"
        lead = f"On {where}, the rings of mesh axis {worst.axis!r}: {worst.words}."
    else:
        title = f"another device order cuts {cut}"
        lead = f"On {where}, the mesh's devices sit where its collectives cross more links."
    why = (
        f"{lead} The same devices in another order ({best.words}) put each group's "
        "members closer together on the chips and their links, so the program's collectives "
        f"(the same ones, the same bytes) take fewer hops or faster links: {cut}. "
        f"{_basis(now, best)} Only the order of the devices in the mesh changes (a "
        "permutation); print sv.physical(report) to see the rings on the chips."
    )
    finding = Finding(
        kind="placement",
        severity="warning",
        title=title,
        why=why,
        cost=FindingCost(kind="moved", bytes=moved, seconds=now.seconds - best.seconds),
        where=Where(devices=worst.rings[0].devices if worst is not None else ()),
    )
    fix = order_fix(mesh.axis_sizes, best.devices, best.words)
    goal = "exposed" if now.exposed and best.exposed else "communication"
    return [Candidate(finding, (fix,), goal=goal)]


def _cut(now: Order, best: Order) -> str:
    """The time judged, before and after, in words: ``the exposed communication 1 ms ->
    200 µs per step (predicted step 5 ms -> 4.2 ms)``."""
    a, b = format_seconds(now.seconds), format_seconds(best.seconds)
    if now.predicted_seconds is None or best.predicted_seconds is None:
        return f"the estimated communication {a} -> {b} per step"
    step = f"{format_seconds(now.predicted_seconds)} -> {format_seconds(best.predicted_seconds)}"
    return f"the exposed communication {a} -> {b} per step (predicted step {step})"


def _basis(now: Order, best: Order) -> str:
    """A sentence on what was judged: the communication the step waits for, or (no
    schedule) every collective's time."""
    if not (now.exposed and best.exposed):
        return "(Judged on every collective's estimated time: the report has no schedule.)"
    total = (
        f"{format_seconds(now.communication_seconds)} -> "
        f"{format_seconds(best.communication_seconds)}"
    )
    return (
        "Judged on the communication the compiled schedule leaves exposed (the step waits "
        "for it), not on every collective's time: a collective the ops in flight beside it "
        "hide (a gradient all-reduce under the backward pass) weighs only what they do not "
        f"cover. All collectives added up: {total} per step."
    )


def _short(shape: str) -> str:
    return {
        "line": "runs as a line on the chips (its rings double back)",
        "jumps": "jumps between chips that are not neighbours",
        "hosts": "is split across hosts",
        "slices": "is split across slices",
    }.get(shape, f"lies as {shape}")
