"""Blockwise attention is exact attention, and no S x S scores or [B, S, vocab] logits exist."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from shardviz.strategies.models import blockwise_attention, naive_attention
from shardviz.strategies.models.configs import Llama3RopeScaling
from shardviz.strategies.models.rope import apply_rope, rope_frequencies
from shardviz.strategies.zoo import get_model


def qkv(heads: int, kv_heads: int, seq: int = 64, dtype=jnp.float32):
    k1, k2, k3, k4 = jax.random.split(jax.random.key(0), 4)
    b, d = 2, 16
    return (
        jax.random.normal(k1, (b, seq, heads, d), dtype),
        jax.random.normal(k2, (b, seq, kv_heads, d), dtype),
        jax.random.normal(k3, (b, seq, kv_heads, d), dtype),
        jax.random.normal(k4, (b, seq, heads, d), dtype),  # weights of a scalar read-out
    )


@pytest.mark.parametrize(
    ("heads", "kv_heads", "block_q", "block_kv"),
    [(8, 2, 16, 16), (8, 2, 16, 32), (4, 4, 32, 8), (8, 1, 64, 64), (8, 2, 128, 128)],
)
def test_blockwise_equals_naive_values_and_grads(heads, kv_heads, block_q, block_kv) -> None:
    q, k, v, w = qkv(heads, kv_heads)

    def read_out(attend):
        return lambda q, k, v: jnp.sum(attend(q, k, v) * w)

    blockwise = read_out(
        lambda q, k, v: blockwise_attention(q, k, v, block_q=block_q, block_kv=block_kv)
    )
    want = jax.jit(jax.value_and_grad(read_out(naive_attention), argnums=(0, 1, 2)))(q, k, v)
    got = jax.jit(jax.value_and_grad(blockwise, argnums=(0, 1, 2)))(q, k, v)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-4)
    for g, h in zip(got[1], want[1], strict=True):
        np.testing.assert_allclose(g, h, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(("chunk", "block"), [(16, 16), (32, 16), (24, 16), (16, 8)])
def test_chunks_equal_the_masked_whole_matrix(chunk: int, block: int) -> None:
    """Llama 4's chunked layers: each query sees its own chunk's keys only (chunks of one
    block, of two, not a multiple of one): values and gradients are the whole matrix's with
    the chunk mask, and a chunk of the whole sequence is the causal mask."""
    q, k, v, w = qkv(8, 2)

    def value_and_grads(attend):
        loss = lambda q, k, v: jnp.sum(attend(q, k, v) * w)  # noqa: E731
        return jax.jit(jax.value_and_grad(loss, argnums=(0, 1, 2)))(q, k, v)

    got = value_and_grads(
        lambda q, k, v: blockwise_attention(q, k, v, block_q=block, block_kv=block, chunk=chunk)
    )
    want = value_and_grads(lambda q, k, v: naive_attention(q, k, v, chunk=chunk))
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-4)
    for g, h in zip(got[1], want[1], strict=True):
        np.testing.assert_allclose(g, h, rtol=1e-4, atol=1e-5)
    assert abs(float(want[0]) - float(value_and_grads(naive_attention)[0])) > 1e-3
    whole = blockwise_attention(q, k, v, block_q=block, block_kv=block, chunk=64)
    np.testing.assert_allclose(whole, naive_attention(q, k, v), rtol=1e-5, atol=1e-5)


def test_a_window_and_chunks_in_one_layer_are_refused() -> None:
    q, k, v, _ = qkv(8, 2)
    with pytest.raises(ValueError, match="a sliding window"):
        blockwise_attention(q, k, v, block_q=16, block_kv=16, window=16, chunk=32)


def test_the_first_position_attends_only_to_itself() -> None:
    q, k, v, _ = qkv(4, 2)
    out = blockwise_attention(q, k, v, block_q=16, block_kv=16)
    np.testing.assert_allclose(out[:, 0, :2], v[:, 0, :1].repeat(2, axis=1), rtol=1e-6)


def test_bf16_inputs_stay_close() -> None:
    q, k, v, _ = qkv(8, 2, dtype=jnp.bfloat16)
    got = jax.jit(blockwise_attention, static_argnames=("block_q", "block_kv"))(
        q, k, v, block_q=16, block_kv=16
    )
    assert got.dtype == jnp.bfloat16
    want = naive_attention(*(x.astype(jnp.float32) for x in (q, k, v)))
    np.testing.assert_allclose(got.astype(jnp.float32), want, atol=5e-2)


def _avals(jaxpr):
    """Every intermediate shape of a jaxpr, its sub-jaxprs (scan, remat, custom_vjp) included."""
    for eqn in jaxpr.eqns:
        for var in eqn.outvars:
            yield tuple(getattr(var.aval, "shape", ()))
        for param in eqn.params.values():
            for sub in param if isinstance(param, list | tuple) else (param,):
                inner = getattr(sub, "jaxpr", sub)
                if hasattr(inner, "eqns"):
                    yield from _avals(inner)


@pytest.mark.parametrize("remat", ["none", "full", "save_matmuls", "offload"])
def test_an_8192_token_step_holds_no_s_by_s_scores_nor_whole_logits(remat: str) -> None:
    """Traced only (no compile): forward and backward, scores and logits in pieces, under
    each remat policy (scan's partial evaluation must not hoist a stack of masks)."""
    seq, vocab, batch, heads = 8192, 512, 1, 2
    model = get_model(
        "llama3.1-8b", layers=2, d_model=16, heads=heads, kv_heads=1, head_dim=8, ffn=32,
        vocab=vocab, seq=seq, batch=batch, attention_block=512, loss_chunk=1024, remat=remat,
    )  # fmt: skip
    key = jax.random.key(0)
    params = jax.eval_shape(model.init_params, key)
    data = jax.eval_shape(model.make_batch, key)
    jaxpr = jax.make_jaxpr(jax.value_and_grad(model.loss))(params, data).jaxpr
    sizes = [math.prod(s) for s in _avals(jaxpr)]
    assert max(sizes) < batch * seq * vocab  # no [B, S, vocab] logits, nor a stack of chunks
    assert max(sizes) < batch * heads * seq * seq // 16  # no S x S scores (one block: 1/256)
    assert batch * heads * 512 * 512 in sizes  # a block of scores is there


def test_rope_rotates_pairs_and_llama3_scales_low_frequencies() -> None:
    plain = rope_frequencies(128, 500_000.0)
    scaled = rope_frequencies(128, 500_000.0, Llama3RopeScaling())
    np.testing.assert_allclose(plain, 500_000.0 ** (-np.arange(0, 128, 2) / 128), rtol=1e-6)
    wavelen = 2 * np.pi / plain
    np.testing.assert_allclose(scaled[wavelen < 2048], plain[wavelen < 2048])  # kept
    np.testing.assert_allclose(scaled[wavelen > 8192], plain[wavelen > 8192] / 8)  # / factor
    x = jax.random.normal(jax.random.key(1), (1, 5, 2, 8))
    y = apply_rope(x, rope_frequencies(8, 10_000.0))
    np.testing.assert_allclose(y[:, 0], x[:, 0], rtol=1e-6)  # position 0: no rotation
    np.testing.assert_allclose(  # a rotation keeps each pair's length
        jnp.linalg.norm(y.reshape(1, 5, 2, 2, 4), axis=3),
        jnp.linalg.norm(x.reshape(1, 5, 2, 2, 4), axis=3),
        rtol=1e-5,
    )
