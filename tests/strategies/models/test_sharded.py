"""Reduced Llama, Mixtral, Qwen3 MoE and Gemma 3 train under logical axis rules on 8 devices
as on one device."""

from __future__ import annotations

import re

import jax
import numpy as np
import optax
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from shardviz.strategies.models import (
    LOGICAL_STRATEGIES,
    activation_constrainer,
    batch_specs,
    logical_rule_set,
    make_mesh,
    param_shardings,
)
from shardviz.strategies.step import strategy_step
from shardviz.strategies.zoo import ModelDef, get_model, init_train_state

from .small import compiled, small

#: Llama (dense GQA), Mixtral (experts), Qwen3's MoE (experts and per-head q/k norms),
#: Gemma 3 (local and global layers, sandwich norms, tied embeddings).
MODELS = ("llama3.1-8b", "mixtral-8x7b", "qwen3-235b-a22b", "gemma3-27b")


def adam_step(model: ModelDef):
    """One real Adam step that also returns the gradients, to compare them."""
    adam = optax.adam(1e-3)

    def step(params, opt_state, batch):
        loss, grads = jax.value_and_grad(model.loss)(params, batch)
        updates, opt_state = adam.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss, grads

    return step


@pytest.fixture(scope="module", params=MODELS)
def single(request):
    """The model, its state, and one Adam step on one device."""
    model = get_model(request.param, **small(request.param))
    state = init_train_state(model, jax.random.key(0))
    return model, state, compiled(adam_step(model), *state)(*state)


def close(got, want, atol: float) -> None:
    for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=atol)


def close_after_adam(got, want, grads) -> None:
    """Adam's first update is lr * g / (|g| + eps): about lr * sign(g), so where a gradient is
    nearly 0 a rounding difference can move it by up to lr; elsewhere it must agree."""
    for a, b, g in zip(*(jax.tree.leaves(t) for t in (got, want, grads)), strict=True):
        a, b, g = np.asarray(a), np.asarray(b), np.asarray(g)
        assert np.abs(a - b).max() <= 2e-3
        firm = np.abs(g) > 1e-4
        np.testing.assert_allclose(a[firm], b[firm], rtol=1e-5, atol=1e-5)


def sharded_adam_step(model: ModelDef, strategy: str, params, batch) -> tuple:
    """One Adam step of ``model`` on 8 devices under ``strategy``'s logical rules, the
    activations pinned by them: (new params, loss, gradients)."""
    config = model.info["config"]
    mesh = make_mesh(strategy)
    assert mesh.devices.size == 8
    p_sh = param_shardings(config, strategy, mesh)
    b_sh = {
        k: NamedSharding(mesh, s) for k, s in batch_specs(strategy, mesh, batch=8, seq=64).items()
    }
    sharded = model.constrained(activation_constrainer(strategy, mesh))
    params = jax.device_put(params, p_sh)
    opt_state = jax.jit(optax.adam(1e-3).init)(params)
    batch = jax.device_put(batch, b_sh)
    new_params, _, loss, grads = compiled(
        adam_step(sharded), params, opt_state, batch, out_shardings=(p_sh, None, None, p_sh)
    )(params, opt_state, batch)
    return new_params, loss, grads


@pytest.mark.parametrize("strategy", ["fsdp", "fsdp+tp"])
def test_sharded_adam_step_agrees_with_one_device(single, strategy: str) -> None:
    model, (params, _, batch), (want_params, _, want_loss, want_grads) = single
    new_params, loss, grads = sharded_adam_step(model, strategy, params, batch)
    np.testing.assert_allclose(float(loss), float(want_loss), rtol=1e-5)
    close(grads, want_grads, atol=1e-6)
    close_after_adam(new_params, want_params, want_grads)
    wq = new_params["layers"]["attn"]["wq"]
    assert wq.sharding.spec == (
        P(None, "fsdp", None, None) if strategy == "fsdp" else P(None, "fsdp", "tensor", None)
    )


@pytest.mark.parametrize("strategy", LOGICAL_STRATEGIES)
def test_every_strategy_builds_a_train_step_for_mixtral(strategy: str) -> None:
    """The logical rules as a RuleSet: strategy_step places every leaf and lowers (the
    compile and run are covered above for fsdp and fsdp+tp)."""
    model = get_model("mixtral-8x7b", **small("mixtral-8x7b"))
    rule_set = logical_rule_set(strategy, model)
    mesh = make_mesh(strategy, devices=jax.devices()[:4] if strategy == "tp" else None)
    built = strategy_step(model, rule_set, mesh)
    assert set(built.mesh.axis_names) == set(rule_set.axes)
    text = built.step.lower(*built.abstract).as_text()
    assert "sharding_constraint" in text  # the activation rules reached the program
    specs = jax.tree.map(lambda s: s.spec, built.shardings[0])
    want = {
        "fsdp": P(None, None, "fsdp", None),
        "fsdp+tp": P(None, None, "fsdp", "tensor"),
        "tp": P(None, None, None, "tensor"),
        "dp+fsdp": P(None, None, "fsdp", None),
        "sp": P(None, None, ("fsdp", "sequence"), None),
        "ep": P(None, "expert", "fsdp", None),
        "pp": P("stage", None, "fsdp", None),
    }[strategy]
    assert specs["layers"]["moe"]["w_gate"] == want


def test_strategy_step_runs_a_logical_rule_set() -> None:
    """compare's machinery (strategy_step) trains a published model under its rules."""
    model = get_model("llama3.1-8b", **small("llama3.1-8b", layers=1))
    built = strategy_step(model, logical_rule_set("fsdp", model))
    state = jax.jit(
        lambda k: init_train_state(model, k), out_shardings=built.shardings
    )(jax.random.key(0))  # fmt: skip
    step = built.step.lower(*state).compile(compiler_options={"xla_backend_optimization_level": 0})
    params, _, loss = step(*state)
    assert np.isfinite(float(loss))
    assert params["embed"]["embedding"].sharding.spec == P(None, "fsdp")


def test_expert_parallel_moves_tokens_by_all_to_all_and_trains_as_one_device() -> None:
    """Under 'ep' the capacity MoE's dispatch and combine einsums run where their tokens are
    (the token groups split as the batch): the experts' slots reach the experts and come back
    by all-to-all over 'expert', never by gathering every group (which at Mixtral 8x22B's
    size on v6e-256 took 117 GB of temporaries); and the step still trains as on one device."""
    model = get_model("mixtral-8x7b", **small("mixtral-8x7b"))
    mesh = make_mesh("ep", shape=(2, 4))
    built = strategy_step(model, logical_rule_set("ep", model), mesh)
    text = built.step.lower(*built.abstract).compile().as_text()
    kinds = r"(all-gather|all-to-all|all-reduce|reduce-scatter|collective-permute)(-start)?\("
    in_einsums = [
        line for line in text.splitlines() if re.search(kinds, line) and "moe_dispatch" in line
    ]
    assert in_einsums == []
    assert re.search(r"all-to-all(-start)?\(", text)
    params, _, batch = init_train_state(model, jax.random.key(0))
    want_loss = compiled(jax.value_and_grad(model.loss), params, batch)(params, batch)[0]
    _, loss, _ = sharded_adam_step(model, "ep", params, batch)
    np.testing.assert_allclose(float(loss), float(want_loss), rtol=1e-5)
