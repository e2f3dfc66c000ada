"""jax arrays, hypothetical arrays and pytrees -> the model's tile layouts."""

from __future__ import annotations

import functools
import math
import numbers
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import jax
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec, SingleDeviceSharding

from shardviz.capture.mesh import Mesh, device_of, mesh_layout
from shardviz.capture.spec import normalize_spec
from shardviz.errors import LeafError, ShardvizError, problem
from shardviz.model import ArrayLayout, Device, MeshLayout, Spec, Tile, TreeLayout
from shardviz.model.array import DEVICE_KIND


def _device(d: Any) -> Device:
    return device_of(d)


def _spec_and_mesh(
    sharding: Any, shape: tuple[int, ...], name: str
) -> tuple[Spec | None, MeshLayout]:
    if isinstance(sharding, NamedSharding):
        mesh = mesh_layout(sharding.mesh)
        entries = tuple(sharding.spec)
        # Entries jax allows that place nothing: UNCONSTRAINED (compiler's choice) means unsplit here.
        entries = tuple(None if e is PartitionSpec.UNCONSTRAINED else e for e in entries)
        spec = normalize_spec(entries, shape, mesh.axis_names, mesh.axis_sizes, name=name)
        return spec, mesh
    if isinstance(sharding, SingleDeviceSharding):
        (dev,) = sharding.device_set
        return tuple(() for _ in shape), MeshLayout((), (), (_device(dev),))
    devs = tuple(_device(d) for d in sharding._device_assignment)  # any other jax Sharding
    return None, MeshLayout(("devices",), (len(devs),), devs)


def _tiles(
    sharding: Any, shape: tuple[int, ...], itemsize: int, mesh: MeshLayout
) -> tuple[Tile, ...]:
    index_map = {d.id: idx for d, idx in sharding.devices_indices_map(shape).items()}
    seen: dict[tuple, int] = {}
    tiles = []
    for dev in mesh.devices:
        idx = tuple(slice(*s.indices(n)[:2]) for s, n in zip(index_map[dev.id], shape, strict=True))
        tshape = tuple(s.stop - s.start for s in idx)
        key = tuple((s.start, s.stop) for s in idx)
        replica = seen.get(key, 0)
        seen[key] = replica + 1
        tiles.append(Tile(dev.id, idx, tshape, math.prod(tshape) * itemsize, replica))
    return tuple(tiles)


def layout_of(
    shape: Sequence[int], dtype: Any, sharding: Any, *, name: str = "array"
) -> ArrayLayout:
    """The layout of an array of this shape and dtype under ``sharding`` (nothing allocated).

    Layouts are kept per (shape, dtype, sharding): a model's leaves share a few shardings
    (a 256-chip transformer step: 155 leaves, 10 layouts), and each layout lists a tile per
    device.
    """
    shape = _checked_shape(shape, name)
    try:
        # jax's typed PRNG keys (key<fry>, in Flax NNX's Rngs state) are extended dtypes, not
        # numpy's: named as jax names them, each element the bytes of its key data.
        extended = jax.dtypes.issubdtype(dtype, jax.dtypes.extended)
        dt = dtype if extended else np.dtype(dtype)
    except TypeError as err:
        raise ShardvizError(
            problem(
                name,
                f"dtype {dtype!r} is not a dtype ({err})",
                "give a numpy/jax dtype such as 'float32' or jnp.bfloat16",
            )  # fmt: skip
        ) from err
    try:
        shared = _shared_layout(shape, dt, sharding)
    except ShardvizError:  # say it again with the leaf's name (failures are not kept)
        return _layout(shape, dt, sharding, name)
    except TypeError:  # a sharding that cannot be a key
        return _layout(shape, dt, sharding, name)
    return shared if shared.name == name else replace(shared, name=name)


def _checked_shape(shape: Any, name: str) -> tuple[int, ...]:
    """``shape`` as whole sizes >= 0, or a ShardvizError naming the dim."""
    try:
        dims = tuple(shape)
    except TypeError as err:
        raise ShardvizError(
            problem(name, f"shape {shape!r} is not a sequence of sizes", "give e.g. (8, 128)")
        ) from err
    out = []
    for d, size in enumerate(dims):
        if isinstance(size, bool) or not isinstance(size, numbers.Integral) or size < 0:
            raise ShardvizError(
                problem(
                    name,
                    f"dim {d} of shape {dims} is {size!r}, not a size >= 0",
                    "give whole sizes >= 0",
                )  # fmt: skip
            )
        out.append(int(size))
    return tuple(out)


def _layout(shape: tuple[int, ...], dt: np.dtype, sharding: Any, name: str) -> ArrayLayout:
    spec, mesh = _spec_and_mesh(sharding, shape, name)
    return ArrayLayout(
        name=name, shape=shape, dtype=dt.name, itemsize=dt.itemsize, spec=spec, mesh=mesh,
        tiles=_tiles(sharding, shape, dt.itemsize, mesh), memory_kind=memory_kind_of(sharding),
    )  # fmt: skip


def memory_kind_of(sharding: Any) -> str:
    """The memory a sharding places its tiles in (``device`` when it names none)."""
    kind = getattr(sharding, "memory_kind", None)
    return str(kind) if kind else DEVICE_KIND


@functools.lru_cache(maxsize=512)
def _shared_layout(shape: tuple[int, ...], dt: np.dtype, sharding: Any) -> ArrayLayout:
    return _layout(shape, dt, sharding, "array")


def _not_an_array(obj: Any, name: str) -> LeafError:
    if isinstance(obj, jax.core.Tracer):
        return LeafError(
            problem(
                name,
                "this is a traced value inside jax.jit: it has no placement until the function "
                "is compiled",
                "call layout() outside the jitted function, on its inputs or outputs",
            )
        )
    if isinstance(obj, np.ndarray | np.generic):
        return LeafError(
            problem(
                name,
                f"a numpy array of shape {obj.shape} lives on the host, not on devices",
                "place it first: shardviz.mark_sharding(x, mesh, spec) or "
                "jax.device_put(x, NamedSharding(mesh, P(...)))",
            )
        )
    if isinstance(obj, jax.ShapeDtypeStruct):
        return LeafError(
            problem(
                name,
                f"ShapeDtypeStruct{obj.shape} has no sharding, so there is no placement to show",
                "give it one: jax.ShapeDtypeStruct(shape, dtype, sharding=NamedSharding(mesh, "
                "P(...)))",
            )
        )
    return LeafError(
        problem(
            name,
            f"a {type(obj).__name__} is not an array",
            "pass a jax.Array, a jax.ShapeDtypeStruct with a sharding, or a (shape, dtype, "
            "sharding) triple; in a pytree, convert it with jnp.asarray or use "
            "layout_tree(tree, skip_non_arrays=True)",
        )
    )


def _leaf_layout(obj: Any, name: str) -> ArrayLayout:
    if isinstance(obj, jax.Array) and not isinstance(obj, jax.core.Tracer):
        return layout_of(obj.shape, obj.dtype, obj.sharding, name=name)
    if isinstance(obj, jax.ShapeDtypeStruct) and obj.sharding is not None:
        return layout_of(obj.shape, obj.dtype, obj.sharding, name=name)
    raise _not_an_array(obj, name)


def layout(obj: Any, *, name: str | None = None) -> ArrayLayout | MeshLayout:
    """Which device holds which tile of ``obj``.

    Args:
        obj: a ``jax.Array``; a ``jax.ShapeDtypeStruct`` with a sharding (a hypothetical
            array, nothing allocated); a ``(shape, dtype, sharding)`` triple; or a mesh
            (``shardviz.Mesh`` / ``jax.sharding.Mesh``), which gives its ``MeshLayout``.
        name: what to call the array in views and messages (default ``"array"``).

    Returns:
        An :class:`~shardviz.model.ArrayLayout` (or a ``MeshLayout`` for a mesh).
    """
    label = name or "array"
    if isinstance(obj, Mesh | jax.sharding.Mesh):
        return mesh_layout(obj)
    if isinstance(obj, tuple) and len(obj) == 3 and isinstance(obj[2], jax.sharding.Sharding):
        shape, dtype, sharding = obj
        return layout_of(shape, dtype, sharding, name=label)
    return _leaf_layout(obj, label)


def path_str(path: tuple) -> str:
    return jax.tree_util.keystr(path, simple=True, separator="/") if path else "<root>"


def layout_tree(
    tree: Any,
    *,
    skip_non_arrays: bool = False,
    is_leaf: Callable[[Any], bool] | None = None,
) -> TreeLayout:
    """The layout of every array leaf of a pytree, named by its path (e.g. ``params/w1``).

    Args:
        tree: any pytree of ``jax.Array`` / sharded ``jax.ShapeDtypeStruct`` leaves (parameters,
            optimizer state, a batch, or a dict of those).
        skip_non_arrays: leave out leaves that are not arrays (e.g. Python numbers in a config)
            instead of raising.
        is_leaf: passed to jax's tree flattening.

    Raises:
        LeafError: a leaf is not a placed array; the message names its path.
    """
    flat, _ = jax.tree_util.tree_flatten_with_path(tree, is_leaf=is_leaf)
    leaves = []
    for path, leaf in flat:
        name = path_str(path)
        placed = (isinstance(leaf, jax.Array) and not isinstance(leaf, jax.core.Tracer)) or (
            isinstance(leaf, jax.ShapeDtypeStruct) and leaf.sharding is not None
        )
        if not placed and skip_non_arrays:
            continue
        leaves.append(_leaf_layout(leaf, f"leaf {name!r}" if not placed else name))
    return TreeLayout(tuple(leaves))
