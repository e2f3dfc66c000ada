"""Gemma 3: five local (sliding-window) layers to one global, sandwich norms, a scaled
embedding and query, two RoPE bases; the block scan against a plain loop over the layers."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import shardviz as sv
from shardviz.errors import ShardvizError
from shardviz.strategies.models.attention import blockwise_attention, naive_attention
from shardviz.strategies.models.configs import ArchConfig, get_config, param_count
from shardviz.strategies.models.flops import training_flops
from shardviz.strategies.models.gated_mlp import gated_mlp
from shardviz.strategies.models.norm import head_norm, rms_norm
from shardviz.strategies.models.rope import apply_rope, rope_frequencies
from shardviz.strategies.zoo import get_model, init_train_state

from .small import compiled, formula, small, step_cost


@pytest.mark.parametrize(
    ("name", "non_embedding"), [("gemma3-12b", 10_759e6), ("gemma3-27b", 25_600e6)]
)
def test_non_embedding_parameters_are_the_published_ones(name: str, non_embedding: float) -> None:
    """Gemma 3's report gives the text decoder's parameters without the embedding."""
    c = get_config(name)
    assert c.published_non_embedding == non_embedding
    counted = param_count(c) - c.vocab * c.d_model
    assert abs(counted / non_embedding - 1) < 1e-3
    # By hand: per layer q, k, v, o; gate, up, down; 4 norm scales and 2 head norms.
    attention = c.d_model * c.head_dim * (2 * c.heads + 2 * c.kv_heads) + 2 * c.head_dim
    per_layer = attention + 3 * c.d_model * c.ffn + 4 * c.d_model
    assert counted == c.layers * per_layer + c.d_model


def test_five_local_layers_to_one_global() -> None:
    c = get_config("gemma3-27b")
    windows = [c.window_of(i) for i in range(c.layers)]
    assert windows[:6] == [1024] * 5 + [0]
    assert windows.count(0) == 10 and len(windows) == 62  # 10 blocks of 6, 2 local after


def test_a_global_every_without_a_window_is_refused() -> None:
    with pytest.raises(ShardvizError, match="sliding_window"):
        ArchConfig("x", layers=2, d_model=8, heads=2, kv_heads=2, head_dim=4, ffn=8, vocab=8,
                   global_every=6)  # fmt: skip


@pytest.mark.parametrize(("seq", "block", "window"), [(32, 8, 8), (32, 8, 5), (64, 16, 20)])
def test_windowed_blocks_match_the_whole_matrix(seq: int, block: int, window: int) -> None:
    """The band of blocks gives the whole masked matrix's output and gradients."""
    keys = jax.random.split(jax.random.key(0), 4)
    q = jax.random.normal(keys[0], (2, seq, 4, 8))
    k, v = (jax.random.normal(x, (2, seq, 2, 8)) for x in keys[1:3])
    d_out = jax.random.normal(keys[3], q.shape)

    def banded(q, k, v):
        return blockwise_attention(q, k, v, block_q=block, block_kv=block, window=window)

    def whole(q, k, v):
        return naive_attention(q, k, v, window=window)

    np.testing.assert_allclose(banded(q, k, v), whole(q, k, v), atol=2e-6)
    for f, g in zip(
        jax.grad(lambda *a: jnp.sum(banded(*a) * d_out), argnums=(0, 1, 2))(q, k, v),
        jax.grad(lambda *a: jnp.sum(whole(*a) * d_out), argnums=(0, 1, 2))(q, k, v),
        strict=True,
    ):
        np.testing.assert_allclose(f, g, atol=5e-6)


def test_the_band_computes_only_the_blocks_the_window_reaches() -> None:
    """At 64 positions in blocks of 8 with a window of 8, each query block meets 2 key
    blocks, not 8: the forward's score matmul flops are a quarter of the causal ones."""

    def cost(window: int):
        x = jnp.ones((1, 64, 2, 8), jnp.float32)

        def attend(q, k, v):
            return blockwise_attention(q, k, v, block_q=8, block_kv=8, window=window)

        return sv.explain(attend, x, x, x, run=False).cost  # every loop trip counted

    causal = 2 * 2 * 64 * 64 * 2 * 8  # QK^T and PV over every block: 2 x 2 x S x S x H x K
    assert cost(0).matmul_flops_per_device == cost(0).model_flops_per_device == causal
    banded = cost(8)
    assert banded.matmul_flops_per_device == causal * 2 / 8  # run: 2 blocks of 8 a query
    assert banded.model_flops_per_device == causal * 1 / 8  # counted: S x window


def _reference_loss(params, batch, c: ArchConfig):
    """Gemma 3's loss written as a plain loop over unstacked layers and whole-matrix
    attention: what the decoder's block scan must equal."""
    x = jnp.take(params["embed"]["embedding"], batch["inputs"], axis=0) * math.sqrt(c.d_model)
    seq = x.shape[1]
    for i in range(c.layers):
        p = jax.tree.map(lambda w, i=i: w[i], params["layers"])
        window = c.window_of(i)
        theta, linear = (c.local_rope_theta, 1.0) if window else (c.rope_theta, 8.0)
        window = window if window < seq else 0
        inv = rope_frequencies(c.head_dim, theta, None, linear)
        h = rms_norm(x, p["attn_norm"]["scale"], c.norm_eps)
        a = p["attn"]

        def proj(w, h=h, a=a):
            return head_norm(jnp.einsum("bsd,dnk->bsnk", h, a[w]), a, w, c)

        q, k, v = apply_rope(proj("wq"), inv), apply_rope(proj("wk"), inv), proj("wv")
        scale = c.query_scale or c.head_dim**-0.5
        o = naive_attention(q, k, v, window=window, scale=scale)
        o = jnp.einsum("bsnk,nkd->bsd", o, a["wo"])
        x = x + rms_norm(o, p["attn_post_norm"]["scale"], c.norm_eps)
        h = rms_norm(x, p["mlp_norm"]["scale"], c.norm_eps)
        y = gated_mlp(p["mlp"], h, "gelu")
        x = x + rms_norm(y, p["mlp_post_norm"]["scale"], c.norm_eps)
    x = rms_norm(x, params["final_norm"]["scale"], c.norm_eps)
    logits = jnp.einsum("bsd,vd->bsv", x, params["embed"]["embedding"])
    logp = jax.nn.log_softmax(logits.astype(jnp.float32))
    return -jnp.mean(jnp.take_along_axis(logp, batch["targets"][..., None], -1))


@pytest.mark.parametrize(
    ("name", "window"), [("gemma3-12b", 16), ("gemma3-27b", 16), ("gemma3-12b", 64)]
)
def test_the_block_scan_is_the_plain_loop(name: str, window: int) -> None:
    """8 layers (a block of 5 local + 1 global, then 2 local) of 64 positions: loss and
    gradients equal the plain loop's, with a window of 16 and with one spanning the sequence
    (the local layers' attention is then causal, but their RoPE base stays their own)."""
    model = get_model(name, **small(name, sliding_window=window))
    c = model.info["config"]
    assert c.layers == 8 and c.sliding_window == window
    params, _, batch = init_train_state(model, jax.random.key(0))
    loss, grads = compiled(jax.value_and_grad(model.loss), params, batch)(params, batch)
    want, want_grads = compiled(
        jax.value_and_grad(lambda p, b: _reference_loss(p, b, c)), params, batch
    )(params, batch)
    np.testing.assert_allclose(float(loss), float(want), rtol=2e-5)
    for a, b in zip(jax.tree.leaves(grads), jax.tree.leaves(want_grads), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-3, atol=2e-5)


def test_the_window_changes_the_loss() -> None:
    name = "gemma3-12b"
    params, _, batch = init_train_state(get_model(name, **small(name)), jax.random.key(0))
    losses = [
        float(compiled(m.loss, params, batch)(params, batch))
        for m in (get_model(name, **small(name)), get_model(name, **small(name, sliding_window=64)))
    ]
    assert losses[0] != pytest.approx(losses[1], abs=1e-6)


def test_the_model_flops_count_the_window() -> None:
    """MaxText's convention for Gemma 3: a global layer's attention over seq x seq, a local
    one's over seq x window."""
    c = get_config("gemma3-12b")
    seq, tokens = 8192, 8192
    f = training_flops(c, tokens, seq)
    per_key = 4 * c.heads * c.head_dim * 3 * tokens  # flops per key each query sees, x3
    assert f.attention == per_key * (8 * seq + 40 * 1024)


def test_serving_refuses_sliding_windows_rather_than_overcount() -> None:
    model = get_model("gemma3-12b")
    with pytest.raises(ShardvizError, match="sliding-window layers"):
        model.kv_bytes_per_token()
    with pytest.raises(ShardvizError, match="sliding-window layers"):
        sv.compare("gemma3-12b", ["tp"], mode="decode", batch=8, context=64, layers=6)


@pytest.mark.parametrize("remat", ["none", "full"])
def test_the_compiled_model_flops_are_maxtexts_gemma3_formula(remat: str) -> None:
    """One sequence per device, 8 layers (7 local, 1 global) of 64 positions, window 16:
    the step's matmuls, recomputation and the bands' edge blocks apart, are MaxText's count
    (global layers S x S, local layers S x window). ``value_and_grad``, as a train step:
    with ``grad`` alone XLA drops the forward's logits, which only the loss needed."""
    cost, r, model = step_cost("gemma3-12b", batch=1, remat=remat)
    want = formula(model)
    # Exactly: the backward's recomputed scores take their operands through a barrier under
    # the remat mark, so XLA:CPU's library fusions, which keep no metadata, are still known
    # (without it the global layer's was taken for the model's: 16 of 2,664 units over);
    # counting every band block as the model's would be 5% over.
    assert cost.model_flops_per_device == pytest.approx(want, rel=1e-9)
    assert cost.model_flops_per_device < cost.matmul_flops_per_device


@pytest.mark.parametrize("remat", ["none", "full"])
def test_a_deviceless_tpu_plan_runs_the_local_layers_through_windowed_kernels(remat) -> None:
    """On a deviceless v5p slice every layer's attention is the Pallas kernels, the local
    layers' over their band (2 blocks of 128 keys for a window of 128): each local kernel's
    model flops are half its dense flops (times its own share), and the step's are
    MaxText's Gemma 3 formula (global layers S x S, local S x window), exactly. Under remat
    the recomputed windowed forward is known as a forward kernel (its window's half is not
    a backward kernel's share), so it is not counted twice (it was: 10.9% over here, 0.8%
    on the full-size 12B at SL 32768)."""
    name = "gemma3-12b"
    sizes = small(name, seq=256, attention_block=128, sliding_window=128, remat=remat,
                  compute_dtype="bfloat16")  # fmt: skip
    sizes.pop("batch")
    c = sv.compare(name, ["fsdp"], target="v5p:2x2x2", batch_per_device=1, **sizes)
    cost = c.results[0].report.cost
    assert cost is not None
    kernels = {k.name: k for k in cost.kernels if k.counted}
    local = kernels["flash_forward_window_128_of_256"]
    runs = 1 if remat == "none" else 2  # under remat the forward runs again, counted once
    assert local.model_flops == pytest.approx(local.flops / 2 / runs)
    assert {"flash_forward", "flash_backward_dkv_window_128_of_256"} <= set(kernels)
    want = training_flops(get_model(name, **sizes).info["config"], tokens=256, seq=256)
    assert cost.model_flops_per_device == pytest.approx(want.total, rel=1e-9)
