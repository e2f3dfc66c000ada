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
hidden anyway. The collectives are timed on the links each order's rings use (a ring that
jumps between chips loads them more: :func:`~shardviz.analysis.estimate.rings.ring_penalty`),
the same routing ``sv.physical(report, order=...)`` shows. A finding when an order cuts that
time by at least :data:`MIN_GAIN` and puts no more bytes on the links; the order
``mesh_utils.create_device_mesh`` gives is tried first (its fix is that call), then the
best order tiled to the chips. A fix is checked by recompiling with that order and
predicting the fixed program's step (goal ``"exposed"``). A report without the schedule is judged on its total estimated
communication instead (goal ``"communication"``).
"""

from __future__ import annotations

from shardviz.analysis.detect.candidate import Candidate, order_fix
from shardviz.analysis.estimate.orders import (
    STANDARD,
    Order,
    best_order,
    standard_order,
    timed_with,
)
from shardviz.analysis.estimate.physical import layout_on_chips
from shardviz.analysis.estimate.placement import place
from shardviz.model import Report
from shardviz.model.findings import Finding, FindingCost, Fix, Where
from shardviz.model.hardware import Target
from shardviz.model.units import format_bytes, format_seconds

#: The least share of the judged communication time a new order must save to be a finding.
MIN_GAIN = 0.10


def placement(report: Report) -> list[Candidate]:
    """[placement] Another order of the mesh's devices adds less communication to the step
    and loads the links no more: ``mesh_utils.create_device_mesh``'s order first (the fix
    is then that call), else the best order tiled to the chips."""
    target, mesh, estimate = report.target, report.mesh, report.estimate
    if target is None or mesh is None or estimate is None or target.kind not in ("tpu", "gpu"):
        return []
    if mesh.size > target.devices or place(mesh, target).assumed:
        return []  # where the devices sit is not known (CPU devices): no advice on their order
    found = best_order(report, target)
    if found is None:
        return []
    now, best = found
    if now.seconds <= 0:
        return []
    links_now = _link_bytes(report, target, mesh.device_ids)
    ids = standard_order(mesh, place(mesh, target), target)
    standard = timed_with(report, target, ids, f"as {STANDARD} lays it") if ids else None
    offers = [
        (order, links)
        for order in (standard, best)
        if order is not None
        and order.devices != mesh.device_ids
        and order.seconds <= now.seconds * (1 - MIN_GAIN)
        and (links := _link_bytes(report, target, order.devices)) <= links_now
    ]
    if not offers:
        return []
    # The order that loads the links least leads (the standard one on a tie); another is
    # offered beside it only where it cuts the time further by MIN_GAIN.
    lead, lead_links = min(offers, key=lambda o: (o[1], o[0].seconds, o[0] is not standard))
    more = [o for o in offers if o[0] is not lead and o[0].seconds < lead.seconds * (1 - MIN_GAIN)]
    offers = [(lead, lead_links), *more]
    layout = layout_on_chips(report, target)
    busy = sorted(
        (a for a in layout.axes if a.ledger_bytes > 0), key=lambda a: (a.closes, -a.ledger_bytes)
    )
    worst = busy[0] if busy else None
    moved = sum(c.moved_bytes * (c.trips or 1) for c in report.collectives
                if worst is None or worst.axis in c.axes)  # fmt: skip
    cut = _cut(now, lead)
    who = f"{STANDARD}'s order" if lead is standard else "another device order"
    if worst is not None and not worst.closes:
        title = f"mesh axis {worst.axis!r} {_short(worst.shape)}: {who} cuts {cut}"
        head = f"On {target.label}, the rings of mesh axis {worst.axis!r}: {worst.words}."
    else:
        title = f"{who} cuts {cut}"
        head = f"On {target.label}, the mesh's devices sit where its collectives cross more links."
    carried = f"{format_bytes(links_now)} -> {format_bytes(lead_links)} per step"
    also = ""
    if more:
        other, other_links = more[0]
        named = f"{STANDARD}'s order" if other is standard else f"An order ({other.words})"
        also = (
            f" {named} cuts the time further, to {format_seconds(other.seconds)}, with "
            f"{format_bytes(other_links)} on the links."
        )
    why = (
        f"{head} The same devices in "
        f"{who if lead is standard else f'another order ({lead.words})'} "
        "put each group's members closer together on the chips and their "
        "links, so the program's collectives (the same ones, the same bytes) take fewer hops "
        f"or faster links: the bytes the links carry {carried}, {cut}. {_basis(now, lead)}"
        f"{also} Only the order of the devices in the mesh changes (a permutation); print "
        "sv.physical(report, order=...) to see the rings on the chips."
    )
    finding = Finding(
        kind="placement",
        severity="warning",
        title=title,
        why=why,
        cost=FindingCost(kind="moved", bytes=moved, seconds=now.seconds - lead.seconds),
        where=Where(devices=worst.rings[0].devices if worst is not None else ()),
    )
    fixes = tuple(
        _standard_fix(mesh.axis_sizes, o.devices) if o is standard
        else order_fix(mesh.axis_sizes, o.devices, o.words)
        for o, _ in offers
    )  # fmt: skip
    goal = "exposed" if now.exposed and lead.exposed else "communication"
    return [Candidate(finding, fixes, goal=goal)]


def _link_bytes(report: Report, target: Target, order: tuple[int, ...]) -> int:
    """The bytes the chips' links carry per step with the mesh's devices in ``order``."""
    assert report.mesh is not None
    return layout_on_chips(report, target, report.mesh.reordered(order)).link_bytes


def _standard_fix(shape: tuple[int, ...], devices: tuple[int, ...]) -> Fix:
    """The mesh built by ``mesh_utils.create_device_mesh`` from the same devices (its order
    is ``devices``, what the trial reorders the mesh by)."""
    code = (
        "from jax.experimental import mesh_utils\n"
        f"devices = mesh_utils.create_device_mesh({shape}, mesh.devices.ravel())\n"
        "mesh = jax.sharding.Mesh(devices, mesh.axis_names, axis_types=mesh.axis_types)"
    )
    return Fix(
        kind="mesh",
        description=f"build the mesh with {STANDARD}: the same devices laid on the chips",
        code=code,
        mesh_shape=shape,
        devices=devices,
    )


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
