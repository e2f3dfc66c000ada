"""Plain facts about a jax mesh and the devices new meshes can be made of.

For code outside capture (the explorer session) that must not touch jax: a mesh's sizes and
names, its devices, whether its axes are Explicit, and the device pool to build meshes from.
"""

from __future__ import annotations

from typing import Any

import jax
from jax.sharding import AxisType

from shardviz.capture.compile import is_compile_only
from shardviz.capture.topology import topology_of


def mesh_shape_and_names(mesh: Any) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """A jax mesh's axis sizes and axis names."""
    return tuple(int(s) for s in mesh.devices.shape), tuple(str(n) for n in mesh.axis_names)


def mesh_devices(mesh: Any) -> list[Any]:
    """A jax mesh's devices, in the mesh's (row-major) order."""
    return list(mesh.devices.flat)


def has_explicit_axes(mesh: Any) -> bool:
    """Whether some axis of a jax mesh is ``AxisType.Explicit``."""
    return AxisType.Explicit in mesh.axis_types


def device_pool(mesh: Any) -> list[Any]:
    """The devices new meshes are made of: jax's, or a deviceless topology's when ``mesh``
    (if any) is on one (then programs are compiled for it, never run)."""
    if mesh is not None and is_compile_only(mesh.devices.flat[0]):
        topo = topology_of(mesh.devices.flat)
        return list(topo.devices) if topo is not None else list(mesh.devices.flat)
    return list(jax.devices())
