"""Hand-built model objects for the renderer tests: meshes and even (jax-style) layouts.

Nothing here imports jax. ``make_layout`` slices an array the way a ``NamedSharding`` does:
dim ``d`` split over mesh axes ``spec[d]`` (row-major over those axes), chunks of
``ceil(n / k)``, replicas numbered in mesh order.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from shardviz.model import ArrayLayout, Device, MeshLayout, Tile, TreeLayout

SpecLike = Sequence[str | tuple[str, ...] | None]


def make_mesh(
    names: Sequence[str],
    sizes: Sequence[int],
    processes: int = 1,
    platform: str = "cpu",
    kind: str = "cpu",
    ids: Sequence[int] | None = None,
) -> MeshLayout:
    """A mesh with device ids 0..n-1 in row-major order (or ``ids``), split evenly over processes."""
    n = math.prod(sizes)
    ids = list(range(n)) if ids is None else list(ids)
    per = max(1, n // processes)
    devices = tuple(
        Device(id=i, process_index=min(k // per, processes - 1), platform=platform, kind=kind)
        for k, i in enumerate(ids)
    )
    return MeshLayout(tuple(names), tuple(sizes), devices)


def norm_spec(spec: SpecLike, ndim: int) -> tuple[tuple[str, ...], ...]:
    out = []
    for entry in list(spec) + [None] * (ndim - len(spec)):
        if entry is None:
            out.append(())
        elif isinstance(entry, str):
            out.append((entry,))
        else:
            out.append(tuple(entry))
    return tuple(out)


def make_layout(
    name: str,
    shape: Sequence[int],
    spec: SpecLike,
    mesh: MeshLayout,
    dtype: str = "float32",
    itemsize: int = 4,
) -> ArrayLayout:
    """The layout of an array of ``shape`` placed with ``spec`` on ``mesh``."""
    shape = tuple(shape)
    nspec = norm_spec(spec, len(shape))
    tiles = []
    seen: dict[tuple, int] = {}
    for dev in mesh.devices:
        coords = dict(zip(mesh.axis_names, mesh.coords(dev.id), strict=True))
        index = []
        for n, entry in zip(shape, nspec, strict=True):
            k = math.prod(mesh.axis_size(a) for a in entry)
            pos = 0
            for a in entry:
                pos = pos * mesh.axis_size(a) + coords[a]
            chunk = -(-n // k) if k else n
            start = min(n, pos * chunk)
            stop = min(n, start + chunk)
            index.append(slice(start, stop))
        tshape = tuple(s.stop - s.start for s in index)
        key = tuple((s.start, s.stop) for s in index)
        replica = seen.get(key, 0)
        seen[key] = replica + 1
        tiles.append(
            Tile(dev.id, tuple(index), tshape, math.prod(tshape) * itemsize, replica_id=replica)
        )
    return ArrayLayout(name, shape, dtype, itemsize, nspec, mesh, tuple(tiles))


def mesh_2x4() -> MeshLayout:
    return make_mesh(("data", "model"), (2, 4))


def tree_example() -> TreeLayout:
    """A small parameter tree on the 2x4 mesh: tiled, partially tiled, replicated leaves."""
    mesh = mesh_2x4()
    return TreeLayout(
        (
            make_layout("params.dense.w", (8, 16), ("data", "model"), mesh),
            make_layout("params.dense.b", (16,), ("model",), mesh),
            make_layout("params.embed", (100, 32), (None, "model"), mesh, "bfloat16", 2),
            make_layout("opt.step", (), (), mesh, "int32", 4),
        )
    )


def mesh_3axis() -> MeshLayout:
    return make_mesh(("pipe", "data", "model"), (2, 2, 4))


def mesh_4axis() -> MeshLayout:
    return make_mesh(("a", "b", "c", "d"), (2, 2, 2, 2))


def mesh_2x64() -> MeshLayout:
    return make_mesh(("data", "model"), (2, 64))


def mesh_2x1024() -> MeshLayout:
    return make_mesh(("data", "model"), (2, 1024))


def tree_uneven() -> TreeLayout:
    """Leaves whose dims do not divide evenly, so devices hold different amounts."""
    mesh = mesh_2x4()
    return TreeLayout(
        (
            make_layout("w", (10, 6), ("model", "data"), mesh),
            make_layout("b", (6,), ("model",), mesh),
        )
    )
