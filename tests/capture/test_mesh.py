"""Meshes in both vocabularies: the seed spelling gives exactly the jax sharding."""

from collections import OrderedDict

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz as sv


@pytest.fixture
def mesh():
    return sv.Mesh(range(8), (2, 4), ("data", "model"))


@pytest.fixture
def jax_mesh():
    devs = np.array(jax.devices()).reshape(2, 4)
    return jax.sharding.Mesh(devs, ("data", "model"))


def test_seed_mesh_api(mesh):
    assert mesh.shape() == OrderedDict([("data", 2), ("model", 4)])
    assert isinstance(mesh.shape(), OrderedDict)
    assert mesh.size() == 8
    assert mesh.mesh_shape == (2, 4)
    assert mesh.get_logical_mesh().tolist() == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert mesh.get_axis_name_idx("model") == 1
    jm = mesh.jax_mesh
    assert isinstance(jm, jax.sharding.Mesh)
    assert jm.axis_names == ("data", "model")
    assert jm.axis_types == (AxisType.Auto, AxisType.Auto)
    assert [d.id for d in jm.devices.flat] == list(range(8))


def test_device_order_is_kept():
    m = sv.Mesh([7, 6, 5, 4, 3, 2, 1, 0], (4, 2), ("a", "b"))
    assert [d.id for d in m.jax_mesh.devices.flat] == [7, 6, 5, 4, 3, 2, 1, 0]
    assert m.layout.coords(7) == (0, 0) and m.layout.coords(0) == (3, 1)


def test_default_axis_names_and_explicit_types():
    m = sv.Mesh(range(8), (8,))
    assert m.axis_names == ("axis_0",)
    e = sv.Mesh(range(4), (2, 2), ("x", "y"), axis_types="explicit")
    assert e.jax_mesh.axis_types == (AxisType.Explicit, AxisType.Explicit)


SPECS = [
    ("data", None),
    (None, "model"),
    ("data", "model"),
    ("model", "data"),
    (("data", "model"), None),
    ((1, 0), None),
    (None, None),
    (),
]


@pytest.mark.parametrize("spec", SPECS)
def test_mark_sharding_matches_jax_spelling(mesh, jax_mesh, spec):
    x = np.arange(64, dtype=np.float32).reshape(8, 8)
    ours = sv.mark_sharding(x, mesh, spec)
    names = mesh.axis_names
    entries = [
        None
        if e is None
        else tuple(names[a] if isinstance(a, int) else a for a in e)
        if isinstance(e, tuple)
        else e
        for e in spec
    ]
    theirs = jax.device_put(x, NamedSharding(jax_mesh, P(*entries)))
    assert ours.sharding.is_equivalent_to(theirs.sharding, 2)
    assert ours.sharding.devices_indices_map(x.shape) == theirs.sharding.devices_indices_map(
        x.shape
    )
    np.testing.assert_array_equal(np.asarray(ours), x)


def test_mark_sharding_accepts_jax_mesh_and_partition_spec(jax_mesh):
    x = sv.mark_sharding(jnp.ones((8, 4)), jax_mesh, P("model", "data"))
    assert x.sharding.spec == P("model", "data")


def test_mesh_split_is_gspmd_dims_mapping(mesh, jax_mesh):
    x = np.zeros((8, 8, 2), np.float32)
    a = sv.mesh_split(x, np.arange(8).reshape(2, 4), [1, 0, -1])
    assert a.sharding.mesh.axis_names == ("axis_0", "axis_1")
    assert a.sharding.spec == P("axis_1", "axis_0", None)
    b = sv.mesh_split(x, mesh, [-1, 1, -1])
    ref = NamedSharding(jax_mesh, P(None, "model", None))
    assert b.sharding.devices_indices_map(x.shape) == ref.devices_indices_map(x.shape)
    with pytest.raises(sv.SpecError, match="dims_mapping entry 2"):
        sv.mesh_split(x, mesh, [2, -1, -1])
    with pytest.raises(sv.SpecError, match="used twice"):
        sv.mesh_split(x, mesh, [0, 0, -1])


def test_mark_sharding_inside_jit_is_a_constraint(mesh):
    @jax.jit
    def f(x):
        y = sv.mark_sharding(x * 2, mesh, (None, "model"))
        return y

    out = f(jnp.ones((4, 8)))
    assert out.sharding.spec == P(None, "model")

    @jax.jit
    def g(x):  # uneven inside jit: allowed, the compiler pads
        return sv.mark_sharding(x + 1, mesh, ("model",)).sum()

    assert float(g(jnp.zeros((6,)))) == 6.0


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((range(8), (3, 3), ("a", "b")), "holds 9 devices but 8"),
        ((range(1, 9), (2, 4), ("a", "b")), r"device id\(s\) \[8\] out of range"),
        (([0, 0, 1, 2], (2, 2), ("a", "b")), "appear more than once"),
        ((range(8), (2, 4), ("a",)), "1 axis names"),
        ((range(8), (2, 4), ("a", "a")), "repeat a name"),
        ((range(8), (2, 4), ("a", "")), "non-empty strings"),
        ((range(8), (2, 4), ("a", "b")), None),
    ],
)
def test_mesh_errors(args, match):
    if match is None:
        sv.Mesh(*args)
        return
    with pytest.raises(sv.MeshError, match=match) as err:
        sv.Mesh(*args)
    assert "Fix:" in str(err.value)


def test_mark_sharding_errors_name_array_dim_axis(mesh):
    with pytest.raises(sv.SpecError) as err:
        sv.mark_sharding(np.zeros((6, 8)), mesh, ("model", None), name="w1")
    msg = str(err.value)
    assert "'w1'" in msg and "dim 0" in msg and "'model'" in msg and "Fix:" in msg
    with pytest.raises(sv.MeshError, match="shardviz.Mesh or a jax.sharding.Mesh"):
        sv.mark_sharding(np.zeros(4), "not a mesh", ("data",))


def test_use_cpu_devices_after_start():
    jax.devices()
    assert len(sv.use_cpu_devices(8)) == 8  # same count: harmless
    with pytest.raises(sv.DeviceSetupError) as err:
        sv.use_cpu_devices(4)
    assert "restart the kernel" in str(err.value)
    with pytest.raises(sv.DeviceSetupError, match="positive whole number"):
        sv.use_cpu_devices(0)
