"""Other orders of a mesh's devices, laid out to suit the physical topology, and the time
their communication adds to the step.

An order tiles the chips with the mesh: each mesh axis gets a block of the physical grid
(a factor of each physical axis), and walks it as a ring where it can: a whole axis that
wraps, or a block of two or more dimensions walked as a closed loop (a 2x2 square, a 2x4
rectangle: one column kept for the way back). The blocks nest, one mesh axis inside the
other. Each order is judged by the estimate of the report's own ledger with its groups
moved to the new devices (the device at each mesh position takes over that position's
traffic), so the best order is the one the cost model prefers.

What is judged is the communication the step waits for: the collectives, re-timed on the new
devices, put back into the compiled schedule (:mod:`.predict`), each hidden by the ops in
flight beside it. A data-parallel gradient all-reduce that overlaps the backward pass costs
an order little; a tensor-parallel all-reduce on the critical path costs it whole. Only a
report without the schedule (no ops) is judged on its total communication time. The
collectives are timed on the links each order's rings use (:mod:`.rings`), as
``sv.physical(report, order=...)`` routes them. :func:`standard_order` gives the order
``mesh_utils.create_device_mesh`` would, ported, so a finding can offer that call. Pure
Python, no jax.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Iterator
from dataclasses import dataclass

from shardviz.analysis.estimate.placement import Placement, place
from shardviz.analysis.estimate.predict import Rates, predict_with, rates_of
from shardviz.analysis.estimate.rings import block_walk
from shardviz.analysis.estimate.step import estimate_collectives
from shardviz.model import OpWork
from shardviz.model.hardware import Target
from shardviz.model.mesh import MeshLayout
from shardviz.model.program import Collective, Report

#: Orders tried at most (factor assignments x nestings).
MAX_ORDERS = 256
#: Seconds the search may take (each order re-estimates the whole ledger).
BUDGET_SECONDS = 2.0


@dataclass(frozen=True)
class Order:
    """A device order: ids in row-major mesh order, what it does in words, and its
    estimated seconds per step.

    ``communication_seconds``: every collective's time added up. ``predicted_seconds``: the
    step as the compiled schedule runs it, of which ``exposed_seconds`` is the collectives'
    time the ops in flight beside them do not hide (both ``None`` without the schedule).
    ``seconds`` is what an order is judged on: the exposed communication, else the total.
    """

    devices: tuple[int, ...]
    words: str
    communication_seconds: float
    predicted_seconds: float | None = None
    exposed_seconds: float | None = None

    @property
    def seconds(self) -> float:
        """The time judged: the exposed communication when predicted, else the total."""
        if self.exposed_seconds is not None:
            return self.exposed_seconds
        return self.communication_seconds

    @property
    def exposed(self) -> bool:
        """Whether ``seconds`` is the exposed communication (the schedule was known)."""
        return self.exposed_seconds is not None


def _factorings(n: int, caps: list[int]) -> Iterator[tuple[int, ...]]:
    """Ways to write ``n`` as a product of ``len(caps)`` factors, each dividing its cap."""
    if not caps:
        if n == 1:
            yield ()
        return
    for f in range(1, caps[0] + 1):
        if n % f == 0 and caps[0] % f == 0:
            for rest in _factorings(n // f, caps[1:]):
                yield (f, *rest)


def _assignments(sizes: tuple[int, ...], shape: tuple[int, ...]) -> Iterator[list[tuple[int, ...]]]:
    """Each mesh axis's block (a factor of each physical axis), the blocks tiling the grid."""

    def blocks_from(i: int, left: list[int]) -> Iterator[list[tuple[int, ...]]]:
        if i == len(sizes):
            if all(x == 1 for x in left):
                yield []
            return
        for f in _factorings(sizes[i], left):
            for rest in blocks_from(i + 1, [a // b for a, b in zip(left, f, strict=True)]):
                yield [f, *rest]

    yield from blocks_from(0, list(shape))


def _chip_grid(mesh: MeshLayout, placement: Placement, target: Target) -> dict | None:
    """Physical coordinates -> device id, when the mesh fills one slice, one device per
    chip (TPU: the chip; GPU: (host, GPU)); ``None`` otherwise."""
    sites = [placement[d] for d in mesh.device_ids]
    if len({s.slice for s in sites}) != 1:
        return None
    if target.kind == "tpu":
        coords = [s.chip for s in sites]
        shape = target.shape
    else:
        hosts = sorted({s.host for s in sites})
        coords = [(hosts.index(s.host), *s.chip) for s in sites]
        shape = (len(hosts), max(c[1] for c in coords) + 1)
    if len(set(coords)) != len(coords) or len(coords) != math.prod(shape):
        return None
    return {"shape": shape, "ids": dict(zip(coords, mesh.device_ids, strict=True))}


def candidate_orders(mesh: MeshLayout, placement: Placement, target: Target):
    """``(device ids in mesh order, words)`` for each tiling of the chips by the mesh."""
    grid = _chip_grid(mesh, placement, target)
    if grid is None:
        return
    shape, ids = grid["shape"], grid["ids"]
    names, sizes = mesh.axis_names, mesh.axis_sizes
    seen: set[tuple[int, ...]] = set()
    count = 0
    # Only the axes above size 1 are nested: a size-1 axis's only position is 0, so where it
    # sits changes no order (MaxText's mesh has 12 axes, 11 of size 1: 12! nestings, 1 order).
    live = [i for i, n in enumerate(sizes) if n > 1]
    for blocks in _assignments(sizes, shape):
        walks = [block_walk(b) for b in blocks]
        for nest in itertools.permutations(live):
            strides = [[0] * len(shape) for _ in sizes]
            acc = [1] * len(shape)
            for i in nest:  # the first in `nest` is innermost on every physical axis
                for p in range(len(shape)):
                    strides[i][p] = acc[p]
                    acc[p] *= blocks[i][p]
            order = []
            for pos in itertools.product(*(range(s) for s in sizes)):
                chip = [0] * len(shape)
                for i, m in enumerate(pos):
                    cell = walks[i][m]
                    for p in range(len(shape)):
                        chip[p] += cell[p] * strides[i][p]
                order.append(ids[tuple(chip)])
            key = tuple(order)
            if key in seen:
                continue
            seen.add(key)
            count += 1
            yield key, _words(names, blocks, shape, target)
            if count >= MAX_ORDERS:
                return


#: The ring orders ``mesh_utils.create_device_mesh`` (jax 0.10) uses on small TPU trays,
#: over the devices sorted z, y, x.
_V5P_2X2X2 = (0, 1, 3, 2, 6, 7, 5, 4)
_TRAY_2X2 = (0, 1, 3, 2)
_V5E_TRAY_IOTA = (0, 4, 2, 6, 1, 5, 3, 7)
_V5E_TRAY_RING = (0, 1, 2, 3, 7, 6, 5, 4)
_TRAY_4X4 = (0, 1, 2, 3, 7, 6, 5, 9, 10, 11, 15, 14, 13, 12, 8, 4)
#: What :func:`standard_order` is named in findings and fixes.
STANDARD = "mesh_utils.create_device_mesh"


def standard_order(
    mesh: MeshLayout, placement: Placement, target: Target
) -> tuple[int, ...] | None:
    """The mesh's devices in the order ``jax.experimental.mesh_utils.create_device_mesh(
    shape, devices)`` gives them (jax 0.10, ported without jax so the analysis can time it):
    a GPU's by id; a TPU tray's small ring orders; else each mesh axis, the last first, on
    as many whole physical axes as multiply to its size. ``None`` where it would refuse (an
    axis no physical axes multiply to) or the devices do not fill one slice, one per chip."""
    ids = mesh.device_ids
    if target.kind == "gpu":
        return tuple(sorted(ids))
    if target.kind != "tpu" or target.devices_per_chip != 1:
        return None
    sites = [placement[d] for d in ids]
    if len({s.slice for s in sites}) != 1:
        return None
    coords = {d: (*placement[d].chip, 0, 0, 0)[:3] for d in ids}
    if len(set(coords.values())) != len(ids):
        return None
    seq = sorted(ids, key=lambda d: tuple(reversed(coords[d])))
    lo = [min(c[a] for c in coords.values()) for a in range(3)]
    dims = [max(c[a] for c in coords.values()) - lo[a] + 1 for a in range(3)]
    special = _tray_order(mesh.devices[-1].kind, tuple(dims), len(ids), mesh.axis_sizes)
    if special is not None:
        return tuple(seq[i] for i in special)
    if math.prod(dims) != len(ids):
        return None
    transpose = _torus_assignment(dims, mesh.axis_sizes)
    if transpose is None:
        return None
    grid = {coords[d]: d for d in ids}
    out = []
    for idx in itertools.product(*(range(dims[t]) for t in transpose)):
        chip = [0, 0, 0]
        for k, t in enumerate(transpose):
            chip[t] = idx[k] + lo[t]
        out.append(grid[tuple(chip)])
    return tuple(out)


def _tray_order(
    kind: str, bound: tuple[int, ...], n: int, sizes: tuple[int, ...]
) -> tuple[int, ...] | None:
    """The ring order ``create_device_mesh`` takes on a small tray of devices of ``kind``
    (jax's ``device_kind``, as its handlers key them; ``None``: none)."""
    if kind == "TPU v5p" and bound == (2, 2, 2) and n == 8:
        return _V5P_2X2X2
    if kind not in ("TPU v5 lite", "TPU v6 lite"):
        return None
    if bound == (2, 2, 1) and n == 4:
        return _TRAY_2X2
    if n == 8:
        return _V5E_TRAY_IOTA if bound == (2, 2, 2) else _V5E_TRAY_RING
    if bound == (4, 4, 1) and n == 16 and max(sizes) == n:
        return _TRAY_4X4
    return None


def _torus_assignment(dims: list[int], sizes: tuple[int, ...]) -> list[int] | None:
    """The physical axes of each mesh axis, flattened (``create_device_mesh``'s transpose):
    the last mesh axis first, each on the most physical axes whose sizes multiply to its
    own; ``None`` where one finds none."""
    left = list(dims)
    assignment: list[tuple[int, ...]] = [() for _ in sizes]
    for i in reversed(range(len(sizes))):
        for k in range(len(dims), 0, -1):
            for combo in itertools.combinations(enumerate(left), k):
                axes, values = zip(*combo, strict=True)
                if math.prod(values) == sizes[i]:
                    assignment[i] = axes
                    left = [0 if j in axes else v for j, v in enumerate(left)]
                    break
            if assignment[i]:
                break
        else:
            if sizes[i] > 1:
                return None
    transpose = [a for axes in assignment for a in axes]
    return transpose if sorted(transpose) == list(range(len(dims))) else None


def _words(names: tuple[str, ...], blocks: list[tuple[int, ...]], shape, target: Target) -> str:
    axes = ("host", "gpu") if target.kind != "tpu" else ("x", "y", "z")
    parts = []
    for name, block in zip(names, blocks, strict=True):
        live = [f"{axes[p] if p < len(axes) else p}{n}" for p, n in enumerate(block) if n > 1]
        if not live:
            continue
        whole = (
            target.kind == "tpu"
            and len(live) == 1
            and any(n == shape[p] and target.wraparound[p] and n > 2 for p, n in enumerate(block))
        )
        how = "a wraparound ring" if whole else "a closed loop" if len(live) > 1 else "a line"
        if target.kind != "tpu":
            how = "inside each host" if block[0] == 1 else "across hosts"
        parts.append(f"{name!r} on {' x '.join(live)} ({how})")
    return "; ".join(parts)


def _retimed(report: Report, target: Target, order: tuple[int, ...]) -> tuple[Collective, ...]:
    """``report``'s ledger estimated with its mesh's devices in ``order``."""
    mesh = report.mesh
    assert mesh is not None
    placement = place(mesh.reordered(order), target)
    moved = {old: placement[new] for old, new in zip(mesh.device_ids, order, strict=True)}
    return estimate_collectives(report.collectives, Placement(moved, placement.assumed), target)


def _total(collectives: tuple[Collective, ...]) -> float:
    return sum((c.estimated_seconds or 0.0) * (c.trips or 1) for c in collectives)


def seconds_with(report: Report, target: Target, order: tuple[int, ...]) -> float:
    """The estimated communication seconds per step of ``report``'s ledger with its mesh's
    devices in ``order`` (row-major mesh order): every collective counted whole."""
    return _total(_retimed(report, target, order))


def timed_with(report: Report, target: Target, order: tuple[int, ...], words: str) -> Order:
    """``order`` timed: its total communication and, where the report has the compiled
    schedule, the step predicted with the collectives re-timed on its devices."""
    return _timed(_schedule(report, target), _retimed(report, target, order), order, words)


def exposed_communication(report: Report) -> float | None:
    """The collectives' seconds per step that ``report``'s predicted step waits for, on its
    target, as its ledger is estimated (``None``: no estimate or no schedule)."""
    if report.target is None or report.estimate is None or report.mesh is None:
        return None
    schedule = _schedule(report, report.target)
    return _timed(schedule, report.collectives, report.mesh.device_ids, "").exposed_seconds


@dataclass(frozen=True)
class _Schedule:
    """The report's compiled schedule on a target (the report estimate's own prediction,
    :func:`.predict.predict_step` at the target's per-device peak and bandwidths), and what
    it exposes with no collectives at all: the other transfers (prefetches, offloads), the
    same in every order, so worked out once."""

    ops: tuple[OpWork, ...]
    rates: Rates
    exposed_without: float


def _schedule(report: Report, target: Target) -> _Schedule | None:
    """``None`` without the compiled schedule (no ops) or a prediction of it."""
    ops = report.cost.ops if report.cost is not None else ()
    if not ops:
        return None
    rates = rates_of(target)
    others = predict_with(ops, (), None, rates)
    if others is None:
        return None
    return _Schedule(tuple(ops), rates, others.exposed_seconds)


def _timed(
    schedule: _Schedule | None,
    collectives: tuple[Collective, ...],
    order: tuple[int, ...],
    words: str,
) -> Order:
    """An order with its estimated ``collectives``: their total, and the step predicted with
    them in the compiled ``schedule`` (without one, the total alone)."""
    total = _total(collectives)
    if schedule is None:
        return Order(order, words, total)
    trips = {c.hlo_name: c.trips for c in collectives}
    predicted = predict_with(schedule.ops, collectives, trips, schedule.rates)
    if predicted is None:
        return Order(order, words, total)
    exposed = max(0.0, predicted.exposed_seconds - schedule.exposed_without)
    return Order(order, words, total, predicted.seconds, exposed)


def best_order(report: Report, target: Target) -> tuple[Order, Order] | None:
    """The report's own order and the order whose communication adds the least time to the
    predicted step (the least exposed communication; without the schedule, the least total
    communication). ``None``: the mesh does not fill one slice with one device per chip, or
    there is no ledger to judge by."""
    mesh = report.mesh
    if mesh is None or not report.collectives:
        return None
    placement = place(mesh, target)
    schedule = _schedule(report, target)
    now = _timed(schedule, _retimed(report, target, mesh.device_ids), mesh.device_ids, "as given")
    best = now
    start = time.perf_counter()
    for order, words in candidate_orders(mesh, placement, target):
        if time.perf_counter() - start > BUDGET_SECONDS:
            break
        timed = _timed(schedule, _retimed(report, target, order), order, words)
        if timed.seconds < best.seconds * (1 - 1e-9):
            best = timed
    return now, best
