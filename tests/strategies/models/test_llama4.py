"""Llama 4 Scout and Maverick: a shared expert beside top-1 routed ones, Maverick's MoE every
other layer, every fourth layer without RoPE; the block scan against a plain loop."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import shardviz as sv
from shardviz.strategies.models.attention import naive_attention
from shardviz.strategies.models.configs import ArchConfig, get_config, param_count
from shardviz.strategies.models.decoder import _temperature
from shardviz.strategies.models.experts import moe_mlp
from shardviz.strategies.models.flops import training_flops
from shardviz.strategies.models.gated_mlp import gated_mlp
from shardviz.strategies.models.norm import rms_norm
from shardviz.strategies.models.rope import apply_rope, rope_frequencies
from shardviz.strategies.zoo import get_model, init_train_state

from .small import VISION, compiled, formula, small, step_cost
from .test_sharded import adam_step, close, close_after_adam, sharded_adam_step


@pytest.mark.parametrize(("name", "total"), [("llama4-scout", 109e9), ("llama4-maverick", 400e9)])
def test_the_parameters_with_the_vision_encoder_are_the_published_ones(
    name: str, total: float
) -> None:
    c = get_config(name)
    attention = 5120 * 128 * (40 + 2 * 8) + 40 * 128 * 5120
    expert = 3 * 5120 * 8192
    moe = (c.experts + 1) * expert + 5120 * c.experts  # routed, shared, router
    dense = 3 * 5120 * 16384
    layers = 48 * (attention + 2 * 5120) + c.moe_layers * moe + (48 - c.moe_layers) * dense
    assert param_count(c) == layers + 2 * 202048 * 5120 + 5120
    assert abs((param_count(c) + VISION) / total - 1) < 0.005
    # 17B active: attention, one routed and the shared expert, the dense MLPs, both embeddings.
    active = param_count(c, active=True)
    assert active == param_count(c) - c.moe_layers * (c.experts - 1) * expert
    assert abs(active / 17e9 - 1) < 0.015


def test_the_layer_kinds() -> None:
    """Maverick: MoE in layers 1, 3, 5...; no RoPE in layers 3, 7, 11...: blocks of 4."""
    c = get_config("llama4-maverick")
    assert [c.is_moe_layer(i) for i in range(4)] == [False, True, False, True]
    assert [c.roped(i) for i in range(8)] == [True] * 3 + [False] + [True] * 3 + [False]
    assert c.moe_layers == 24 and c.period == 4
    scout = get_config("llama4-scout")
    assert scout.moe_layers == 48 and scout.period == 4
    shapes = jax.eval_shape(get_model("llama4-maverick").init_params, jax.random.key(0))
    assert shapes["dense_layers"]["mlp"]["w_up"].shape == (24, 5120, 16384)
    assert shapes["layers"]["moe"]["w_up"].shape == (24, 128, 5120, 8192)
    assert shapes["layers"]["moe"]["shared"]["w_up"].shape == (24, 5120, 8192)


def test_the_nope_layers_temperature() -> None:
    """1 up to position 8190, then log(floor((p + 1) / 8192) + 1) x 0.1 + 1."""
    t = np.asarray(_temperature(16384))[:, 0, 0]
    assert np.all(t[:8191] == 1.0)
    np.testing.assert_allclose(t[8191], 1 + 0.1 * math.log(2), rtol=1e-6)
    np.testing.assert_allclose(t[16383], 1 + 0.1 * math.log(3), rtol=1e-6)


def test_the_formula_counts_each_chunk_in_full() -> None:
    """MaxText's Llama 4 formula: a NoPE layer's attention over S x S, a chunked layer's
    over its chunks, each chunk x chunk (the last, shorter one, its own square); one chunk
    of the whole sequence or more is the causal mask."""
    c = get_config("llama4-scout")
    per_key = 4 * c.heads * c.head_dim * 3  # flops per query and key, forward and backward
    for seq in (8192, 32768, 20000):
        full, rest = divmod(seq, 8192)
        chunked = full * 8192**2 + rest**2
        want = per_key * (12 * seq**2 + 36 * chunked)
        assert training_flops(c, seq, seq).attention == pytest.approx(want, rel=1e-12)
    assert training_flops(c, 4096, 4096).attention == per_key * 48 * 4096**2


def _reference_loss(params, batch, c: ArchConfig, group: int, capacity: float):
    """Llama 4 as a plain loop over unstacked layers (each from its own stack, in layer
    order) with whole-matrix attention: RoPE and the weightless q/k norm in three layers of
    four, none in the fourth; the MoE layers through the same expert function."""
    x = jnp.take(params["embed"]["embedding"], batch["inputs"], axis=0)
    inv = rope_frequencies(c.head_dim, c.rope_theta, c.rope_scaling)
    taken = {"layers": 0, "dense_layers": 0}
    for i in range(c.layers):
        moe = c.is_moe_layer(i)
        stack = "layers" if moe or not c.is_moe else "dense_layers"
        p = jax.tree.map(lambda w, j=taken[stack]: w[j], params[stack])
        taken[stack] += 1
        h = rms_norm(x, p["attn_norm"]["scale"], c.norm_eps)
        a = p["attn"]
        q, k, v = (jnp.einsum("bsd,dnk->bsnk", h, a[w]) for w in ("wq", "wk", "wv"))
        if c.roped(i):
            q, k = apply_rope(q, inv), apply_rope(k, inv)
            if c.qk_l2_norm:
                q, k = (y * jax.lax.rsqrt(jnp.mean(y * y, -1, keepdims=True) + c.norm_eps)
                        for y in (q, k))  # fmt: skip
        chunk = c.attention_chunk if c.roped(i) and c.attention_chunk < q.shape[1] else 0
        o = jnp.einsum("bsnk,nkd->bsd", naive_attention(q, k, v, chunk=chunk), a["wo"])
        x = x + o
        h = rms_norm(x, p["mlp_norm"]["scale"], c.norm_eps)
        if moe:
            y, _ = moe_mlp(p["moe"], h, top_k=1, capacity_factor=capacity, group=group,
                           activation="silu", scores="sigmoid", normalize=False)  # fmt: skip
        else:
            y = gated_mlp(p["mlp"], h, "silu")
        x = x + y
    x = rms_norm(x, params["final_norm"]["scale"], c.norm_eps)
    logits = jnp.einsum("bsd,dv->bsv", x, params["unembed"])
    logp = jax.nn.log_softmax(logits.astype(jnp.float32))
    return -jnp.mean(jnp.take_along_axis(logp, batch["targets"][..., None], -1))


@pytest.mark.parametrize(
    ("name", "chunk"), [("llama4-scout", 0), ("llama4-maverick", 0), ("llama4-scout", 16)]
)
def test_the_block_scan_is_the_plain_loop(name: str, chunk: int) -> None:
    """8 layers (two blocks of 4) of 64 positions: loss and gradients equal the loop's, the
    RoPE layers within one chunk (the causal mask) or within chunks of 16 (four of them)."""
    sizes = small(name, **({"attention_chunk": chunk} if chunk else {}))
    model = get_model(name, **sizes)
    c = model.info["config"]
    params, _, batch = init_train_state(model, jax.random.key(0))
    loss, grads = compiled(jax.value_and_grad(model.loss), params, batch)(params, batch)

    def ref(p, b):
        return _reference_loss(p, b, c, sizes["moe_group"], sizes["capacity_factor"])

    want, want_grads = compiled(jax.value_and_grad(ref), params, batch)(params, batch)
    np.testing.assert_allclose(float(loss), float(want), rtol=2e-5)
    for a, b in zip(jax.tree.leaves(grads), jax.tree.leaves(want_grads), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-3, atol=2e-5)


def test_maverick_trains_under_expert_parallelism_as_on_one_device() -> None:
    name = "llama4-maverick"
    model = get_model(name, **small(name))
    state = init_train_state(model, jax.random.key(0))
    want_params, _, want_loss, want_grads = compiled(adam_step(model), *state)(*state)
    new_params, loss, grads = sharded_adam_step(model, "ep", state[0], state[2])
    np.testing.assert_allclose(float(loss), float(want_loss), rtol=1e-5)
    close(grads, want_grads, atol=1e-6)
    close_after_adam(new_params, want_params, want_grads)


@pytest.mark.parametrize(
    ("name", "chunk"), [("llama4-scout", 0), ("llama4-maverick", 0), ("llama4-scout", 16)]
)
def test_the_compiled_model_flops_are_the_formula(name: str, chunk: int) -> None:
    """One sequence per device, no remat: a shared and one routed expert a token (capacity
    padding apart), Maverick's dense MLPs in every other layer; with chunks of 16 in 64
    positions, each chunk in full (the band's edge block, always outside the chunk, apart)."""
    changes = {"attention_chunk": chunk} if chunk else {}
    cost, _, model = step_cost(name, batch=1, remat="none", **changes)
    assert cost.model_flops_per_device == pytest.approx(formula(model), rel=1e-9)
    if chunk:
        assert formula(model) < formula(get_model(name, **small(name, batch=1, remat="none")))


def test_a_deviceless_tpu_plan_runs_chunks_through_the_kernels() -> None:
    """Scout at 256 positions in chunks of 128 on a deviceless v5p slice: the RoPE layers'
    kernels visit the band of a window of one chunk (2 blocks of 128 keys) and count the
    chunk's 128; the step's model flops are MaxText's Llama 4 formula."""
    name = "llama4-scout"
    sizes = small(name, seq=256, attention_block=128, attention_chunk=128, remat="none",
                  compute_dtype="bfloat16", capacity_factor=1.0)  # fmt: skip
    sizes.pop("batch")
    c = sv.compare(name, ["fsdp"], target="v5p:2x2x2", batch_per_device=1, **sizes)
    cost = c.results[0].report.cost
    assert cost is not None
    kernels = {k.name: k for k in cost.kernels if k.counted}
    assert kernels["flash_forward_chunk_128_of_256"].model_flops == pytest.approx(
        kernels["flash_forward_chunk_128_of_256"].flops / 2
    )
    assert "flash_forward" in kernels  # the NoPE layers: the whole causal sequence
    want = training_flops(get_model(name, **sizes).info["config"], tokens=256, seq=256)
    assert cost.model_flops_per_device == pytest.approx(want.total, rel=1e-9)


@pytest.mark.parametrize(
    ("name", "tflops", "tokens", "halved"),
    [("llama4-maverick", 160.005, 1321.725, False), ("llama4-scout", 225.491, 2070.487, True)],
)
def test_the_published_v5p_flops_per_token_are_the_formula(
    name: str, tflops: float, tokens: float, halved: bool
) -> None:
    """tpu-recipes' v5p logs (training/v5p/Llama4-Maverick-17B-128E-Maxtext and
    Llama4-Scout-17B-16E-Maxtext, SL 8192): TFLOP/s over tokens/s a device is MaxText's count
    a token, to 6 figures. Maverick's recipe ran MaxText tpu-recipes-v0.1.3, which counts
    causal attention in full; Scout's a later commit (jax 0.7.0), which halves it."""
    c = get_config(name)
    per_token = training_flops(c, tokens=8192, seq=8192, causal_half=halved).total / 8192
    assert per_token == pytest.approx(tflops * 1e12 / tokens, rel=2e-5)
