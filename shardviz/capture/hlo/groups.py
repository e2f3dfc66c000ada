"""Replica groups: HLO's four encodings -> lists of ids, and which mesh axes a group spans.

The encodings XLA prints (all seen from jax 0.10.2 except sub-axes, which follow XLA's printer
and ``MeshAxesReplicaGroupList``):

- explicit: ``{{0,1,2,3},{4,5,6,7}}``; ``{}`` means every device in one group;
- iota: ``[2,4]<=[8]`` -- ``arange(8).reshape(2, 4)``, one group per row;
- transposed iota: ``[4,2]<=[2,4]T(1,0)`` -- ``arange(8).reshape(2, 4).transpose(1, 0)``,
  reshaped to ``[4, 2]``: groups ``[[0,4],[1,5],[2,6],[3,7]]``;
- mesh: ``mesh['axis_0'=2,'axis_1'=4] {'axis_0'}``, optionally
  ``mesh[...], device_ids=([2,4]T(1,0)) {...}`` (the mesh's device order as an iota or an
  explicit list) and sub-axes ``'axis_0':(1)2`` (``(pre-size)size``: the part of the axis
  after splitting off ``pre-size`` major positions). The compiler renames axes ``axis_i`` and
  may add size-1 axes, so the mesh printed here is not the user's: groups are expanded to ids
  first and matched against the user's mesh by :func:`axes_of_groups`.

The ids in HLO are *logical* ids (positions in the executable's device assignment). Map them to
jax device ids with :func:`to_device_ids` and the assignment (``device_ids[p]`` is the jax id of
logical id ``p``; the identity when not given).
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Sequence

import numpy as np

from shardviz.capture.hlo.text import HloParseError, parse_int_list, parse_int_lists
from shardviz.errors import problem
from shardviz.model import MeshLayout

__all__ = [
    "Groups",
    "axes_of_groups",
    "axes_of_pairs",
    "expand_replica_groups",
    "iota_ids",
    "mesh_form_device_array",
    "parse_axis_ref",
    "reindex_mesh",
    "to_device_ids",
]

Groups = tuple[tuple[int, ...], ...]


def iota_ids(reshape_dims: Sequence[int], perm: Sequence[int] | None = None) -> np.ndarray:
    """``arange(prod(reshape_dims)).reshape(reshape_dims).transpose(perm)``, flattened."""
    dims = tuple(int(d) for d in reshape_dims)
    arr = np.arange(math.prod(dims), dtype=np.int64).reshape(dims)
    if perm is not None and len(perm):
        arr = arr.transpose(tuple(int(p) for p in perm))
    return arr.reshape(-1)


_IOTA_ARRAY_RE = re.compile(r"^\s*\[([\d,\s]*)\]\s*(?:T\(([\d,\s]*)\))?\s*$")


def ids_of_array_text(text: str) -> np.ndarray:
    """``[2,4]T(1,0)`` / ``[8]`` (iota) or ``0,4,1,5`` (explicit) -> flat array of ids."""
    m = _IOTA_ARRAY_RE.match(text)
    if m:
        dims = parse_int_list(m.group(1))
        perm = parse_int_list(m.group(2)) if m.group(2) else None
        return iota_ids(dims, perm)
    return np.array(parse_int_list(text), dtype=np.int64)


_IOTA_GROUPS_RE = re.compile(r"^\s*\[([\d,\s]*)\]\s*<=\s*(\[[\d,\s]*\]\s*(?:T\([\d,\s]*\))?)\s*$")
_MESH_RE = re.compile(
    r"^\s*mesh\[(?P<axes>[^\]]*)\]\s*(?:,\s*device_ids=\((?P<ids>[^)]*\)?)\))?\s*"
    r"\{(?P<groups>[^}]*)\}\s*(?:,\s*device_ids=\((?P<ids2>[^)]*\)?)\))?\s*$"
)


def parse_axis_ref(text: str) -> tuple[str, tuple[int, int] | None]:
    """``'a'`` -> ``("a", None)``; ``'a':(2)4`` -> ``("a", (2, 4))`` (pre-size, size)."""
    m = re.match(r"^\s*'?([^':(]+?)'?\s*(?::\s*\((\d+)\)\s*(\d+))?\s*$", text)
    if not m:
        raise HloParseError(
            problem("replica groups", f"cannot read the mesh axis {text!r}", "check the HLO text")
        )
    sub = (int(m.group(2)), int(m.group(3))) if m.group(2) else None
    return m.group(1), sub


def _mesh_axes(text: str) -> tuple[list[str], list[int]]:
    names, sizes = [], []
    for piece in text.split(","):
        if not piece.strip():
            continue
        name, _, size = piece.rpartition("=")
        names.append(name.strip().strip("'\""))
        sizes.append(int(size))
    return names, sizes


def mesh_form_device_array(axes_text: str, ids_text: str | None) -> tuple[list[str], np.ndarray]:
    """The mesh of a mesh-form encoding: axis names and the logical ids shaped like the mesh."""
    names, sizes = _mesh_axes(axes_text)
    n = math.prod(sizes)
    ids = ids_of_array_text(ids_text) if ids_text else np.arange(n, dtype=np.int64)
    if ids.size != n:
        raise HloParseError(
            problem(
                "replica groups",
                f"the mesh {sizes} holds {n} devices but device_ids lists {ids.size}",
                "check the HLO text",
            )
        )
    return names, ids.reshape(sizes)


def _reshape_for_axis(refs: list[tuple[int, int] | None], full: int) -> tuple[list[int], list[int]]:
    """XLA's split of one mesh axis for the (sub-)axis refs on it: (reshape dims, aggregated
    positions in the refs' order)."""
    if len(refs) == 1:
        sub = refs[0]
        if sub is None:
            return [full], [0]
        pre, size = sub
        return [pre, size, full // (pre * size)], [1]
    if any(r is None for r in refs):
        raise HloParseError(
            problem("replica groups", "a full axis is listed with its own sub-axes", "check HLO")
        )
    order = sorted(range(len(refs)), key=lambda i: refs[i][0])  # type: ignore[index]
    dims: list[int] = []
    agg_sorted: list[int] = []
    prefix = 1
    for i in order:
        pre, size = refs[i]  # type: ignore[misc]
        if pre != prefix:
            dims.append(pre // prefix)
            prefix *= pre // prefix
        agg_sorted.append(len(dims))
        dims.append(size)
        prefix *= size
    if prefix != full:
        dims.append(full // prefix)
    agg = [0] * len(refs)
    for k, i in enumerate(order):
        agg[i] = agg_sorted[k]
    return dims, agg


def reindex_mesh(
    device_array: np.ndarray, names: Sequence[str], refs_text: Sequence[str]
) -> tuple[np.ndarray, list[int]]:
    """Split the mesh's axes the way XLA does for the (sub-)axis refs named in ``refs_text``.

    Returns the device array reshaped so that each ref is one dimension of its own, and the
    position of each ref's dimension (in ``refs_text`` order). An axis no ref names stays whole.
    """
    sizes = list(device_array.shape)
    refs: list[tuple[int, tuple[int, int] | None]] = []
    for piece in refs_text:
        name, sub = parse_axis_ref(piece)
        if name not in names:
            raise HloParseError(
                problem("HLO mesh", f"axis {name!r} is not in the mesh {list(names)}", "check HLO")
            )
        refs.append((list(names).index(name), sub))
    per_axis: dict[int, list[tuple[int, int] | None]] = {}
    for axis, sub in refs:
        per_axis.setdefault(axis, []).append(sub)
    split: dict[int, tuple[list[int], list[int]]] = {
        axis: _reshape_for_axis(subs, sizes[axis]) for axis, subs in per_axis.items()
    }
    new_sizes: list[int] = []
    offsets: list[int] = []
    for axis, size in enumerate(sizes):
        offsets.append(len(new_sizes))
        new_sizes.extend(split[axis][0] if axis in split else [size])
    consumed: dict[int, int] = {}
    positions: list[int] = []
    for axis, _ in refs:
        k = consumed.get(axis, 0)
        consumed[axis] = k + 1
        positions.append(offsets[axis] + split[axis][1][k])
    return device_array.reshape(new_sizes), positions


def _expand_mesh_form(axes_text: str, ids_text: str | None, groups_text: str) -> np.ndarray:
    names, device_array = mesh_form_device_array(axes_text, ids_text)
    refs_text = [p for p in groups_text.split(",") if p.strip()]
    arr, grouped = reindex_mesh(device_array, names, refs_text)
    others = [i for i in range(arr.ndim) if i not in grouped]
    group_size = math.prod(arr.shape[i] for i in grouped) if grouped else 1
    return arr.transpose(others + grouped).reshape(-1, group_size)


def expand_replica_groups(text: str | None, num_devices: int | None = None) -> Groups:
    """Expand any of HLO's replica-group encodings to groups of logical ids.

    Args:
        text: the ``replica_groups=`` value (explicit, iota, transposed iota or mesh form).
            ``None``, ``""`` and ``{}`` mean all devices in one group.
        num_devices: how many devices the program runs on; needed only for the empty form.

    Returns:
        One tuple of ids per group, each in the order the encoding lists them.

    Raises:
        HloParseError: if the text is none of the four encodings.
    """
    t = (text or "").strip()
    if t in ("", "{}"):
        if num_devices is None:
            raise HloParseError(
                problem(
                    "expand_replica_groups",
                    "empty replica groups mean all devices, but the device count is unknown",
                    "pass num_devices",
                )
            )
        return (tuple(range(num_devices)),)
    if t.startswith("{"):
        return parse_int_lists(t)
    m = _IOTA_GROUPS_RE.match(t)
    if m:
        shape = parse_int_list(m.group(1))
        ids = ids_of_array_text(m.group(2))
        if len(shape) != 2 or math.prod(shape) != ids.size:
            raise HloParseError(
                problem("replica groups", f"{t!r} is not a [groups,size] iota", "check the text")
            )
        return tuple(tuple(int(v) for v in row) for row in ids.reshape(shape))
    m = _MESH_RE.match(t)
    if m:
        ids_text = m.group("ids") or m.group("ids2")
        arr = _expand_mesh_form(m.group("axes"), ids_text, m.group("groups"))
        return tuple(tuple(int(v) for v in row) for row in arr)
    raise HloParseError(
        problem(
            "expand_replica_groups",
            f"unknown replica-group encoding {t[:80]!r}",
            "expected {{..},..}, [G,S]<=[..]T(..) or mesh[..] {..}",
        )
    )


def to_device_ids(groups: Groups, device_ids: Sequence[int] | None) -> Groups:
    """Logical ids -> jax device ids (``device_ids[p]`` for logical id ``p``)."""
    if device_ids is None:
        return groups
    ids = list(device_ids)
    return tuple(tuple(ids[p] for p in g) for g in groups)


def _row_major(coords: tuple[int, ...], axes: Sequence[int], sizes: Sequence[int]) -> int:
    index = 0
    for a in axes:
        index = index * sizes[a] + coords[a]
    return index


def axes_of_groups(groups: Groups, mesh: MeshLayout | None) -> tuple[str, ...]:
    """The user's mesh axes the groups span, in the order the groups enumerate them.

    Finds the ordered subset ``S`` of the mesh's axes such that every group is exactly the
    devices that share their coordinates on the other axes, listed row-major over ``S`` (in
    ``S``'s order). The axes are never matched by position, so the compiler's renaming
    (``axis_i``) and its extra size-1 axes do not matter. When no order fits exactly but the
    groups are such sets in another order, the axes come back in mesh order (reductions do not
    care about order). Groups of one device span no axis: ``()``. ``()`` as well when the groups
    match no set of axes (e.g. a sub-axis), or hold ids that are not in the mesh.
    """
    if mesh is None or not groups or not groups[0]:
        return ()
    try:
        coords = {d: mesh.coords(d) for g in groups for d in g}
    except KeyError:
        return ()
    sizes = mesh.axis_sizes
    first = groups[0]
    varying = [
        a for a in range(mesh.ndim) if sizes[a] > 1 and len({coords[d][a] for d in first}) > 1
    ]
    if math.prod(sizes[a] for a in varying) != len(first):
        return ()

    by_coord = {mesh.coords(d): d for d in mesh.device_ids}

    def expected(g: tuple[int, ...], order: Sequence[int]) -> tuple[int, ...]:
        base = coords[g[0]]
        out = []
        for pos in itertools.product(*(range(sizes[a]) for a in order)):
            c = list(base)
            for a, v in zip(order, pos, strict=True):
                c[a] = v
            out.append(tuple(c))
        return tuple(by_coord[c] for c in out)

    for order in itertools.permutations(varying):
        if all(expected(g, order) == tuple(g) for g in groups):
            return tuple(mesh.axis_names[a] for a in order)
    # Same sets in another order: report the axes in mesh order.
    if all(len(g) == len(first) and set(expected(g, varying)) == set(g) for g in groups):
        return tuple(mesh.axis_names[a] for a in varying)
    return ()


def axes_of_pairs(pairs: Sequence[tuple[int, int]], mesh: MeshLayout | None) -> tuple[str, ...]:
    """The mesh axes along which a collective-permute's sources and targets differ, in mesh
    order (``()`` with no mesh, or when an id is not in it)."""
    if mesh is None:
        return ()
    try:
        differ: set[int] = set()
        for s, t in pairs:
            cs, ct = mesh.coords(s), mesh.coords(t)
            differ.update(a for a in range(mesh.ndim) if cs[a] != ct[a])
    except KeyError:
        return ()
    return tuple(mesh.axis_names[a] for a in sorted(differ))
