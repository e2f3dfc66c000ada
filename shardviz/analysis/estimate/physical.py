"""The logical mesh on the physical chips: each axis's rings and the ledger's load per link.

:func:`physical` (``sv.physical(report)``) places the report's mesh on its target with
:func:`~shardviz.analysis.estimate.placement.place`, routes every collective of the ledger
over the physical links (the rule is :data:`~shardviz.model.physical.LINK_RULE`) and says
how each mesh axis's rings lie on the chips. Pure Python, no jax.
"""

from __future__ import annotations

import dataclasses
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence

from shardviz.analysis.estimate.collectives import RING_KINDS, volume_of
from shardviz.analysis.estimate.orders import seconds_with
from shardviz.analysis.estimate.placement import Placement, Site, place
from shardviz.analysis.estimate.rings import LinkKey, Route, link_key, route
from shardviz.analysis.estimate.step import TargetLike, resolve_target, with_estimate
from shardviz.errors import ArgumentError, HardwareError, ShardvizError, problem
from shardviz.model.arguments import shown
from shardviz.model.hardware import Target
from shardviz.model.mesh import MeshLayout
from shardviz.model.physical import AxisRings, LinkLoad, PhysicalChip, PhysicalLayout, Ring
from shardviz.model.program import Collective, Report

_ORDER = {"ring": 0, "nvlink": 0, "line": 1, "jumps": 2, "hosts": 3, "slices": 4}


def transfers(c: Collective) -> list[tuple[int, int, int]]:
    """The collective's transfers per run as ``(from, to, bytes)`` under the ledger's ring
    model (see :data:`~shardviz.model.physical.LINK_RULE`)."""
    out: list[tuple[int, int, int]] = []
    if c.kind == "collective-permute":
        return [(s, d, c.in_bytes) for s, d in c.pairs if s != d]
    for g in c.groups:
        n = len(g)
        if n < 2:
            continue
        if c.kind == "all-to-all":
            share = c.moved_bytes // (n - 1)
            out += [(s, d, share) for s in g for d in g if s != d]
        else:
            out += [(g[i], g[(i + 1) % n], c.moved_bytes) for i in range(n)]
    return out


def by_unit(members: Sequence[int], placement: Placement, target: Target) -> list[list[int]]:
    """``members`` split by what the network joins (GPU: host; TPU: slice), in order of
    first appearance, each part in the group's order: the parts the two-level rule treats."""
    parts: dict[tuple[int, ...], list[int]] = {}
    for d in members:
        s = placement[d]
        parts.setdefault((s.slice, s.host) if target.kind != "tpu" else (s.slice,), []).append(d)
    return list(parts.values())


def routed_transfers(
    c: Collective, placement: Placement, target: Target
) -> list[tuple[int, int, int]]:
    """The collective's transfers per run as placed on ``target``: :func:`transfers`, except
    that a ring group on several hosts (GPU) or slices (TPU) runs in two levels, as the
    timing (:func:`~shardviz.analysis.estimate.collectives.switched_gather`) assumes: a
    ring inside each part over its ``k`` members, each sending ``f V (k-1)/k``, and every
    member sending its own ``f V / n`` to one member of each other part over its own
    network link (``V`` the volume, ``n`` the group's size, ``f`` 2 for an all-reduce). The
    bytes add up to the ledger's ``f V (n-1)`` per group either way."""
    if c.kind not in RING_KINDS:
        return transfers(c)
    out: list[tuple[int, int, int]] = []
    fv = (2 if c.kind == "all-reduce" else 1) * int(volume_of(c))
    for g in c.groups:
        n = len(g)
        parts = by_unit(g, placement, target) if n > 1 else []
        if len(parts) < 2:
            out += [(g[i], g[(i + 1) % n], c.moved_bytes) for i in range(n)] if n > 1 else []
            continue
        for part in parts:
            k = len(part)
            if k > 1:
                out += [(part[i], part[(i + 1) % k], fv * (k - 1) // k) for i in range(k)]
            for other in parts:
                if other is not part:
                    out += [(d, other[i % len(other)], fv // n) for i, d in enumerate(part)]
    return out


def ledger_bytes(c: Collective) -> int:
    """The ledger's moved bytes of one run summed over the devices that send (what the
    links carry when every transfer is between neighbours)."""
    return sum(b for _, _, b in transfers(c))


def _runs(c: Collective) -> int:
    return c.trips if c.trips is not None else 1


def _axis_label(c: Collective) -> str:
    return ",".join(c.axes) if c.axes else "(no axis)"


def _network(kind: str) -> bool:
    return kind in ("network", "dcn")


def link_loads(
    collectives: Sequence[Collective],
    placement: Placement,
    target: Target,
    sent: dict[int, Counter[bool]] | None = None,
) -> dict[LinkKey, Counter[str]]:
    """Bytes per link per step, by the mesh axes of the collectives that sent them. With
    ``sent``, each sending device's bytes per step are added there too, keyed by whether
    its first link is the network (or DCN)."""
    loads: dict[LinkKey, Counter[str]] = defaultdict(Counter)
    routes: dict[tuple[int, int], Route] = {}
    for c in collectives:
        runs, axis = _runs(c), _axis_label(c)
        for s, d, nbytes in routed_transfers(c, placement, target):
            r = routes.get((s, d))
            if r is None:
                r = routes[(s, d)] = route(placement[s], placement[d], target)
            for link in r:
                loads[link][axis] += nbytes * runs
            if sent is not None and r:
                sent.setdefault(s, Counter())[_network(r[0][2])] += nbytes * runs
    return loads


def _grid_links(target: Target, slices: Sequence[int]) -> list[LinkKey]:
    """Every ICI link of a TPU target's slices (wraparound ones included)."""
    out = []
    shape = target.shape
    for sl in slices:
        for flat in range(target.chips_per_slice):
            chip, rest = [], flat
            for n in shape:
                chip.append(rest % n)
                rest //= n
            for ax, n in enumerate(shape):
                if chip[ax] + 1 < n:
                    nxt = list(chip)
                    nxt[ax] += 1
                    out.append(link_key((sl, *chip), (sl, *nxt), "ici"))
                elif target.wraparound[ax] and n > 2:
                    nxt = list(chip)
                    nxt[ax] = 0
                    out.append(link_key((sl, *chip), (sl, *nxt), "wrap"))
    return out


def _ring_shape(hops: list[int], sites: list[Site], target: Target, wraps: bool) -> str:
    if len({s.slice for s in sites}) > 1:
        return "slices"
    if target.kind != "tpu":
        return "nvlink" if len({s.host for s in sites}) == 1 else "hosts"
    if any(h > 1 for h in hops[:-1]):
        return "jumps"
    if len(hops) >= 3 and hops[-1] == 1:
        return "ring"
    return "line"


def axis_rings(mesh: MeshLayout, placement: Placement, target: Target) -> list[AxisRings]:
    """Each mesh axis of size 2 or more: its rings on the chips (no bytes yet)."""
    out = []
    ids = mesh.device_ids
    sizes = mesh.axis_sizes
    for i, (name, size) in enumerate(zip(mesh.axis_names, sizes, strict=True)):
        if size < 2:
            continue
        stride = 1
        for s in sizes[i + 1 :]:
            stride *= s
        rings = []
        for flat in range(len(ids)):
            if (flat // stride) % size:
                continue
            members = tuple(ids[flat + k * stride] for k in range(size))
            # a ring over several hosts or slices visits them part by part (two levels)
            members = tuple(d for part in by_unit(members, placement, target) for d in part)
            sites = [placement[d] for d in members]
            routes = [route(sites[k], sites[(k + 1) % size], target) for k in range(size)]
            hops = [len(r) for r in routes]
            wraps = any(link[2] == "wrap" for r in routes for link in r)
            rings.append(
                Ring(
                    members,
                    tuple(hops),
                    _ring_shape(hops, sites, target, wraps),
                    wraps,
                    len({(s.slice, s.host) for s in sites}),
                    len({s.slice for s in sites}),
                )
            )
        worst = max((r.shape for r in rings), key=lambda s: _ORDER[s])
        out.append(AxisRings(name, size, tuple(rings), worst))
    return out


def layout_on_chips(
    report: Report, target: Target, mesh: MeshLayout | None = None
) -> PhysicalLayout:
    """``report``'s mesh (or ``mesh``, the same devices in another order) on ``target``'s
    chips, with its ledger routed onto the links.

    With another ``mesh``, the ledger's groups move with their mesh positions: the device at
    a position in the report's mesh hands its traffic to the device at that position in
    ``mesh`` (what recompiling with that order gives).
    """
    base = report.mesh
    if base is None:
        raise ShardvizError(
            problem(
                f"the physical layout of {report.function!r}",
                "the report has no mesh (no argument was placed with a NamedSharding)",
                "place the arguments on a Mesh (jax.device_put with NamedSharding) and explain "
                "again",
            )
        )
    mesh = mesh or base
    placement = place(mesh, target)
    if mesh is not base:  # each old id takes the site of the device now at its position
        moved = {old: placement[new] for old, new in zip(base.device_ids, mesh.device_ids,
                                                          strict=True)}  # fmt: skip
        ledger_place = Placement(moved, placement.assumed)
    else:
        ledger_place = placement
    sent: dict[int, Counter[bool]] = {}
    loads = link_loads(report.collectives, ledger_place, target, sent)
    hosts = {(placement[d].slice, placement[d].host) for d in mesh.device_ids}
    slices = sorted({s for s, _ in hosts})
    keys = set(loads)
    if target.kind == "tpu":
        keys |= set(_grid_links(target, slices))
    host_of = {(s.slice, *s.chip): s.host for s in placement.sites.values()}
    links = []
    for a, b, kind in sorted(keys):
        by_axis = loads.get((a, b, kind), Counter())
        if kind in ("network", "dcn"):
            crosses = True
        elif kind == "nvlink":
            crosses = False
        else:
            crosses = host_of.get(a, -1) != host_of.get(b, -1)
        links.append(
            LinkLoad(a, b, kind, sum(by_axis.values()), tuple(sorted(by_axis.items())), crosses)
        )
    rings = axis_rings(mesh, placement, target)
    per_axis: Counter[str] = Counter()
    ledger_axis: Counter[str] = Counter()
    for c in report.collectives:
        ledger_axis[_axis_label(c)] += ledger_bytes(c) * _runs(c)
    for link in links:
        for axis, nbytes in link.by_axis:
            per_axis[axis] += nbytes
    axes = tuple(
        AxisRings(r.axis, r.size, r.rings, r.shape, ledger_axis[r.axis], per_axis[r.axis])
        for r in rings
    )
    chips = tuple(
        PhysicalChip(
            d, placement[d].chip, placement[d].host, placement[d].slice, mesh.coords(d)
        )  # fmt: skip
        for d in mesh.device_ids
    )
    notes = [placement.assumed] if placement.assumed else []
    unknown = [c.name for c in report.collectives if c.trips is None]
    if unknown:
        notes.append(f"loop count unknown for {', '.join(unknown[:3])}: counted once")
    if any(c.kind == "all-to-all" for c in report.collectives):
        notes.append("all-to-all: each device's share sent straight to every other member")
    seconds = report.estimate.collective_seconds if report.estimate is not None else None
    return PhysicalLayout(
        function=report.function,
        target=target,
        mesh=mesh,
        chips=chips,
        links=tuple(links),
        axes=axes,
        ledger_bytes=sum(ledger_bytes(c) * _runs(c) for c in report.collectives),
        link_bytes=sum(x.bytes for x in links),
        cross_host_bytes=sum(x.bytes for x in links if x.crosses_hosts),
        network_bytes=sum(x.bytes for x in links if _network(x.kind)),
        device_chip_bytes=max((b[False] for b in sent.values()), default=0),
        device_network_bytes=max((b[True] for b in sent.values()), default=0),
        collective_seconds=seconds if mesh is base else None,
        notes=tuple(notes),
    )


def physical(
    report: Report, target: TargetLike | None = None, order: Iterable[int] | None = None
) -> PhysicalLayout:
    """The report's mesh on the physical chips: each axis's rings, the load on each link.

    Args:
        report: from ``sv.explain`` on TPU or GPU devices (or a deviceless ``sv.topology``),
            or any report with a ``target``.
        target: the hardware to lay the mesh on (``"v5e:4x4"``, ``"h100:2x8"``, a
            :class:`~shardviz.Target`); default: the report's own.
        order: device ids in another mesh order (row-major), to see the same program with
            its devices reordered (what the ``placement`` finding's fix does).

    Returns:
        A :class:`~shardviz.model.physical.PhysicalLayout`: ``print`` it, or show it in a
        notebook for the chips drawn with each axis's rings and the busiest links.

    Raises:
        ShardvizError: ``report`` is not a report, no target (fake CPU devices and none
            given), no mesh, or ``order`` is not a list of device ids (strings, bytes, sets,
            floats and booleans are refused) or not a permutation of the mesh's devices.
    """
    if not isinstance(report, Report):
        raise ArgumentError(
            problem(
                "physical",
                f"report={shown(report)} is a {type(report).__name__}, not a report",
                "pass what sv.explain returns, e.g. sv.physical(sv.explain(step, *args)), "
                "or a report read back with sv.Report.from_json(text)",
            )
        )
    mesh = None  # the mesh in the order asked for, checked before anything is estimated
    if order is not None and report.mesh is not None:
        mesh = report.mesh.reordered(order, "physical")
    resolved = resolve_target(report, target)
    if resolved is None or resolved.kind == "cpu":
        raise HardwareError(
            problem(
                f"the physical layout of {report.function!r}",
                "the report has no TPU or GPU target: its devices are CPU devices",
                'name one: sv.physical(report, target="v5e:4x4"), or explain on a deviceless '
                'topology (sv.topology("v5e:4x4").devices in the Mesh)',
            )
        )
    if report.mesh is not None and report.mesh.size > resolved.devices:
        raise HardwareError(
            problem(
                f"the physical layout of {report.function!r}",
                f"the mesh has {report.mesh.size} devices and {resolved.label} has "
                f"{resolved.devices}",
                "name a target with at least as many chips",
            )
        )
    if report.estimate is None or report.target != resolved:
        report = with_estimate(report, resolved)
        resolved = report.target or resolved
    if mesh is None:
        return layout_on_chips(report, resolved)
    layout = layout_on_chips(report, resolved, mesh)
    seconds = seconds_with(report, resolved, mesh.device_ids)
    return dataclasses.replace(layout, collective_seconds=seconds)
