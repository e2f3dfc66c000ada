"""Models from the ecosystem: Flax NNX and Equinox, through layout_tree, explain, compare and
the Explorer."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz as sv
from shardviz.explainer.explain import explain_run
from shardviz.strategies.zoo import ModelDef


def _alive(*trees) -> bool:
    return not any(x.is_deleted() for x in jax.tree.leaves(trees) if isinstance(x, jax.Array))


@pytest.fixture(scope="module")
def mesh():
    return jax.make_mesh((2, 4), ("data", "model"), axis_types=(AxisType.Auto,) * 2)


def _batch(mesh, d_in=4, d_out=2, n=8):
    x = jax.device_put(
        jnp.linspace(-1, 1, n * d_in).reshape(n, d_in), NamedSharding(mesh, P("data"))
    )
    y = jax.device_put(jnp.ones((n, d_out)), NamedSharding(mesh, P("data")))
    return x, y


# --- Flax NNX ---------------------------------------------------------------------------------


class NnxMLP(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        init = nnx.initializers.lecun_normal()
        self.l1 = nnx.Linear(4, 16, kernel_init=nnx.with_partitioning(init, (None, "model")),
                             rngs=rngs)  # fmt: skip
        self.l2 = nnx.Linear(16, 2, kernel_init=nnx.with_partitioning(init, ("model", None)),
                             rngs=rngs)  # fmt: skip

    def __call__(self, x):
        return self.l2(jax.nn.relu(self.l1(x)))


def nnx_loss(model, x, y):
    return jnp.mean((model(x) - y) ** 2)


@pytest.fixture(scope="module")
def nnx_state(mesh):
    with jax.set_mesh(mesh):  # with_partitioning places the kernels on the context mesh
        model = NnxMLP(nnx.Rngs(0))
        optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
    return model, optimizer


def test_nnx_layout_tree_names_leaves_by_path_with_their_specs(nnx_state):
    model, optimizer = nnx_state
    tree = sv.layout_tree({"model": model, "opt": optimizer})
    by_name = {leaf.name: leaf for leaf in tree}
    kernel = by_name["model/l1/kernel/value"]
    assert kernel.shape == (4, 16) and kernel.spec == ((), ("model",))
    assert by_name["model/l2/kernel/value"].spec == (("model",), ())
    assert "opt/opt_state/0/mu/l1/kernel/value" in by_name  # Adam's moments mirror the kernels


def test_nnx_functional_step_and_nnx_jit_step(mesh, nnx_state):
    model, optimizer = nnx_state
    x, y = _batch(mesh)
    before = np.asarray(model.l1.kernel[...])

    def step(model, optimizer, x, y):  # NNX modules are pytrees: return them updated
        loss, grads = nnx.value_and_grad(nnx_loss)(model, x, y)
        optimizer.update(model, grads)
        return model, optimizer, loss

    report, out, _ = explain_run(step, model, optimizer, x, y, donate_argnums=(0, 1), steps=2)
    assert report.check.matches
    assert report.memory.alias_bytes > 0
    assert any(c.axes == ("model",) for c in report.collectives)  # the kernels' split
    assert not np.allclose(np.asarray(out[0].l1.kernel[...]), before)  # it trained
    assert _alive(model, optimizer, x, y)
    np.testing.assert_array_equal(np.asarray(model.l1.kernel[...]), before)  # not mutated

    @nnx.jit
    def nnx_step(model, optimizer, x, y):  # NNX's usual form: updates in place
        loss, grads = nnx.value_and_grad(nnx_loss)(model, x, y)
        optimizer.update(model, grads)
        return loss

    r2, loss, _ = explain_run(nnx_step, model, optimizer, x, y, steps=1)
    assert r2.function.endswith("nnx_step") and r2.check.matches
    assert loss.shape == () and np.isclose(float(loss), float(out[2]), rtol=1e-5)
    # the in-place update is part of the program (not dead code): the new kernels come out
    assert any("l1/kernel" in leaf.name for leaf in r2.outputs)
    np.testing.assert_array_equal(np.asarray(model.l1.kernel[...]), before)


def test_nnx_split_state_step(mesh, nnx_state):
    model, _ = nnx_state
    x, y = _batch(mesh)
    graphdef, params = nnx.split(model)

    def step(params, x, y):
        def loss(p):
            return nnx_loss(nnx.merge(graphdef, p), x, y)

        value, grads = jax.value_and_grad(loss)(params)
        return jax.tree.map(lambda p, g: p - 0.1 * g, params, grads), value

    report = sv.explain(step, params, x, y, steps=1)
    assert report.check.matches
    assert "params/l1/kernel/value" in {leaf.name for leaf in report.arguments}


# --- Equinox ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def eqx_state(mesh):
    model = eqx.nn.MLP(4, 2, 16, 1, activation=jax.nn.tanh, key=jax.random.key(0))
    place = NamedSharding(mesh, P())
    model = jax.tree.map(lambda a: jax.device_put(a, place) if eqx.is_array(a) else a, model)
    opt = optax.adam(1e-2)
    return model, opt, opt.init(eqx.filter(model, eqx.is_array))


def eqx_loss(model, x, y):
    return jnp.mean((jax.vmap(model)(x) - y) ** 2)


def test_equinox_layout_tree_skips_non_arrays():
    model = eqx.nn.MLP(4, 2, 16, 1, key=jax.random.key(0))
    names = [leaf.name for leaf in sv.layout_tree(model, skip_non_arrays=True)]
    assert names == ["layers/0/weight", "layers/0/bias", "layers/1/weight", "layers/1/bias"]
    with pytest.raises(sv.LeafError, match="activation"):
        sv.layout_tree(model)  # without the flag the function leaf is named


def test_equinox_filter_jit_step(mesh, eqx_state):
    model, opt, opt_state = eqx_state
    x, y = _batch(mesh)

    @eqx.filter_jit(donate="all-except-first")
    def step(model, opt_state, x, y):
        loss, grads = eqx.filter_value_and_grad(eqx_loss)(model, x, y)
        updates, opt_state = opt.update(grads, opt_state, eqx.filter(model, eqx.is_array))
        return eqx.apply_updates(model, updates), opt_state, loss

    report, out, _ = explain_run(step, model, opt_state, x, y, steps=2)
    assert report.function.endswith(".step") and report.check.matches
    assert report.memory.alias_bytes > 0  # filter_jit's donation is kept
    assert out[0].activation is jax.nn.tanh  # the non-array leaf comes back as it was
    direct = step(*jax.tree.map(lambda a: a.copy() if eqx.is_array(a) else a,
                                (model, opt_state, x, y)))  # fmt: skip
    np.testing.assert_allclose(np.asarray(out[2]), np.asarray(direct[2]), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(out[0].layers[0].weight),
                               np.asarray(direct[0].layers[0].weight), atol=1e-6)  # fmt: skip
    assert _alive(model, opt_state, x, y)
    names = {leaf.name for leaf in report.arguments}
    assert "model/layers/0/weight" in names and not any("activation" in n for n in names)

    def plain(model, x, y):  # a plain function on a module with a function leaf
        return eqx_loss(model, x, y)

    assert sv.explain(plain, model, x, y, steps=1).check.matches


# --- compare and the Explorer -----------------------------------------------------------------


def test_compare_with_nnx_and_equinox_models(nnx_state, eqx_state):
    batch = {"x": np.linspace(-1, 1, 32).reshape(8, 4).astype(np.float32),
             "y": np.ones((8, 2), np.float32)}  # fmt: skip
    from_nnx = ModelDef.from_nnx("nnx-mlp", nnx_state[0],
                              lambda m, b: nnx_loss(m, b["x"], b["y"]), batch)  # fmt: skip
    assert from_nnx.info["num_params"] == 4 * 16 + 16 + 16 * 2 + 2
    c = sv.compare(from_nnx, ["dp", "fsdp"], steps=1)
    assert all(r.loss_matches for r in c.results)
    fsdp = c.results[1].report.memory.by_leaf
    assert c.results[1].strategy == "zero3"  # fsdp is ZeRO-3
    assert any(lb.path == "params/l1/kernel" for lb in fsdp)

    from_eqx = ModelDef.from_equinox("eqx-mlp", eqx_state[0],
                                  lambda m, b: eqx_loss(m, b["x"], b["y"]), batch)  # fmt: skip
    assert from_eqx.info["num_params"] == 4 * 16 + 16 + 16 * 2 + 2
    c = sv.compare(from_eqx, ["dp"], steps=1)
    r = c.result("dp")
    assert r.loss_matches and r.loss == pytest.approx(
        float(eqx_loss(eqx_state[0], batch["x"], batch["y"])), rel=1e-5
    )


def test_explorer_on_nnx_and_equinox_steps(mesh, nnx_state, eqx_state):
    x, y = _batch(mesh)
    model, optimizer = nnx_state

    def nnx_step(model, optimizer, x, y):
        loss, grads = nnx.value_and_grad(nnx_loss)(model, x, y)
        optimizer.update(model, grads)
        return model, optimizer, loss

    explorer = sv.Explorer(nnx_step, model, optimizer, x, y, steps=1)
    assert explorer.report.ran and explorer.report.check.matches
    assert "model/l1/kernel/value" in explorer.controls.spec_boxes
    explorer.controls.strategy.value = "dp"
    assert explorer.wait(120)
    assert explorer.status == "done", explorer.error
    assert all(c.axes == ("data",) for c in explorer.report.collectives)

    eqx_model, opt, opt_state = eqx_state

    @eqx.filter_jit
    def eqx_step(model, opt_state, x, y):
        loss, grads = eqx.filter_value_and_grad(eqx_loss)(model, x, y)
        updates, opt_state = opt.update(grads, opt_state, eqx.filter(model, eqx.is_array))
        return eqx.apply_updates(model, updates), opt_state, loss

    explorer = sv.Explorer(eqx_step, eqx_model, opt_state, x, y, steps=1)
    assert explorer.report.ran and explorer.report.check.matches
    explorer.controls.strategy.value = "fsdp"
    assert explorer.wait(120)
    assert explorer.status == "done", explorer.error
    assert explorer.report.ran
