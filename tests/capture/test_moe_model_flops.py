"""Model flops of a user's own MoE by the field's convention (issue 41): 6 x active
parameters x tokens + attention; the dispatch, combine and capacity padding recognised from
the program (no name scope) and kept as hardware flops only."""

from __future__ import annotations

import jax
import pytest

import shardviz as sv
from shardviz.model import Cost
from shardviz.strategies.models.flops import training_flops
from shardviz.strategies.zoo import get_model
from tests.fixtures import moe_models, user_llama
from tests.strategies.models.small import small

_COSTS: dict[str, Cost] = {}


def cost_of(variant: str) -> Cost:
    """The compiled step's cost, compiled once per variant."""
    if variant not in _COSTS:
        step, args, _ = moe_models.make(moe_models.VARIANTS[variant])
        report = sv.explain(step, *args, run=False, diagnose=False)
        assert report.cost is not None
        _COSTS[variant] = report.cost
    return _COSTS[variant]


@pytest.mark.parametrize("variant", ["gshard", "switch", "dropless"])
def test_model_flops_are_the_hand_count(variant: str) -> None:
    cfg = moe_models.VARIANTS[variant]
    cost = cost_of(variant)
    assert cost.model_flops_per_device == pytest.approx(
        moe_models.program_matmul_count(cfg), rel=0.02
    )


@pytest.mark.parametrize("variant", ["gshard", "switch"])
def test_dispatch_and_padding_stay_hardware_flops(variant: str) -> None:
    cfg = moe_models.VARIANTS[variant]
    cost = cost_of(variant)
    model, dispatch = cost.model_flops_per_device, cost.dispatch_flops_per_device
    padding = cost.padding_flops_per_device
    assert model and dispatch and padding and cost.flops_per_device
    assert cost.flops_per_device >= model + dispatch + padding
    # Padding: the slots beyond top_k x tokens of experts x capacity, in the expert matmuls.
    slots = cfg.experts * moe_models.capacity(cfg)
    fill = cfg.top_k * cfg.seq / slots
    experts = 6 * cfg.n_layers * cfg.top_k * 3 * cfg.d_model * cfg.d_ff * cfg.batch * cfg.seq / 8
    assert padding == pytest.approx(experts / fill * (1 - fill), rel=1e-6)


def test_dropless_has_no_dispatch_nor_padding() -> None:
    cost = cost_of("dropless")
    assert not cost.dispatch_flops_per_device and not cost.padding_flops_per_device


def test_a_dense_model_has_none() -> None:
    step, state, batch = user_llama.make(user_llama.SMALL)
    cost = sv.explain(step, state, batch, run=False, diagnose=False).cost
    assert cost is not None and cost.model_flops_per_device and cost.matmul_flops_per_device
    assert not cost.dispatch_flops_per_device and not cost.padding_flops_per_device
    recomputed = cost.recomputed_flops_per_device or 0.0
    assert cost.model_flops_per_device == cost.matmul_flops_per_device - recomputed


def test_the_zoos_mixtral_at_capacity_1_25_counts_two_experts_per_token() -> None:
    """GShard routing by argmax rounds (no top_k): k from the rounds, padding 1 - 1/1.25."""
    sizes = small("mixtral-8x7b", batch=1, remat="none", capacity_factor=1.25)
    m = get_model("mixtral-8x7b", **sizes)
    params = jax.eval_shape(m.init_params, jax.random.key(0))
    batch = jax.eval_shape(m.make_batch, jax.random.key(1))
    cost = sv.explain(jax.value_and_grad(m.loss), params, batch, run=False, diagnose=False).cost
    assert cost is not None and cost.padding_flops_per_device
    want = training_flops(m.info["config"], tokens=sizes["seq"], seq=sizes["seq"]).total
    assert cost.model_flops_per_device == pytest.approx(want, rel=1e-9)


def test_an_embedding_looked_up_as_a_one_hot_matmul_is_not_model_work() -> None:
    """MaxText's ``use_iota_embed``: ``one_hot(tokens) @ table`` in a dense model. Its matmul
    and the table's gradient only move rows (the field's 6 x params x tokens leaves the
    lookup out), so they are hardware flops, named as one-hot lookups, not MoE routing."""
    import jax.numpy as jnp

    vocab, width, tokens = 512, 64, 256

    def loss(params, ids):
        x = jnp.dot(jax.nn.one_hot(ids, vocab, dtype=jnp.float32), params["table"])
        return jnp.mean((x @ params["w"]) ** 2)

    params = {"table": jnp.ones((vocab, width)), "w": jnp.ones((width, width))}
    ids = jnp.arange(tokens) % vocab
    report = sv.explain(jax.grad(loss), params, ids, run=False, diagnose=False)
    cost = report.cost
    assert cost is not None and cost.dispatch_flops_per_device
    lookup = 2 * (2 * tokens * vocab * width)  # forward and the table's gradient
    assert cost.dispatch_flops_per_device == pytest.approx(lookup, rel=1e-9)
    assert cost.model_flops_per_device == pytest.approx(6 * tokens * width * width, rel=1e-9)
    row = next(line for line in str(report).splitlines() if line.strip().startswith("one-hot"))
    assert "embedding looked up as a matmul" in row and "not model flops" in row


def test_the_tpu_compiles_slot_matmuls_are_padding_at_capacity_2() -> None:
    """Deviceless TPU v5p: the compiler computes each dispatch inside a multi-output fusion
    beside the stack of values it saves, so the experts read it through that fusion's tuple
    (and a copy to VMEM). Every expert matmul, forward and backward, is in slot space: at
    capacity factor 2 half their flops are padding and the model flops are the formula's
    (before, 27M of 38M of padding was taken for the model's). libtpu 0.0.50 (the jax 0.12
    leg) names a tuple's element ``x#i`` with no get-tuple-element: the backward's saved
    routing tensors are followed through those too (before, +40M there)."""
    sizes = small("mixtral-8x7b", attention_block=64, remat="none", compute_dtype="bfloat16",
                  capacity_factor=2.0)  # fmt: skip
    sizes.pop("batch")
    c = sv.compare("mixtral-8x7b", ["fsdp"], target="v5p:2x2x2", batch_per_device=1, **sizes)
    cost = c.results[0].report.cost
    assert cost is not None
    config = get_model("mixtral-8x7b", **sizes).info["config"]
    want = training_flops(config, tokens=64, seq=64).total
    assert cost.model_flops_per_device == pytest.approx(want, rel=1e-9)
    routed = 6 * 64 * 2 * 3 * config.d_model * config.ffn * config.layers  # top-2, x3 matmuls
    assert cost.padding_flops_per_device == pytest.approx(routed)  # the other half of 2x
