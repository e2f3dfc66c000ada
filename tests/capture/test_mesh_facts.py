"""Plain facts about jax meshes, for code that must not touch jax."""

from __future__ import annotations

import jax
import numpy as np
from jax.sharding import AxisType

from shardviz.capture.mesh_info import (
    device_pool,
    has_explicit_axes,
    mesh_devices,
    mesh_shape_and_names,
)


def test_shape_names_and_devices_of_a_mesh():
    devices = np.array(jax.devices()[:8])[::-1].reshape(2, 4)
    mesh = jax.sharding.Mesh(devices, ("data", "model"))
    assert mesh_shape_and_names(mesh) == ((2, 4), ("data", "model"))
    assert [d.id for d in mesh_devices(mesh)] == [7, 6, 5, 4, 3, 2, 1, 0]


def test_explicit_axes():
    assert has_explicit_axes(jax.make_mesh((8,), ("data",), axis_types=(AxisType.Explicit,)))
    assert not has_explicit_axes(jax.make_mesh((8,), ("data",), axis_types=(AxisType.Auto,)))


def test_the_device_pool_of_real_devices_is_every_jax_device():
    assert device_pool(None) == jax.devices()
    assert device_pool(jax.make_mesh((2,), ("data",))) == jax.devices()
