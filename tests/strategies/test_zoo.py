"""The model zoo: built-in models train, the MoE routes as GShard does, custom models work."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from shardviz.errors import ShardvizError
from shardviz.strategies import mlp, moe
from shardviz.strategies.zoo import (
    MODEL_NAMES,
    ModelDef,
    default_sizes,
    get_model,
    init_train_state,
    make_train_step,
)


def leaf_paths(tree) -> dict[str, tuple[int, ...]]:
    """``{"layers/0/attn/wq": shape}``: the names sharding rules match against."""
    flat, _ = jax.tree_util.tree_flatten_with_path(tree)
    out = {}
    for path, leaf in flat:
        parts = [str(getattr(k, "key", getattr(k, "idx", k))) for k in path]
        out["/".join(parts)] = tuple(leaf.shape)
    return out


def train_losses(model: ModelDef, steps: int = 20) -> list[float]:
    params, opt_state, batch = init_train_state(model, jax.random.key(0))
    step = jax.jit(make_train_step(model))
    losses = []
    for _ in range(steps):
        params, opt_state, loss = step(params, opt_state, batch)
        losses.append(float(loss))
    return losses


@pytest.fixture(scope="module", params=MODEL_NAMES)
def model(request) -> ModelDef:
    return get_model(request.param)


def test_builtin_names() -> None:
    assert MODEL_NAMES == ("mlp", "transformer", "moe")


def shapes_of(fn, key):
    return jax.eval_shape(fn, key)


def test_param_and_batch_shapes() -> None:
    key = jax.random.key(0)
    t = get_model("transformer")
    paths = leaf_paths(shapes_of(t.init_params, key))
    assert paths["embed"] == (256, 128)
    assert paths["pos"] == (64, 128)
    assert paths["unembed"] == (128, 256)
    for i in (0, 1):
        assert paths[f"layers/{i}/attn/wq"] == (128, 8, 16)
        assert paths[f"layers/{i}/attn/wk"] == (128, 8, 16)
        assert paths[f"layers/{i}/attn/wv"] == (128, 8, 16)
        assert paths[f"layers/{i}/attn/wo"] == (8, 16, 128)
        assert paths[f"layers/{i}/mlp/w_in"] == (128, 512)
        assert paths[f"layers/{i}/mlp/w_out"] == (512, 128)
        assert paths[f"layers/{i}/ln1/scale"] == (128,)
        assert paths[f"layers/{i}/ln2/bias"] == (128,)
    assert "layers/2/attn/wq" not in paths
    assert leaf_paths(shapes_of(t.make_batch, key)) == {"inputs": (16, 64), "targets": (16, 64)}

    m = get_model("moe")
    assert leaf_paths(shapes_of(m.init_params, key)) == {
        "head/w": (128, 128),
        "moe/w_gate": (128, 8),
        "moe/w_in": (8, 128, 256),
        "moe/w_out": (8, 256, 128),
        "proj/w": (128, 128),
    }
    assert leaf_paths(shapes_of(m.make_batch, key)) == {"x": (16, 64, 128), "y": (16, 64, 128)}
    assert m.info["capacity"] == 20  # ceil(2 * 1.25 * 64 / 8)
    assert m.info["groups"] == 16

    p = get_model("mlp")
    assert leaf_paths(shapes_of(p.init_params, key)) == {
        "b1": (512,),
        "b2": (128,),
        "w1": (128, 512),
        "w2": (512, 128),
    }
    assert leaf_paths(shapes_of(p.make_batch, key)) == {"x": (64, 128), "y": (64, 128)}


def test_param_counts_by_hand() -> None:
    assert get_model("mlp").info["num_params"] == 128 * 512 + 512 + 512 * 128 + 128
    layer = 4 * 128 * 128 + 2 * 128 * 512 + 4 * 128  # attention, MLP, two layer norms
    embeds = 256 * 128 + 64 * 128 + 128 * 256  # embed, pos, unembed
    assert get_model("transformer").info["num_params"] == embeds + 2 * layer + 2 * 128
    experts = 2 * 8 * 128 * 256
    assert get_model("moe").info["num_params"] == experts + 128 * 8 + 2 * 128 * 128


def test_defaults_split_evenly_on_any_mesh_of_8(model: ModelDef) -> None:
    key = jax.random.key(0)
    for tree in jax.eval_shape(lambda k: (model.init_params(k), model.make_batch(k)), key):
        for path, shape in leaf_paths(tree).items():
            assert all(d % 8 == 0 for d in shape), (model.name, path, shape)


def test_loss_decreases_over_20_adam_steps(model: ModelDef) -> None:
    losses = train_losses(model)
    assert all(np.isfinite(losses))
    assert losses[-1] < 0.9 * losses[0], losses


def test_mlp_model_is_the_mlp_module() -> None:
    model = get_model("mlp", d_model=16, d_hidden=32, batch=8)
    key = jax.random.key(3)
    want = mlp.init_params(key, 16, 32)
    got = model.init_params(key)  # jitted: may differ from eager in the last bit
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-6), got, want)
    assert model.loss is mlp.loss_fn
    assert model.make_batch(key)["x"].shape == (8, 16)


def test_sizes_and_dtype_change() -> None:
    model = get_model("transformer", layers=3, d_model=64, heads=4, dtype=jnp.bfloat16)
    params = model.init_params(jax.random.key(0))
    assert len(params["layers"]) == 3
    assert params["layers"][2]["attn"]["wq"].shape == (64, 4, 16)
    assert {leaf.dtype for leaf in jax.tree.leaves(params)} == {jnp.dtype(jnp.bfloat16)}
    assert model.info["dtype"] == "bfloat16"
    assert default_sizes("transformer")["layers"] == 2  # the defaults did not change


def test_other_optimizer() -> None:
    model = get_model("mlp", d_model=16, d_hidden=32, batch=8)
    sgd = optax.sgd(0.1)
    params, opt_state, batch = init_train_state(model, jax.random.key(0), sgd)
    step = jax.jit(make_train_step(model, sgd))
    _, _, first = step(params, opt_state, batch)
    for _ in range(5):
        params, opt_state, loss = step(params, opt_state, batch)
    assert loss < first


def test_unknown_model_names_the_known_ones() -> None:
    with pytest.raises(ShardvizError, match="no built-in model 'gpt'") as err:
        get_model("gpt")
    for name in ("'mlp'", "'transformer'", "'moe'", "ModelDef.custom", "Fix:"):
        assert name in str(err.value)


@pytest.mark.parametrize(
    ("name", "sizes", "match"),
    [
        ("mlp", {"d_ff": 4}, "unknown size.*d_ff.*use only d_model, d_hidden, batch"),
        ("transformer", {"d_model": 100}, "d_model=100 does not divide by heads=8"),
        ("transformer", {"layers": 0}, "layers=0 is not a whole number >= 1. Fix: pass layers=2"),
        ("moe", {"top_k": 9}, "top_k=9 is more than experts=8"),
        ("moe", {"group_size": 48}, "1024 tokens do not divide"),
        ("moe", {"capacity_factor": 0}, "capacity_factor=0 is not a finite positive number"),
    ],
)
def test_bad_sizes(name: str, sizes: dict, match: str) -> None:
    with pytest.raises(ShardvizError, match=match):
        get_model(name, **sizes)


# --- MoE routing -------------------------------------------------------------------------


def test_routing_by_hand() -> None:
    """4 tokens, 2 experts, top-2, capacity 3.

    Tokens 0 and 1 prefer expert 0, tokens 2 and 3 expert 1. First choices fill slots 0-1 of
    each expert; second choices come after them: token 0 takes expert 1's slot 2 and token 2
    takes expert 0's slot 2; tokens 1 and 3 find their second expert full and are dropped there.
    """
    probs = np.array([[0.7, 0.3], [0.6, 0.4], [0.2, 0.8], [0.1, 0.9]], np.float32)
    assert moe.expert_capacity(4, 2, 2, 0.75) == 3  # ceil(2 * 0.75 * 4 / 2)
    r = jax.jit(moe.route, static_argnames=("top_k", "capacity"))(
        jnp.log(probs)[None], top_k=2, capacity=3
    )
    placed = {tuple(int(i) for i in idx[1:]) for idx in np.argwhere(np.asarray(r.dispatch) > 0)}
    assert placed == {(0, 0, 0), (1, 0, 1), (2, 1, 0), (3, 1, 1), (0, 1, 2), (2, 0, 2)}
    combine = np.asarray(r.combine)[0]
    # With two experts the top-2 gates are the probabilities themselves; a drop is not renormalised.
    np.testing.assert_allclose(combine[0, 0, 0], 0.7, rtol=1e-6)
    np.testing.assert_allclose(combine[0, 1, 2], 0.3, rtol=1e-6)
    np.testing.assert_allclose(combine[1].sum(), 0.6, rtol=1e-6)
    np.testing.assert_allclose(combine[3].sum(), 0.9, rtol=1e-6)
    # aux = E^2 * mean_e(density_e * mean_prob_e) = 4 * ((0.5 * 0.4) + (0.5 * 0.6)) / 2
    np.testing.assert_allclose(float(r.aux_loss), 1.0, rtol=1e-6)


def test_routing_top1_capacity_1() -> None:
    r = moe.route(jnp.log(jnp.array([[[0.9, 0.1], [0.8, 0.2], [0.3, 0.7]]])), top_k=1, capacity=1)
    placed = {tuple(int(i) for i in idx[1:]) for idx in np.argwhere(np.asarray(r.dispatch) > 0)}
    assert placed == {(0, 0, 0), (2, 1, 0)}  # token 1 finds expert 0 full


@pytest.fixture(scope="module")
def router_logits() -> jax.Array:
    """The default MoE model's router logits on one batch, ``[16, 64, 8]``."""
    model = get_model("moe")

    @jax.jit
    def logits(key: jax.Array) -> jax.Array:
        params, _, batch = init_train_state(model, key)
        groups = (batch["x"] @ params["proj"]["w"]).reshape(16, 64, 128)
        return jnp.einsum("gsd,de->gse", groups, params["moe"]["w_gate"])

    return logits(jax.random.key(1))


@pytest.mark.parametrize("capacity_factor", [0.5, 1.25, 4.0])
def test_routing_invariants_on_the_default_model(
    router_logits: jax.Array, capacity_factor: float
) -> None:
    capacity = moe.expert_capacity(64, 8, 2, capacity_factor)
    r = jax.jit(moe.route, static_argnames=("top_k", "capacity"))(
        router_logits, top_k=2, capacity=capacity
    )
    d = np.asarray(r.dispatch)  # [G, S, E, C]
    assert d.shape == (16, 64, 8, capacity)
    assert set(np.unique(d)) <= {0.0, 1.0}
    assert (d.sum(axis=(2, 3)) <= 2).all()  # each token to at most 2 experts
    assert (d.sum(axis=3) <= 1).all()  # at most one slot per (token, expert)
    assert (d.sum(axis=1) <= 1).all()  # each slot holds at most one token
    assert (d.sum(axis=(1, 3)) <= capacity).all()
    combine = np.asarray(r.combine)
    assert ((combine > 0) == (d > 0)).all()
    assert (combine.sum(axis=(2, 3)) <= 1 + 1e-5).all()
    if capacity_factor == 4.0:  # capacity 64: room for everyone
        assert (d.sum(axis=(2, 3)) == 2).all()
        np.testing.assert_allclose(combine.sum(axis=(2, 3)), 1.0, rtol=1e-5)
    else:
        assert d.sum() < 2 * 16 * 64  # some tokens were dropped
    assert np.isfinite(float(r.aux_loss)) and float(r.aux_loss) > 0


# --- activation hook ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expect"),
    [
        (
            "transformer",
            {"embed": (16, 64, 128), "mlp_hidden": (16, 64, 512), "attn_qkv": (16, 64, 8, 16)},
        ),
        ("moe", {"dispatched": (8, 16, 20, 128), "expert_hidden": (8, 16, 20, 256)}),
    ],
)
def test_constrain_hook_sees_named_activations(name: str, expect: dict) -> None:
    model = get_model(name)
    seen: dict[str, tuple[int, ...]] = {}
    counts: dict[str, int] = {}

    def record(n: str, x: jax.Array) -> jax.Array:
        seen[n] = tuple(x.shape)
        counts[n] = counts.get(n, 0) + 1
        return x

    params, _, batch = jax.eval_shape(lambda k: init_train_state(model, k), jax.random.key(0))
    jax.eval_shape(model.constrained(record).loss, params, batch)
    assert set(seen) == set(model.activations)
    for n, shape in expect.items():
        assert seen[n] == shape
    if name == "transformer":
        assert counts["residual"] == 4  # two adds in each of two layers
        assert counts["attn_qkv"] == 6


def test_sequence_parallel_constraints_compile_and_agree() -> None:
    """Pin the residual stream to (data, seq) on a 2x4 mesh: the loss must not change."""
    model = get_model("transformer", layers=1)
    mesh = Mesh(np.array(jax.devices()[:8]).reshape(2, 4), ("data", "seq"))
    pinned = NamedSharding(mesh, P("data", "seq", None))

    def sequence_parallel(n: str, x: jax.Array) -> jax.Array:
        if n in ("embed", "residual", "attn_in", "mlp_in"):
            return jax.lax.with_sharding_constraint(x, pinned)
        return x

    params, _, batch = init_train_state(model, jax.random.key(0))
    plain = jax.jit(model.loss)(params, batch)
    sharded = jax.jit(model.constrained(sequence_parallel).loss)(params, batch)
    np.testing.assert_allclose(float(sharded), float(plain), rtol=1e-5)


def test_mlp_has_no_hook() -> None:
    with pytest.raises(ShardvizError, match="no activation hook"):
        get_model("mlp").constrained(lambda n, x: x)


# --- bring your own ----------------------------------------------------------------------


def test_custom_model_from_ready_pytrees() -> None:
    params = {"w": jnp.ones((8, 4)) * 0.1, "b": jnp.zeros((4,))}
    batch = {"x": jnp.arange(64.0).reshape(8, 8) / 64, "y": jnp.ones((8, 4))}

    def loss(p, b):
        return jnp.mean((b["x"] @ p["w"] + p["b"] - b["y"]) ** 2)

    model = ModelDef.custom("linear", params, loss, batch)
    assert model.info["num_params"] == 36
    assert model.name == "linear"
    assert model.init_params(jax.random.key(5)) is params
    losses = train_losses(model)
    assert losses[-1] < 0.9 * losses[0]


def test_custom_model_from_functions() -> None:
    def init(key):
        return {"layers": [{"w": jax.random.normal(key, (4, 4))} for _ in range(2)]}

    def make_batch(key):
        return jax.random.normal(key, (8, 4))

    def loss(p, x):
        for layer in p["layers"]:
            x = jnp.tanh(x @ layer["w"])
        return jnp.mean(x**2)

    model = ModelDef.custom("deep", init, loss, make_batch, info={"note": "two tanh layers"})
    assert model.info == {"note": "two tanh layers", "num_params": 32}
    losses = train_losses(model)
    assert losses[-1] < losses[0]


def test_custom_model_errors() -> None:
    params = {"w": jnp.ones((2, 2))}
    with pytest.raises(ShardvizError, match="not a scalar"):
        ModelDef.custom("bad", params, lambda p, b: p["w"] * b, jnp.ones((2, 2)))
    with pytest.raises(ShardvizError, match="not a function"):
        ModelDef.custom("bad", params, 3.0, jnp.ones(2))
    with pytest.raises(ShardvizError, match="tracing init, batch and loss failed"):
        ModelDef.custom("bad", params, lambda p, b: jnp.sum(p["missing"]), jnp.ones(2))


def test_bad_dtype_and_numpy_sizes() -> None:
    with pytest.raises(ShardvizError, match="dtype='float7' is not a dtype"):
        get_model("mlp", dtype="float7")
    model = get_model("mlp", d_model=np.int64(16), d_hidden=32, batch=8)
    assert model.info["d_model"] == 16


def test_jitted_init_takes_out_shardings() -> None:
    model = get_model("transformer", layers=1)
    mesh = Mesh(np.array(jax.devices()[:8]), ("data",))
    shapes = jax.eval_shape(model.init_params, jax.random.key(0))
    shardings = jax.tree.map(lambda _: NamedSharding(mesh, P("data")), shapes)
    params = jax.jit(model.init_params, out_shardings=shardings)(jax.random.key(0))
    wq = params["layers"][0]["attn"]["wq"]
    assert wq.sharding.shard_shape(wq.shape) == (16, 8, 16)


def test_the_old_name_of_modeldef_says_its_new_name() -> None:
    import shardviz as sv

    assert sv.ModelDef is ModelDef
    with pytest.raises(AttributeError, match="renamed shardviz.ModelDef"):
        sv.Model  # noqa: B018
