"""fp8 training matmuls (quantization="fp8"): close to bf16 where they run, and counted at the
fp8 peak, forward and backward, where the compiler keeps them (a deviceless TPU7x)."""

from __future__ import annotations

import importlib.util

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import shardviz as sv
from shardviz.errors import ShardvizError
from shardviz.strategies.models.fp8 import fp8_einsum, fp8_ragged_dot
from shardviz.strategies.zoo import get_model, init_train_state

from .small import compiled, small

needs_tpu = pytest.mark.skipif(
    importlib.util.find_spec("libtpu") is None, reason="needs the shardviz[tpu] extra"
)


def _cosine(a: jax.Array, b: jax.Array) -> float:
    a, b = np.ravel(np.asarray(a, np.float32)), np.ravel(np.asarray(b, np.float32))
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


@pytest.mark.parametrize("spec", ["bsd,dnk->bsnk", "egcd,edf->egcf", "bsf,fd->bsd"])
def test_fp8_einsum_and_its_gradients_follow_the_exact_ones(spec):
    """E4M3 keeps 3 mantissa bits, E5M2 2: each result within a few percent of float32's,
    in direction nearly the same; the gradients come back in the inputs' dtype."""
    a, b, _ = spec.replace("->", ",").split(",")
    sizes = dict(b=2, s=8, d=16, n=4, k=8, e=2, g=2, c=4, f=12)
    kx, kw, kg = jax.random.split(jax.random.key(0), 3)
    x = jax.random.normal(kx, [sizes[i] for i in a], jnp.bfloat16)
    w = jax.random.normal(kw, [sizes[i] for i in b], jnp.bfloat16)

    def loss(f, x, w):
        out = f(spec, x, w)
        g = jax.random.normal(kg, out.shape, jnp.float32)
        return jnp.sum(out.astype(jnp.float32) * g)

    exact = jax.value_and_grad(lambda x, w: loss(jnp.einsum, x.astype(jnp.float32),
                                                 w.astype(jnp.float32)), (0, 1))  # fmt: skip
    fp8 = jax.value_and_grad(lambda x, w: loss(fp8_einsum, x, w), (0, 1))
    (_, (dx0, dw0)), (_, (dx, dw)) = exact(x, w), fp8(x, w)
    assert fp8_einsum(spec, x, w).dtype == jnp.bfloat16
    assert dx.dtype == x.dtype and dw.dtype == w.dtype
    assert _cosine(fp8_einsum(spec, x, w), jnp.einsum(spec, x, w)) > 0.99
    assert _cosine(dx, dx0) > 0.98 and _cosine(dw, dw0) > 0.98


def test_fp8_ragged_dot_and_its_gradients_follow_the_exact_ones():
    """A dropless MoE's grouped matmul in fp8: E4M3 operands, E5M2 gradients, each close to
    ``jax.lax.ragged_dot``'s; rows past the groups stay zero and get no gradient, an empty
    group included."""
    keys = jax.random.split(jax.random.key(2), 3)
    x = jax.random.normal(keys[0], (64, 32), jnp.bfloat16)
    w = jax.random.normal(keys[1], (4, 32, 48), jnp.bfloat16)
    sizes = jnp.array([10, 20, 0, 30], jnp.int32)  # 60 of 64 rows; group 2 empty
    scale = jax.random.normal(keys[2], (64, 48))

    def loss(f, x, w):
        return (f(x, w, sizes).astype(jnp.float32) * scale).sum()

    exact = jax.value_and_grad(lambda x, w: loss(jax.lax.ragged_dot, x, w), (0, 1))(x, w)
    (_, (dx, dw)), (_, (dx0, dw0)) = (
        jax.value_and_grad(lambda x, w: loss(fp8_ragged_dot, x, w), (0, 1))(x, w),
        exact,
    )
    out = fp8_ragged_dot(x, w, sizes)
    assert out.dtype == jnp.bfloat16 and dx.dtype == dw.dtype == jnp.bfloat16
    assert _cosine(out, jax.lax.ragged_dot(x, w, sizes)) > 0.99
    assert _cosine(dx, dx0) > 0.99 and _cosine(dw, dw0) > 0.99
    assert not np.asarray(out[60:], np.float32).any() and not np.asarray(dx[60:], np.float32).any()
    assert not np.asarray(dw[2], np.float32).any()


def test_fp8_clips_instead_of_overflowing():
    big = jnp.array([[1e6, -1e6]], jnp.bfloat16)
    out = fp8_einsum("ij,jk->ik", big, jnp.ones((2, 1), jnp.bfloat16))
    assert bool(jnp.all(jnp.isfinite(out)))


def test_a_small_llama_trains_in_fp8_close_to_bf16():
    sizes = small("llama3.1-8b", layers=1, compute_dtype="bfloat16")
    losses, grads = {}, {}
    for q in ("", "fp8"):
        model = get_model("llama3.1-8b", quantization=q, **sizes)
        params, _, batch = init_train_state(model, jax.random.key(0))
        loss, g = compiled(jax.value_and_grad(model.loss), params, batch)(params, batch)
        losses[q], grads[q] = float(loss), g
    assert np.isfinite(losses["fp8"]) and losses["fp8"] == pytest.approx(losses[""], rel=0.02)
    wq = [grads[q]["layers"]["attn"]["wq"] for q in ("", "fp8")]
    assert _cosine(*wq) > 0.9
    assert "fp8 weight matmuls" in get_model("llama3.1-8b", quantization="fp8", **sizes).description


def test_an_unknown_quantization_names_the_ones_there_are():
    with pytest.raises(ShardvizError, match="'fp8'"):
        get_model("llama3.1-8b", quantization="int4", **small("llama3.1-8b"))


@needs_tpu
def test_on_ironwood_every_weight_matmul_runs_at_the_fp8_peak():
    """Forward (2 flops a weight a token) and backward (4): 6 x weights x tokens per device
    with two fp8 operands, by hand; attention's matmuls and the head stay bf16."""
    dims = dict(layers=2, d_model=128, heads=4, kv_heads=2, head_dim=32, ffn=256, vocab=512,
                seq=128, batch=8)  # fmt: skip
    plans = {}
    for q in ("", "fp8"):
        c = sv.compare("llama3.1-8b", ["fsdp"], target="tpu7x:2x2x1", quantization=q,
                       remat="none", **dims)  # fmt: skip
        plans[q] = c.results[0].report
    tokens = dims["batch"] * dims["seq"] // 8  # per device: the batch split over 8 devices
    d, f = dims["d_model"], dims["ffn"]
    weights = dims["layers"] * (2 * d * d + 2 * d * 64 + 3 * d * f)  # q, o; k, v; MLP
    narrow = {
        q: sum(fl * op.runs for op in r.cost.ops for p, fl in op.narrow_flops if p == "fp8")
        for q, r in plans.items()
    }
    assert narrow == {"": 0, "fp8": 6 * weights * tokens}
    total = {q: sum(op.flops * op.runs for op in r.cost.ops) for q, r in plans.items()}
    assert total["fp8"] == total[""]  # the same matmuls, at another precision
    e, e8 = plans[""].estimate, plans["fp8"].estimate
    assert e8.compute_seconds < e.compute_seconds
    share = narrow["fp8"] / total["fp8"]
    assert e8.peak_flops_per_second == pytest.approx(
        (2.307e15 / 2) / (1 - share + share / 2)
    )  # the matmuls' own peak: fp8 twice bf16's on TPU7x
