"""The tiles of an array placed by a partition spec, worked out without jax.

Pure arithmetic on the model's :class:`~shardviz.model.MeshLayout`: where a ``NamedSharding``
puts each piece of an array (and how GSPMD pads a dim that does not divide evenly). Values the
compiler reports only by their spec (a report's intermediates) get tiles this way, so every view
can draw them like an array that exists.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from shardviz.errors import SpecError
from shardviz.model.array import ArrayLayout, Spec, Tile, format_spec
from shardviz.model.mesh import MeshLayout

_BITS = re.compile(r"^(?:b?float|u?int|complex)(\d+)")

#: How a dim is cut over the mesh: ``(mesh position, size)`` of each axis of its spec entry.
_Axes = tuple[tuple[int, int], ...]


def dtype_bits(dtype: str) -> int:
    """Bits per element of a dtype in numpy/jax spelling (``float32`` -> 32, ``bool`` -> 8).

    Raises:
        ValueError: for a dtype whose size the name does not say.
    """
    if dtype == "bool":
        return 8
    m = _BITS.match(dtype)
    if m is None:
        raise ValueError(f"unknown element size for dtype {dtype!r}")
    return int(m.group(1))


def padded_spec(shape: Sequence[int], spec: Spec, mesh: MeshLayout) -> Spec:
    """``spec`` with one entry per dim of ``shape`` (missing entries unsplit), checked on ``mesh``.

    Raises:
        SpecError: the spec names an axis the mesh lacks, uses one twice, or has more entries
            than the array has dims.
    """
    if len(spec) > len(shape):
        raise SpecError(f"spec {format_spec(spec)} has {len(spec)} entries for rank {len(shape)}")
    used: list[str] = []
    for entry in spec:
        for axis in entry:
            if axis not in mesh.axis_names:
                raise SpecError(
                    f"spec {format_spec(spec)} names axis {axis!r}, not one of the mesh's "
                    f"{list(mesh.axis_names)}"
                )
            if axis in used:
                raise SpecError(f"spec {format_spec(spec)} uses axis {axis!r} twice")
            used.append(axis)
    return tuple(tuple(e) for e in spec) + ((),) * (len(shape) - len(spec))


def _cut(n: int, entry: Sequence[str], mesh: MeshLayout) -> tuple[int, _Axes]:
    """How a dim of length ``n`` split over ``entry`` is cut, worked out once per dim.

    The dim is cut into ``k`` chunks of ``ceil(n / k)`` (the last ones short or empty when
    ``k`` does not divide ``n``), numbered row-major over the entry's axes in its order.
    Returns the chunk length and, per axis of the entry, its position in the mesh and size.
    """
    axes = tuple((mesh.axis_names.index(a), mesh.axis_size(a)) for a in entry)
    k = math.prod(size for _, size in axes)
    return -(-n // k), axes


def _interval(n: int, chunk: int, axes: _Axes, coord: Sequence[int]) -> slice:
    """The part of a dim of length ``n`` (cut as :func:`_cut` says) held at mesh ``coord``."""
    pos = 0
    for i, size in axes:
        pos = pos * size + coord[i]
    start = min(n, pos * chunk)
    return slice(start, min(n, start + chunk))


def tiles_from_spec(
    shape: Sequence[int], dtype: str, spec: Spec, mesh: MeshLayout
) -> tuple[Tile, ...]:
    """The tile each device of ``mesh`` holds of an array placed with ``spec``.

    For even shapes it equals what ``NamedSharding(mesh, P(*spec)).devices_indices_map(shape)``
    gives, with replicas numbered in mesh order as :func:`shardviz.layout` numbers them.

    Args:
        shape: the global shape.
        dtype: the element type in numpy/jax spelling (for the tiles' bytes).
        spec: one entry per dim (fewer means the rest unsplit): the mesh axes it is split over.
        mesh: the mesh the array lives on.

    Returns:
        One :class:`~shardviz.model.Tile` per device, in mesh order.

    Raises:
        SpecError: the spec does not fit the mesh or the shape (see :func:`padded_spec`).
        ValueError: the dtype's size is unknown.
    """
    shape = tuple(int(n) for n in shape)
    entries = padded_spec(shape, spec, mesh)
    bits = dtype_bits(dtype)
    seen: dict[tuple[tuple[int, int], ...], int] = {}
    tiles = []
    cuts = [(n, *_cut(n, e, mesh)) for n, e in zip(shape, entries, strict=True)]
    for dev in mesh.devices:
        coord = mesh.coords(dev.id)
        index = tuple(_interval(n, chunk, axes, coord) for n, chunk, axes in cuts)
        tshape = tuple(s.stop - s.start for s in index)
        key = tuple((s.start, s.stop) for s in index)
        replica = seen.get(key, 0)
        seen[key] = replica + 1
        nbytes = (math.prod(tshape) * bits + 7) // 8
        tiles.append(Tile(dev.id, index, tshape, nbytes, replica))
    return tuple(tiles)


def layout_from_spec(
    name: str, shape: Sequence[int], dtype: str, spec: Spec, mesh: MeshLayout
) -> ArrayLayout:
    """The :class:`~shardviz.model.ArrayLayout` of an array known only by its spec.

    The same object :func:`shardviz.layout` gives for a real array (tiles from
    :func:`tiles_from_spec`, the spec padded to the array's rank), so every view draws it.
    A sub-byte dtype counts as one byte per element in ``itemsize``; its tiles' bytes are exact.

    Raises:
        SpecError: the spec does not fit the mesh or the shape.
        ValueError: the dtype's size is unknown.
    """
    shape = tuple(int(n) for n in shape)
    tiles = tiles_from_spec(shape, dtype, spec, mesh)
    itemsize = max(1, dtype_bits(dtype) // 8)
    return ArrayLayout(name, shape, dtype, itemsize, padded_spec(shape, spec, mesh), mesh, tiles)
