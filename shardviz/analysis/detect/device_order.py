"""[placement] The mesh's devices in an order that suits the chips badly: a better order exists.

Judged on the report's target (so only once it has an estimate), and only where the devices
say where they sit (TPU coordinates, GPU hosts; not CPU devices placed by assumption): the
mesh's axes laid on the
physical chips (:mod:`shardviz.analysis.estimate.physical`), and other orders of the same
devices tiled to the topology (:mod:`shardviz.analysis.estimate.orders`), each timed by the
estimate of the report's own ledger. A finding when an order cuts the estimated
communication time by at least :data:`MIN_GAIN`; its fix is that order, checked by
recompiling with it and estimating the fixed program.
"""

from __future__ import annotations

from shardviz.analysis.detect.candidate import Candidate, order_fix
from shardviz.analysis.estimate.orders import best_order
from shardviz.analysis.estimate.physical import layout_on_chips
from shardviz.analysis.estimate.placement import place
from shardviz.model import Report
from shardviz.model.findings import Finding, FindingCost, Where
from shardviz.model.units import format_seconds

#: The least share of the communication time a new order must save to be a finding.
MIN_GAIN = 0.10


def placement(report: Report) -> list[Candidate]:
    """[placement] Another order of the mesh's devices needs less communication time."""
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
    where = target.label
    if worst is not None and not worst.closes:
        title = (
            f"mesh axis {worst.axis!r} {_short(worst.shape)}: another device "
            f"order cuts the estimated communication {format_seconds(now.seconds)} -> "
            f"{format_seconds(best.seconds)} per step"
        )
        lead = f"On {where}, the rings of mesh axis {worst.axis!r}: {worst.words}."
    else:
        title = (
            f"another device order cuts the estimated communication "
            f"{format_seconds(now.seconds)} -> {format_seconds(best.seconds)} per step"
        )
        lead = f"On {where}, the mesh's devices sit where its collectives cross more links."
    why = (
        f"{lead} The same devices in another order ({best.words}) put each group's "
        "members closer together on the chips and their links, so the program's collectives "
        "(the same ones, the same bytes) take fewer hops or faster links: estimated "
        "communication "
        f"{format_seconds(now.seconds)} -> {format_seconds(best.seconds)} per step. Only the "
        "order of the devices in the mesh changes (a permutation); print "
        "sv.physical(report) to see the rings on the chips."
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
    return [Candidate(finding, (fix,), goal="communication")]


def _short(shape: str) -> str:
    return {
        "line": "runs as a line on the chips (its rings double back)",
        "jumps": "jumps between chips that are not neighbours",
        "hosts": "is split across hosts",
        "slices": "is split across slices",
    }.get(shape, f"lies as {shape}")
