"""Known answers for tile layouts of arrays, hypothetical arrays and pytrees."""

import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz as sv
from shardviz.model import TreeLayout
from tests.without_jax import run_without_jax


@pytest.fixture
def mesh():
    return sv.Mesh(range(8), (2, 4), ("data", "model"))


def test_three_kinds(mesh):
    x = np.zeros((8, 8), np.float32)
    rep = sv.layout(sv.mark_sharding(x, mesh, ()))
    assert rep.kind == "replicated" and rep.num_distinct_tiles == 1 and rep.replication == 8
    assert rep.shard_shape == (8, 8) and all(t.nbytes == 256 for t in rep.tiles)
    tiled = sv.layout(sv.mark_sharding(x, mesh, ("data", "model")))
    assert tiled.kind == "tiled" and tiled.shard_shape == (4, 2) and tiled.replication == 1
    part = sv.layout(sv.mark_sharding(x, mesh, ("data", None)))
    assert part.kind == "partially_tiled"
    assert part.num_distinct_tiles == 2 and part.replication == 4
    holders = [sorted(t.device_id for t in g) for g in part.distinct_tiles]
    assert holders == [[0, 1, 2, 3], [4, 5, 6, 7]]


def test_tuple_of_axes_orders_tiles(mesh):
    x = np.zeros((16,), np.float32)
    a = sv.layout(sv.mark_sharding(x, mesh, (("data", "model"),)))
    assert [a.tile(d).index[0].start // 2 for d in range(8)] == [0, 1, 2, 3, 4, 5, 6, 7]
    b = sv.layout(sv.mark_sharding(x, mesh, (("model", "data"),)))
    order = sorted(range(8), key=lambda d: b.tile(d).index[0].start)
    assert order == [0, 4, 1, 5, 2, 6, 3, 7]


def test_model_fields(mesh):
    x = sv.mark_sharding(jnp.ones((4, 8), jnp.bfloat16), mesh, (None, "model"))
    lay = sv.layout(x, name="w")
    assert lay.name == "w" and lay.shape == (4, 8) and lay.dtype == "bfloat16"
    assert lay.itemsize == 2 and lay.spec == ((), ("model",)) and lay.spec_str == "P(None, 'model')"
    t = lay.tile(5)
    assert t.index == (slice(0, 4), slice(2, 4)) and t.shape == (4, 2) and t.nbytes == 16
    assert lay.mesh.coords(5) == (1, 1)
    assert lay.mesh.shape == {"data": 2, "model": 4}


def test_rank_zero_and_single_device():
    s = sv.layout(jnp.float32(3.0))
    assert s.kind == "replicated" and s.shape == () and s.mesh.axis_names == ()
    assert len(s.tiles) == 1 and s.tiles[0].nbytes == 4 and s.tiles[0].index == ()


def test_hypothetical_arrays_and_triples(mesh):
    sh = NamedSharding(mesh.jax_mesh, P("model", None, "data"))
    sds = jax.ShapeDtypeStruct((8, 3, 4), jnp.float32, sharding=sh)
    lay = sv.layout(sds)
    assert lay.kind == "tiled" and lay.shard_shape == (2, 3, 2)
    assert lay == sv.layout(((8, 3, 4), np.float32, sh))
    big = sv.layout(((1 << 20, 1 << 14), jnp.float32, sh.update(spec=P("data", "model"))))
    assert big.nbytes == (1 << 36) and big.max_bytes_per_device == (1 << 33)  # 64 GiB, 8 GiB


def test_typed_prng_keys(mesh):
    """jax's typed keys (Flax NNX's Rngs state) are laid out with jax's dtype name and the
    bytes of their key data; explain takes a step that carries one in and out."""
    key = jax.random.split(jax.random.key(0), 8)
    sh = NamedSharding(mesh.jax_mesh, P("data"))
    lay = sv.layout(jax.device_put(key, sh))
    assert lay.dtype == str(key.dtype) and lay.itemsize == key.dtype.itemsize
    assert lay.shard_shape == (4,) and lay.tiles[0].nbytes == 4 * key.dtype.itemsize
    assert sv.layout(jax.ShapeDtypeStruct((8,), key.dtype, sharding=sh)) == lay

    def step(k, x):
        k, sub = jax.random.split(k)
        return k, x + jax.random.normal(sub, x.shape)

    shapes = (
        jax.ShapeDtypeStruct((), key.dtype, sharding=NamedSharding(mesh.jax_mesh, P())),
        jax.ShapeDtypeStruct((8, 8), jnp.float32, sharding=sh),
    )
    report = sv.explain(jax.jit(step).trace(*shapes))
    assert [leaf.dtype for leaf in report.arguments.leaves][0] == str(key.dtype)
    assert report.outputs.leaves[0].dtype == str(key.dtype)


def test_layout_of_a_mesh(mesh):
    m = sv.layout(mesh)
    assert isinstance(m, sv.MeshLayout) and m.device_ids == tuple(range(8))
    assert sv.layout(mesh.jax_mesh) == m
    assert m.axis_types == ("Auto", "Auto")


@pytest.mark.parametrize(
    ("obj", "match"),
    [
        (np.zeros(3), "lives on the host"),
        (jax.ShapeDtypeStruct((4,), jnp.float32), "has no sharding"),
        (3.5, "a float is not an array"),
        ("w", "a str is not an array"),
    ],
)
def test_not_arrays(obj, match):
    with pytest.raises(sv.LeafError, match=match) as err:
        sv.layout(obj, name="w")
    assert str(err.value).startswith("w:") and "Fix:" in str(err.value)


def test_traced_value_is_explained(mesh):
    @jax.jit
    def f(x):
        sv.layout(x)
        return x

    with pytest.raises(sv.LeafError, match="traced value"):
        f(jnp.ones(3))


def test_hypothetical_uneven_is_a_spec_error(mesh):
    sh = NamedSharding(mesh.jax_mesh, P("model"))
    with pytest.raises(sv.SpecError, match="size 6 does not divide") as err:
        sv.layout(((6, 2), np.float32, sh), name="act")
    assert "'act'" in str(err.value)


def _mlp(mesh, fsdp: bool):
    d, h = 16, 64
    specs = {"w1": ("data", "model") if fsdp else (), "b1": ("model",) if fsdp else (),
             "w2": ("model", "data") if fsdp else ()}  # fmt: skip
    params = {
        "w1": sv.mark_sharding(np.zeros((d, h), np.float32), mesh, specs["w1"]),
        "b1": sv.mark_sharding(np.zeros((h,), np.float32), mesh, specs["b1"]),
        "w2": sv.mark_sharding(np.zeros((h, d), np.float32), mesh, specs["w2"]),
    }
    opt = {"mu": params, "nu": params, "count": jnp.zeros((), jnp.int32)}
    return {"params": params, "opt": opt, "lr": 0.1}


def test_layout_tree_totals(mesh):
    tree = _mlp(mesh, fsdp=False)
    with pytest.raises(sv.LeafError) as err:
        sv.layout_tree(tree)
    assert "'lr'" in str(err.value) and "skip_non_arrays=True" in str(err.value)
    lt = sv.layout_tree(tree, skip_non_arrays=True)
    assert lt.paths == ("opt/count", "opt/mu/b1", "opt/mu/w1", "opt/mu/w2", "opt/nu/b1",
                        "opt/nu/w1", "opt/nu/w2", "params/b1", "params/w1", "params/w2")  # fmt: skip
    param_bytes = (16 * 64 + 64 + 64 * 16) * 4
    # Replicated: every device holds everything (params + mu + nu, and the count on device 0).
    assert lt.global_bytes == 3 * param_bytes + 4
    per = lt.bytes_per_device
    assert per[0] == 3 * param_bytes + 4
    assert all(per[d] == 3 * param_bytes for d in range(1, 8))
    assert lt.mesh is None  # the count lives on one device, the rest on the 2x4 mesh
    fsdp = sv.layout_tree(_mlp(mesh, fsdp=True)["params"])
    assert fsdp.mesh == sv.layout(mesh)
    # w1 and w2 split 8 ways; b1 split 4 ways over 'model' and replicated over 'data'.
    assert set(fsdp.bytes_per_device.values()) == {(16 * 64 * 2 // 8) * 4 + (64 // 4) * 4}
    assert fsdp["b1"].kind == "partially_tiled"
    assert TreeLayout.from_json(fsdp.to_json()) == fsdp


def test_tree_of_hypothetical_arrays(mesh):
    sh = NamedSharding(mesh.jax_mesh, P("data"))
    tree = [jax.ShapeDtypeStruct((1024, 1024), jnp.float32, sharding=sh)] * 2
    lt = sv.layout_tree(tree)
    assert lt.paths == ("0", "1") and lt.bytes_per_device[3] == 2 * 512 * 1024 * 4


def test_use_cpu_devices_in_a_fresh_process():
    code = textwrap.dedent(
        """
        import shardviz as sv
        devs = sv.use_cpu_devices(3)
        import jax
        print(len(devs), len(jax.devices()))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
        env={"JAX_PLATFORMS": "cpu", "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["3", "3"]


def test_model_and_renderers_import_without_jax():
    out = run_without_jax(
        """
        import shardviz, shardviz.model, shardviz.render.text, shardviz.render.html
        from shardviz.model import Device, MeshLayout
        m = MeshLayout(("a",), (2,), (Device(0), Device(1)))
        assert "svg" in m._repr_html_() and str(m)
        try:
            shardviz.layout
        except ImportError:
            pass
        else:
            raise SystemExit("jax was importable")
        assert not any(k == "jax" or k.startswith("jax.") for k in sys.modules)
        print("ok")
        """
    )
    assert out.strip() == "ok"


def test_jax_make_mesh_explicit_axes_work():
    jm = jax.make_mesh((2, 4), ("data", "model"))  # jax 0.10: Explicit axes by default
    x = jax.device_put(jnp.ones((8, 8)), NamedSharding(jm, P("data", "model")))
    lay = sv.layout(x)
    assert lay.mesh.axis_types == ("Explicit", "Explicit")
    assert lay.kind == "tiled" and lay.spec == (("data",), ("model",))
    y = sv.mark_sharding(jnp.ones((8, 8)), jm, (None, "data"))
    assert sv.layout(y).spec == ((), ("data",))


def test_user_strings_are_escaped_end_to_end():
    evil = ("<script>alert(1)</script>", "a\"b'c&d")
    m = sv.Mesh(range(8), (2, 4), evil)
    x = sv.mark_sharding(np.zeros((8, 8), np.float32), m, (evil[0], evil[1]))
    tree = sv.layout_tree({"<img src=x onerror=alert(1)>": x})
    for page in (sv.layout(m)._repr_html_(), sv.layout(x, name="<b>x</b>")._repr_html_(),
                 tree._repr_html_()):  # fmt: skip
        assert "<script>" not in page and "<img" not in page and "<b>x" not in page
        assert "&lt;" in page
    assert "&lt;script&gt;" in sv.layout(m)._repr_html_()
