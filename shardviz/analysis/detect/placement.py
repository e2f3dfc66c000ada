"""Findings about where the data sits: silent replication, uneven splits, imbalance, idle
mesh axes and a peak over the target's HBM."""

from __future__ import annotations

import math
from collections import defaultdict

from shardviz.analysis.detect.candidate import Candidate, drop_constraint_fix, mesh_fix, spec_fix
from shardviz.analysis.detect.inputs import (
    axis_sizes,
    format_bytes,
    full_bytes,
    is_constraint,
    leaf_group,
    padded,
    spec_axes,
    spec_code,
    split_dim_for,
    ways_of,
    where_of,
    with_axis,
)
from shardviz.model import ArrayLayout, Report, ShardingOf
from shardviz.model.findings import Finding, FindingCost, Where
from shardviz.model.tiles import dtype_bits

#: Ops that cut pieces out of (or into) a split array: the partitioner's own pieces of a
#: roll, a shift or a concatenation carry the split along; uneven on paper, never computed
#: on or kept, so no finding.
SLICING = frozenset({"slice", "concatenate", "pad", "dynamic-slice", "dynamic-update-slice"})
#: A replicated leaf is worth a finding when it is at least this share of its argument.
LARGE_SHARE = 0.10
#: ... and its peers split over the axis hold at least this share of the argument.
PEERS_SHARE = 0.5
#: Per-device memory differing by more than this ratio (largest over smallest) is imbalance.
IMBALANCE_RATIO = 1.25
#: ... and by at least this many bytes (small arrays on one device are noise).
MIN_IMBALANCE_BYTES = 1 << 20


#: The group of arguments that are each one array (``mlp(x, w1, w2)``): they are one
#: another's peers.
LOOSE = "the arguments"


def replicated(report: Report) -> list[Candidate]:
    """[replicated] A large leaf replicated over an axis its peers are split over.

    Peers are the leaves of one argument (``params/...``); arguments that are each one array
    (``mlp(x, w1, w2)``) are one another's peers, and there a leaf's peers split over the axis
    (weights: at least half its size, split on a dim other than 0, not an input split by its
    batch) must hold :data:`PEERS_SHARE` of the *other* arguments' bytes (``w1`` split by
    columns beside ``w2`` whole)."""
    sizes = axis_sizes(report)
    groups: dict[str, list[ArrayLayout]] = defaultdict(list)
    for leaf in report.arguments.leaves:
        groups[leaf_group(leaf.name)].append(leaf)
    loose = [v[0] for k, v in groups.items() if len(v) == 1 and v[0].name == k]
    if len(loose) > 1:
        for leaf in loose:
            del groups[leaf.name]
        groups[LOOSE] = loose
    out = []
    for group, leaves in groups.items():
        total = sum(full_bytes(x) for x in leaves)
        for axis, size in sizes.items():
            if size < 2 or not total:
                continue
            for leaf in leaves:
                peers = [
                    x for x in leaves
                    if x is not leaf and len(x.shape) == len(leaf.shape) and x.shape
                ]  # fmt: skip
                mine = full_bytes(leaf)
                if group == LOOSE:  # weights beside it, not inputs split by their batch
                    peers = [x for x in peers if _weight_split(x, axis, mine)]
                split = sum(full_bytes(x) for x in peers if axis in spec_axes(x.spec))
                of = total - mine if group == LOOSE else total
                if (
                    axis in spec_axes(leaf.spec)
                    or not leaf.shape
                    or mine < LARGE_SHARE * total
                    or split < PEERS_SHARE * of
                ):
                    continue
                split_peers = [x for x in peers if axis in spec_axes(x.spec)]
                out.append(_replicated(report, leaf, axis, size, sizes, group, split_peers))
    return out


def _weight_split(peer: ArrayLayout, axis: str, mine: int) -> bool:
    """Whether a loose argument counts as a split peer of a leaf of ``mine`` bytes: at least
    half its size, split over ``axis`` on a dim other than 0 (dim 0 of a loose argument is
    most often an input's batch)."""
    spec = padded(peer.spec or (), len(peer.shape))
    return 2 * full_bytes(peer) >= mine and any(axis in e for e in spec[1:])


def _replicated(
    report: Report,
    leaf: ArrayLayout,
    axis: str,
    size: int,
    sizes: dict[str, int],
    group: str,
    peers: list[ArrayLayout],
) -> Candidate:
    spec = padded(leaf.spec or (), len(leaf.shape))
    saved = leaf.max_bytes_per_device - leaf.max_bytes_per_device // size
    dim = _peer_dim(leaf, spec, axis, sizes, peers)
    fixes = []
    if dim is not None:
        new = with_axis(spec, dim, axis)
        fixes.append(spec_fix(leaf.name, new, f"split dim {dim} over {axis!r} like its peers"))
    finding = Finding(
        kind="replicated",
        severity="warning",
        title=f"{leaf.name} is whole on every {axis!r} device while the rest of {group} is split",
        why=(
            f"{leaf.name} ({format_bytes(leaf.max_bytes_per_device)} per device, spec "
            f"{spec_code(leaf.spec)}) is replicated over the {size} devices of mesh axis "
            f"{axis!r}, while most of {group} is split over {axis!r}. Each of those devices "
            f"keeps its own full copy: {format_bytes(saved)} per device that splitting it "
            "would save. Nothing in the program asked for this; it is the spec it was placed "
            "with."
            + (
                ""
                if dim is not None
                else f" No dim of {leaf.name} divides by {size}, so splitting it needs padding."
            )
        ),  # fmt: skip
        cost=FindingCost(kind="memory", bytes=saved),
        where=Where(leaf=leaf.name, spec=leaf.spec),
    )
    return Candidate(finding, tuple(fixes), goal="peak")


def _peer_dim(
    leaf: ArrayLayout, spec: tuple, axis: str, sizes: dict[str, int], peers: list[ArrayLayout]
) -> int | None:
    """The dim of ``leaf`` to split over ``axis``: one of the size a peer splits over it (the
    hidden dim ``w1``'s columns and ``w2``'s rows share), else the largest that divides."""
    split_sizes = {
        n
        for x in peers
        for n, e in zip(x.shape, padded(x.spec or (), len(x.shape)), strict=True)
        if axis in e
    }
    for d, n in enumerate(leaf.shape):
        k = ways_of(spec[d], sizes) * sizes[axis]
        if n in split_sizes and n % k == 0:
            return d
    return split_dim_for(leaf.shape, spec, axis, sizes)


def uneven(report: Report) -> list[Candidate]:
    """[uneven] Arrays split over a dim the axes do not divide: padded tiles. jax refuses
    such arguments, so these are values inside the program (a constraint, or propagation);
    the values of one shape and spec are one finding (one split, carried along)."""
    sizes = axis_sizes(report)
    groups: dict[tuple, list[ShardingOf]] = defaultdict(list)
    for s in report.intermediates:
        if s.spec is None or not s.shape:
            continue
        spec = padded(s.spec, len(s.shape))
        if any(e and n % ways_of(e, sizes) for n, e in zip(s.shape, spec, strict=True)):
            groups[(s.shape, spec, s.dtype)].append(s)
    return [
        _uneven(report, shape, spec, vs, sizes)
        for (shape, spec, _), vs in groups.items()
        if not all(v.op in SLICING for v in vs)
    ]


def _uneven(
    report: Report, shape: tuple, spec: tuple, vs: list[ShardingOf], sizes: dict[str, int]
) -> Candidate:
    constraints = [v for v in vs if is_constraint(v) and v.source is not None]
    s = constraints[0] if constraints else vs[0]
    bad = [
        (d, n, ways_of(e, sizes)) for d, (n, e) in enumerate(zip(shape, spec, strict=True))
        if e and n % ways_of(e, sizes)
    ]  # fmt: skip
    ways = math.prod(ways_of(e, sizes) for e in spec)
    per_tile = math.prod(-(-n // ways_of(e, sizes)) for n, e in zip(shape, spec, strict=True))
    padding = (per_tile * ways - math.prod(shape)) * _itemsize(s.dtype) // max(1, ways)
    dims = ", ".join(f"dim {d} ({n} over {k} devices)" for d, n, k in bad)
    fixes = [
        drop_constraint_fix(
            v.source.location, v.source.text, "let the compiler choose", v.source.place
        )
        for v in constraints
        if v.source is not None
    ]
    lines = sorted({v.source.place for v in vs if v.source is not None})
    finding = Finding(
        kind="uneven",
        severity="warning",
        title=f"{s.dtype}{list(shape)} values are split unevenly: {dims}",
        why=(
            f"{len(vs)} value{'s' if len(vs) > 1 else ''} of shape {s.dtype}{list(shape)} "
            f"(from {s.name}) have spec {spec_code(s.spec)}, which splits {dims}: that does "
            "not divide evenly. Every device gets a tile of the largest size, padded "
            f"({format_bytes(padding)} of padding per device on average), the devices "
            "compute on the padding too, and putting the value back together needs a "
            "gather and a slice." + (f" Lines: {', '.join(lines[:4])}." if len(lines) > 1 else "")
        ),
        cost=FindingCost(kind="memory", bytes=max(0, padding)),
        where=where_of(s.source, leaf=s.name, spec=s.spec, values=tuple(v.name for v in vs)),
    )
    return Candidate(finding, tuple(fixes), goal="gone")


def _itemsize(dtype: str) -> int:
    return max(1, dtype_bits(dtype) // 8)


def _constraint_at(report: Report, line: str) -> str:
    """The code of a sharding constraint at ``line`` ("" when there is none)."""
    for s in report.intermediates:
        if s.source and s.source.location == line and is_constraint(s):
            return s.source.text or "with_sharding_constraint"
    return ""


def held_per_device(report: Report) -> dict[int, int]:
    """Bytes of the program's own arguments and outputs on each of its devices: what it
    holds, whatever else lives on the devices."""
    ids = report.mesh.device_ids if report.mesh is not None else ()
    held = dict.fromkeys(ids, 0)
    for tree in (report.arguments, report.outputs):
        for d, b in tree.bytes_per_device.items():
            held[d] = held.get(d, 0) + b
    return held


def imbalance(report: Report) -> list[Candidate]:
    """[imbalance] The program's arguments and outputs take much more memory on some of
    its devices than on others. Arrays outside the program are not counted: they are not
    the program's doing (the memory view's live device statistics show them)."""
    figures = held_per_device(report)
    if len(figures) < 2:
        return []
    most, least = max(figures.values()), min(figures.values())
    if most <= IMBALANCE_RATIO * max(1, least) or most - least < MIN_IMBALANCE_BYTES:
        return []
    heavy = tuple(sorted(d for d, b in figures.items() if b == most))
    light = tuple(sorted(d for d, b in figures.items() if b == least))
    leaves = sorted(
        (leaf for tree in (report.arguments, report.outputs) for leaf in tree),
        key=lambda leaf: (
            -(leaf.bytes_per_device.get(heavy[0], 0) - leaf.bytes_per_device.get(light[0], 0))
        ),
    )
    named = [
        leaf.name
        for leaf in leaves[:3]
        if leaf.bytes_per_device.get(heavy[0], 0) > leaf.bytes_per_device.get(light[0], 0)
    ]
    finding = Finding(
        kind="imbalance",
        severity="warning",
        title=(
            f"device{'s' if len(heavy) > 1 else ''} {_ids(heavy)} "
            f"hold{'' if len(heavy) > 1 else 's'} "
            f"{most / max(1, least):.1f}x the program's memory of the lightest"
        ),
        why=(
            f"The program's arguments and outputs take {format_bytes(most)} on the fullest "
            f"devices and {format_bytes(least)} on the lightest. A program fits only if its "
            "fullest device fits, so the difference is memory the other devices leave unused."
            + (f" Most of it: {', '.join(named)}." if named else "")
        ),
        cost=FindingCost(kind="memory", bytes=most - least),
        where=Where(devices=heavy, leaf=named[0] if named else ""),
    )
    return [Candidate(finding, (), goal="peak")]


def _ids(ids: tuple[int, ...]) -> str:
    shown = ", ".join(f"d{i}" for i in ids[:6])
    return shown + (", …" if len(ids) > 6 else "")


def idle_axis(report: Report) -> list[Candidate]:
    """[idle-axis] A mesh axis nothing is split over: its devices repeat the same work."""
    mesh = report.mesh
    if mesh is None:
        return []
    used: set[str] = set()
    for leaf in (*report.arguments.leaves, *report.outputs.leaves):
        used |= spec_axes(leaf.spec)
    for s in report.intermediates:
        used |= spec_axes(s.spec)
    for c in report.collectives:
        used |= set(c.axes)
    out = []
    sizes = axis_sizes(report)
    for axis, size in sizes.items():
        if size < 2 or axis in used:
            continue
        flops = report.cost.flops_per_device if report.cost else None
        repeated = flops * (size - 1) / size if flops else None  # 0: not counted
        fixes = []
        others = [a for a in mesh.axis_names if a != axis and a in used]
        for other in sorted(others, key=lambda a: -sizes[a]):
            shape = tuple(
                sizes[a] * size if a == other else (1 if a == axis else sizes[a])
                for a in mesh.axis_names
            )
            fixes.append(mesh_fix(shape, mesh.axis_names, f"fold {axis!r} into {other!r}"))
        out.append(
            Candidate(
                Finding(
                    kind="idle-axis",
                    severity="warning",
                    title=f"mesh axis {axis!r} ({size} devices) splits nothing",
                    why=(
                        f"No argument, output or value of the program is split over "
                        f"{axis!r}, so the {size} devices along it each do the same work on "
                        "the same data: the program runs as if the mesh were "
                        f"{mesh.size // size} devices, with every result computed {size} "
                        f"times. Split something over {axis!r} (e.g. the batch), or fold the "
                        "axis into another."
                    ),
                    cost=FindingCost(kind="work", bytes=0, flops=repeated),
                    where=Where(),
                ),
                tuple(fixes),
                goal="flops",
            )
        )
    return out


def over_hbm(report: Report) -> list[Candidate]:
    """[over-hbm] The peak per device is over the target's HBM."""
    target = report.target
    if target is None:
        return []
    hbm = target.hardware.hbm_bytes
    peak = report.memory.peak_bytes
    if peak <= hbm:
        return []
    sizes = axis_sizes(report)
    fixes = []
    leaves = sorted(report.arguments.leaves, key=lambda x: -x.max_bytes_per_device)
    for leaf in leaves[:4]:
        spec = padded(leaf.spec or (), len(leaf.shape))
        for axis in sorted(sizes, key=lambda a: -sizes[a]):
            if axis in spec_axes(spec) or sizes[axis] < 2:
                continue
            dim = split_dim_for(leaf.shape, spec, axis, sizes)
            if dim is not None:
                new = with_axis(spec, dim, axis)
                fixes.append(spec_fix(leaf.name, new, f"split it over {axis!r} too"))
                break
    finding = Finding(
        kind="over-hbm",
        severity="error",
        title=(
            f"peak {format_bytes(peak)} per device is {format_bytes(peak - hbm)} over the "
            f"{format_bytes(hbm)} of HBM a {target.hardware.name} has"
        ),
        why=(
            f"The compiler's figures put one device's peak at {format_bytes(peak)} "
            f"({report.memory.peak_definition}), {format_bytes(peak - hbm)} more than the "
            f"{format_bytes(hbm)} of HBM on a {target.hardware.name}: the program would not "
            "fit there. Split the largest replicated arrays over more devices (FSDP), or "
            "rematerialize activations."
        ),
        cost=FindingCost(kind="memory", bytes=peak - hbm),
        where=Where(leaf=leaves[0].name if leaves else "", spec=leaves[0].spec if leaves else None),
    )
    return [Candidate(finding, tuple(fixes), goal="peak")]
