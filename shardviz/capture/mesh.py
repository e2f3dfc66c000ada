"""Meshes in both vocabularies, translated to jax (one source of truth, no second runtime).

- jax's own ``jax.sharding.Mesh`` with ``NamedSharding``/``PartitionSpec``;
- PyTorch/XLA SPMD's ``Mesh(device_ids, mesh_shape, axis_names)`` and
  ``mark_sharding(x, mesh, partition_spec)``;
- GSPMD's ``mesh_split(x, device_mesh, dims_mapping)``.
"""

from __future__ import annotations

import functools
import math
import numbers
from collections import OrderedDict
from collections.abc import Sequence
from functools import cached_property
from typing import Any

import jax
import numpy as np
from jax.sharding import AxisType, NamedSharding, PartitionSpec

from shardviz.capture.compile import is_compile_only
from shardviz.capture.spec import normalize_spec
from shardviz.errors import MeshError, SpecError, problem
from shardviz.model import Device, MeshLayout
from shardviz.model.mesh import ascii_hint, axis_name_problem

MeshLike = Any  # shardviz.Mesh | jax.sharding.Mesh


class Mesh:
    """A logical mesh in the PyTorch/XLA SPMD vocabulary, backed by a ``jax.sharding.Mesh``.

    Args:
        device_ids: the devices, in mesh order (row-major over ``mesh_shape``), as global
            ordinals ``0 .. N-1``: positions in ``jax.devices()``, as in PyTorch/XLA. On one
            host they equal jax's ``device.id``; across processes jax numbers devices
            per host (e.g. 0-3 and 2048-2051), and views show jax's ids. Or the jax devices
            themselves, e.g. a deviceless :func:`~shardviz.topology`'s ``devices``.
        mesh_shape: the mesh's size along each axis; the product must equal the device count.
        axis_names: one unique name per axis (default ``axis_0``, ``axis_1``, ...).
        axis_types: ``"auto"`` (default: the compiler completes shardings, the GSPMD way) or
            ``"explicit"`` (shardings are part of the types, jax's sharding-in-types mode).

    Example:
        >>> mesh = Mesh(range(8), (2, 4), ("data", "model"))
        >>> mesh.shape()
        OrderedDict([('data', 2), ('model', 4)])
    """

    def __init__(
        self,
        device_ids: Sequence[int] | np.ndarray,
        mesh_shape: Sequence[int],
        axis_names: Sequence[str] | None = None,
        *,
        axis_types: str = "auto",
    ) -> None:
        given = list(np.asarray(list(device_ids), dtype=object).reshape(-1))
        if not given:
            raise MeshError(
                problem("Mesh", "no device ids were given", "list the devices, e.g. range(8)")
            )
        # jax devices themselves (e.g. a deviceless topology's): use them as they are.
        objects = all(isinstance(d, jax.Device) for d in given)
        ids = [int(d.id) for d in given] if objects else [_whole("device id", i) for i in given]
        mesh_shape = tuple(_whole("mesh_shape size", s) for s in mesh_shape)
        if any(s < 1 for s in mesh_shape):
            raise MeshError(
                problem("Mesh", f"mesh_shape {mesh_shape} has a size below 1", "use sizes >= 1")
            )
        if math.prod(mesh_shape) != len(ids):
            raise MeshError(
                problem(
                    "Mesh",
                    f"mesh_shape {mesh_shape} holds {math.prod(mesh_shape)} devices but "
                    f"{len(ids)} device ids were given",
                    f"give {math.prod(mesh_shape)} device ids, or a mesh_shape whose product is "
                    f"{len(ids)} (e.g. {_factor_hint(len(ids))})",
                )
            )
        if len(set(ids)) != len(ids):
            dup = sorted({i for i in ids if ids.count(i) > 1})
            raise MeshError(
                problem("Mesh", f"device ids {dup} appear more than once", "list each device once")
            )
        if axis_names is None:
            axis_names = tuple(f"axis_{i}" for i in range(len(mesh_shape)))
        names = tuple(axis_names)
        if len(names) != len(mesh_shape):
            raise MeshError(
                problem(
                    "Mesh",
                    f"{len(names)} axis names {names} for a mesh of {len(mesh_shape)} axes "
                    f"{mesh_shape}",
                    "give one name per mesh axis",
                )
            )
        check_axis_names(names, "Mesh")
        if len(set(names)) != len(names):
            raise MeshError(
                problem("Mesh", f"axis names {names} repeat a name", "give each axis its own name")
            )
        if axis_types not in ("auto", "explicit"):
            raise MeshError(
                problem(
                    "Mesh",
                    f"axis_types {axis_types!r} is not known",
                    "use 'auto' (the compiler completes shardings) or 'explicit'",
                )
            )
        everything = jax.devices()
        missing = [] if objects else [i for i in ids if not 0 <= i < len(everything)]
        if missing:
            raise MeshError(
                problem(
                    "Mesh",
                    f"device id(s) {missing} out of range: jax sees {len(everything)} "
                    f"{jax.default_backend()} device(s), ids 0..{len(everything) - 1}",
                    "use ids from that range; for more fake CPU devices call "
                    "shardviz.use_cpu_devices(n) before anything else touches jax",
                )
            )
        self._ids = np.array(ids, dtype=np.int64).reshape(mesh_shape)
        self._names = names
        chosen = given if objects else [everything[i] for i in ids]
        self._devices = np.array(chosen, dtype=object).reshape(mesh_shape)
        self._axis_types = axis_types

    @property
    def device_ids(self) -> np.ndarray:
        """Device ids as an array of the mesh's shape."""
        return self._ids.copy()

    @property
    def mesh_shape(self) -> tuple[int, ...]:
        return tuple(self._ids.shape)

    @property
    def axis_names(self) -> tuple[str, ...]:
        return self._names

    def shape(self) -> OrderedDict[str, int]:
        """Axis name -> size, in mesh order (as PyTorch/XLA's ``Mesh.shape()``)."""
        return OrderedDict(zip(self._names, self.mesh_shape, strict=True))

    def size(self) -> int:
        """Number of devices."""
        return int(self._ids.size)

    def get_logical_mesh(self) -> np.ndarray:
        """Device ids arranged in the mesh's shape."""
        return self.device_ids

    def get_axis_name_idx(self, name: str) -> int:
        return self._names.index(name)

    @cached_property
    def jax_mesh(self) -> jax.sharding.Mesh:
        """The same mesh as a ``jax.sharding.Mesh``."""
        kind = AxisType.Auto if self._axis_types == "auto" else AxisType.Explicit
        return jax.sharding.Mesh(self._devices, self._names, axis_types=(kind,) * len(self._names))

    @property
    def layout(self) -> MeshLayout:
        """The mesh as a model object (what the views draw)."""
        return mesh_layout(self.jax_mesh)

    def __repr__(self) -> str:
        return (
            f"shardviz.Mesh(device_ids={self._ids.reshape(-1).tolist()}, "
            f"mesh_shape={self.mesh_shape}, axis_names={self._names})"
        )

    def __str__(self) -> str:
        return str(self.layout)

    def _repr_html_(self) -> str:
        return self.layout._repr_html_()


def _whole(what: str, value: Any) -> int:
    """``value`` as an int when it is a whole number (``2.0`` is, ``2.5`` and ``"2"`` are
    not): sizes and ids are never truncated silently."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise MeshError(problem("Mesh", f"{what} {value!r} is not a number", "give whole numbers"))
    whole = int(float(value)) if math.isfinite(float(value)) else None
    if whole is None or value != whole:
        raise MeshError(
            problem("Mesh", f"{what} {value!r} is not a whole number", "give whole numbers")
        )
    return whole


def check_axis_names(names: Sequence[Any], where: str) -> None:
    """Refuse axis names the compiler cannot take (see
    :func:`shardviz.model.mesh.axis_name_problem`), naming each and a fix."""
    for n in names:
        why = axis_name_problem(n)
        if why is not None:
            fix = f"rename it, e.g. {ascii_hint(n)!r}" if isinstance(n, str) and n else "rename it"
            raise MeshError(problem(where, why, fix))


def _factor_hint(n: int) -> str:
    pairs = [(a, n // a) for a in range(1, n + 1) if n % a == 0]
    return " or ".join(str(p) for p in pairs[:3])


def as_jax_mesh(mesh: MeshLike) -> jax.sharding.Mesh:
    """Accept a ``shardviz.Mesh`` or a ``jax.sharding.Mesh`` and return the jax one."""
    if isinstance(mesh, Mesh):
        return mesh.jax_mesh
    if isinstance(mesh, jax.sharding.Mesh):
        return mesh
    raise MeshError(
        problem(
            "mesh",
            f"expected a shardviz.Mesh or a jax.sharding.Mesh, got {type(mesh).__name__}",
            "build one with shardviz.Mesh(device_ids, mesh_shape, axis_names) or jax.make_mesh",
        )
    )


def reordered_mesh(mesh: MeshLike, order: Sequence[Any]) -> jax.sharding.Mesh:
    """The same mesh (axis names, shape, axis types) with its devices in another order.

    Args:
        mesh: a ``jax.sharding.Mesh`` or ``shardviz.Mesh``.
        order: the mesh's devices (or their ids) in the new row-major mesh order: a
            permutation of the mesh's devices, as the ``placement`` finding's fix gives.

    Returns:
        A ``jax.sharding.Mesh``; place the arrays on it again.

    Raises:
        MeshError: ``order`` is not a list of device ids (a string, bytes, a set, floats or
            booleans are refused; at most one id past the mesh's size is read from an
            iterator), or not a permutation of the mesh's devices.
    """
    jm = as_jax_mesh(mesh)
    layout = mesh_layout(jm)
    ids = layout.reordered(order, "reordered_mesh").device_ids
    by_id = {int(d.id): d for d in jm.devices.flat}
    devices = np.empty(len(ids), dtype=object)
    devices[:] = [by_id[i] for i in ids]
    return jax.sharding.Mesh(
        devices.reshape(jm.devices.shape), jm.axis_names, axis_types=jm.axis_types
    )


def _axis_type_name(t: Any) -> str:
    return getattr(t, "name", str(t))


def device_of(d: Any) -> Device:
    """A jax device as a :class:`~shardviz.model.Device`; TPU devices (real or a deviceless
    topology's) also give their chip's ``coords``, ``core_on_chip`` and ``slice_index``."""
    coords = getattr(d, "coords", None)
    return Device(
        id=int(d.id),
        process_index=int(d.process_index),
        platform=str(d.platform),
        kind=str(d.device_kind),
        coords=None if coords is None else tuple(int(c) for c in coords),
        core_on_chip=int(getattr(d, "core_on_chip", 0) or 0),
        slice_index=int(getattr(d, "slice_index", 0) or 0),
    )


def mesh_layout(mesh: MeshLike) -> MeshLayout:
    """A jax (or shardviz) mesh as a :class:`~shardviz.model.MeshLayout` (one per jax mesh:
    every leaf's layout on a 256-chip mesh would otherwise list its devices again)."""
    return _mesh_layout(as_jax_mesh(mesh))


@functools.lru_cache(maxsize=64)
def _mesh_layout(jm: jax.sharding.Mesh) -> MeshLayout:
    check_axis_names(tuple(jm.axis_names), "mesh")
    devices = tuple(device_of(d) for d in jm.devices.flat)
    return MeshLayout(
        axis_names=tuple(str(n) for n in jm.axis_names),
        axis_sizes=tuple(int(s) for s in jm.devices.shape),
        devices=devices,
        axis_types=tuple(_axis_type_name(t) for t in jm.axis_types),
    )


def _shape_of(x: Any) -> tuple[int, ...]:
    if isinstance(x, jax.ShapeDtypeStruct):
        return tuple(x.shape)
    return tuple(np.shape(x))


def named_sharding(
    mesh: MeshLike,
    partition_spec: Any,
    shape: Sequence[int],
    *,
    name: str = "array",
    allow_uneven: bool = False,
    memory_kind: str | None = None,
) -> NamedSharding:
    """Check a spec in either vocabulary and return the ``NamedSharding`` it means.

    ``memory_kind`` (``device``, ``pinned_host``, ``unpinned_host``: where each device keeps
    its tile) must be one the mesh's devices have.
    """
    jm = as_jax_mesh(mesh)
    if memory_kind is not None:
        checked_memory_kind(memory_kind, jm.devices.flat[0], name)
    names = tuple(str(n) for n in jm.axis_names)
    spec = normalize_spec(
        partition_spec,
        shape,
        names,
        tuple(jm.devices.shape),
        name=name,
        allow_uneven=allow_uneven,
    )
    entries = [None if not e else (e[0] if len(e) == 1 else e) for e in spec]
    return NamedSharding(jm, PartitionSpec(*entries), memory_kind=memory_kind)


def memory_kinds(device: Any) -> tuple[str, ...]:
    """The memory kinds a device can address (CPU and TPU: ``device``, ``pinned_host``,
    ``unpinned_host``); empty where the backend lists none (a deviceless GPU)."""
    try:
        return tuple(str(m.kind) for m in device.addressable_memories())
    except Exception:  # a backend without memories
        return ()


def mesh_has_memory(mesh: MeshLike, kind: str) -> bool:
    """Whether the mesh's devices can address memory of ``kind`` (:func:`memory_kinds`)."""
    return any(kind in memory_kinds(d) for d in as_jax_mesh(mesh).devices.flat)


def checked_memory_kind(kind: Any, device: Any, name: str = "array") -> str:
    """``kind`` if ``device``'s backend has that memory, else a ShardvizError naming those it
    has. A backend that lists none (jax 0.10.2's deviceless GPU topologies) takes only
    ``device``: jax drops any other kind from the sharding there, silently."""
    kinds = memory_kinds(device)
    if kind == "device" or (isinstance(kind, str) and kind in kinds):
        return kind
    if not kinds:
        raise MeshError(
            problem(
                name,
                f"memory kind {kind!r}: the {device.platform.upper()} devices here list no "
                "memory kinds (a deviceless GPU topology), and jax would drop the kind from "
                "the sharding without a word",
                "plan host memory on a TPU topology (sv.topology('v5e:2x2')) or on real "
                "GPUs, or leave memory_kind out",
            )
        )
    have = ", ".join(repr(k) for k in kinds) or "none listed"
    raise MeshError(
        problem(
            name,
            f"memory kind {kind!r} is not one the {device.platform.upper()} devices have "
            f"(they have {have})",
            "pass memory_kind='device' for the device's own memory, or "
            "memory_kind='pinned_host' for host memory the device reads directly"
            if "pinned_host" in kinds
            else f"pass one of {have}",
        )
    )


def mark_sharding(
    x: Any,
    mesh: MeshLike,
    partition_spec: Any,
    *,
    name: str = "array",
    memory_kind: str | None = None,
) -> Any:
    """Place ``x`` on ``mesh`` split as ``partition_spec`` says, and return it.

    The spec has one entry per dim: an axis name or index, a tuple of axes (split over several
    axes, in that order), or ``None`` (not split). Mesh axes not named replicate. Outside jit
    this is ``jax.device_put``; inside a jitted function it is a sharding constraint the
    compiler follows (GSPMD's annotation), and uneven splits are allowed there (padded).

    Args:
        x: a jax or numpy array (or a traced value inside ``jax.jit``), or a
            ``jax.ShapeDtypeStruct`` (returned with the sharding: nothing is allocated).
        mesh: a :class:`Mesh` or ``jax.sharding.Mesh``.
        partition_spec: see above; a ``jax.sharding.PartitionSpec`` works too.
        name: what to call the array in error messages.
        memory_kind: where each device keeps its tile: ``device`` (its own memory, HBM),
            ``pinned_host`` or ``unpinned_host`` (host memory); ``None``: the default.
    """
    traced = isinstance(x, jax.core.Tracer)
    sharding = named_sharding(
        mesh, partition_spec, _shape_of(x), name=name, allow_uneven=traced,
        memory_kind=memory_kind,
    )  # fmt: skip
    if traced:
        if memory_kind is not None:  # a move between memories, which a constraint is not
            return jax.device_put(x, sharding)
        return jax.lax.with_sharding_constraint(x, sharding)
    if isinstance(x, jax.ShapeDtypeStruct):  # a hypothetical array: the same, placed
        return jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=sharding)
    if is_compile_only(as_jax_mesh(mesh).devices.flat[0]):
        raise MeshError(
            problem(
                name,
                "the mesh is a topology's (deviceless): its devices hold no data, so a "
                f"{type(x).__name__} cannot be placed on them",
                f"pass jax.ShapeDtypeStruct({tuple(np.shape(x))}, {_canonical(x)!r}) "
                "instead (mark_sharding gives it the sharding; nothing is allocated)",
            )
        )
    return jax.device_put(x, sharding)


def mesh_split(x: Any, device_mesh: Any, dims_mapping: Sequence[int], *, name: str = "array"):
    """GSPMD's annotation: ``dims_mapping[i]`` is the mesh dim that splits array dim ``i``, or -1.

    ``device_mesh`` is a numpy array of device ids (its axes are named ``axis_0``, ``axis_1``,
    ...), a :class:`Mesh`, or a ``jax.sharding.Mesh``. Mesh dims not mapped replicate.
    """
    if isinstance(device_mesh, Mesh | jax.sharding.Mesh):
        mesh = device_mesh
    else:
        ids = np.asarray(device_mesh)
        mesh = Mesh(ids.reshape(-1), ids.shape)
    ndims = len(as_jax_mesh(mesh).axis_names)
    where = f"array {name!r} (shape {_shape_of(x)})"
    spec = []
    for dim, m in enumerate(dims_mapping):
        if isinstance(m, bool) or not isinstance(m, int | np.integer) or not -1 <= m < ndims:
            raise SpecError(
                problem(
                    f"{where}, dim {dim}",
                    f"dims_mapping entry {m!r} is not a mesh dim: the mesh has {ndims} dims",
                    f"use a mesh dim index from 0 to {ndims - 1}, or -1 to replicate",
                )
            )
        spec.append(None if m == -1 else int(m))
    return mark_sharding(x, mesh, spec, name=name)


def _canonical(x: Any) -> str:
    """The dtype jax would give ``x`` (float64 becomes float32 unless x64 is on)."""
    return str(jax.dtypes.canonicalize_dtype(np.asarray(x).dtype))
