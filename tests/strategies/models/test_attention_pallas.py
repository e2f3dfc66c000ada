"""Pallas attention is exact attention (Pallas's interpreter, on CPU), and it compiles for a
TPU without one, its three kernels declaring the flops the project counts."""

from __future__ import annotations

import importlib.util
import json
import os
import re

# libtpu takes a machine-wide lock unless told that several processes may load it;
# deviceless topologies need no exclusive TPU (as tests/analysis/estimate/test_placement_tpu.py).
os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from shardviz.capture.hlo.matmuls import REMAT_MARK  # noqa: E402
from shardviz.strategies.models.attention import naive_attention  # noqa: E402
from shardviz.strategies.models.attention_pallas import pallas_attention  # noqa: E402


def qkv(heads: int, kv_heads: int, seq: int = 64, dim: int = 32, dtype=jnp.float32):
    k1, k2, k3, k4 = jax.random.split(jax.random.key(0), 4)
    b = 2
    return (
        jax.random.normal(k1, (b, seq, heads, dim), dtype),
        jax.random.normal(k2, (b, seq, kv_heads, dim), dtype),
        jax.random.normal(k3, (b, seq, kv_heads, dim), dtype),
        jax.random.normal(k4, (b, seq, heads, dim), jnp.float32),  # a scalar read-out's weights
    )


def value_and_grads(attend, w):
    """The value and (q, k, v) gradients of a scalar read-out of the attention output."""
    loss = lambda q, k, v: jnp.sum(attend(q, k, v).astype(jnp.float32) * w)  # noqa: E731
    return jax.jit(jax.value_and_grad(loss, argnums=(0, 1, 2)))


def pallas(block_q: int, block_kv: int, **kw):
    return lambda q, k, v: pallas_attention(q, k, v, block_q=block_q, block_kv=block_kv, **kw)


BLOCKS = [(4, 2, 16, 16), (4, 2, 16, 32), (4, 4, 32, 8), (4, 1, 64, 64), (4, 2, 128, 128)]


@pytest.mark.parametrize(("heads", "kv_heads", "block_q", "block_kv"), BLOCKS)
def test_forward_equals_naive(heads, kv_heads, block_q, block_kv) -> None:
    q, k, v, _ = qkv(heads, kv_heads)
    got = jax.jit(pallas(block_q, block_kv))(q, k, v)  # interpret=None: CPU -> interpreted
    assert got.shape == q.shape and got.dtype == q.dtype
    np.testing.assert_allclose(got, naive_attention(q, k, v), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("heads", "kv_heads", "block_q", "block_kv"), BLOCKS[:4])
def test_gradients_equal_naive(heads, kv_heads, block_q, block_kv) -> None:
    q, k, v, w = qkv(heads, kv_heads)
    want = value_and_grads(naive_attention, w)(q, k, v)
    got = value_and_grads(pallas(block_q, block_kv), w)(q, k, v)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-4)
    for g, h in zip(got[1], want[1], strict=True):
        np.testing.assert_allclose(g, h, rtol=1e-4, atol=1e-5)


def test_bf16_inputs_stay_close() -> None:
    q, k, v, w = qkv(4, 2, dtype=jnp.bfloat16)
    f32 = [x.astype(jnp.float32) for x in (q, k, v)]
    out = jax.jit(pallas(32, 16))(q, k, v)
    assert out.dtype == jnp.bfloat16
    np.testing.assert_allclose(out.astype(jnp.float32), naive_attention(*f32), atol=5e-2)
    _, got = value_and_grads(pallas(32, 16), w)(q, k, v)
    _, want = value_and_grads(naive_attention, w)(*f32)
    for g, h, x in zip(got, want, (q, k, v), strict=True):
        assert g.dtype == x.dtype == jnp.bfloat16
        np.testing.assert_allclose(g.astype(jnp.float32), h, atol=0.1 * float(jnp.abs(h).max()))


def test_blocks_must_divide_the_sequence() -> None:
    q, k, v, _ = qkv(4, 2)
    with pytest.raises(ValueError, match="does not divide"):
        pallas_attention(q, k, v, block_q=24, block_kv=16)
    # capped at S: 512 > 64 is one block
    np.testing.assert_allclose(
        pallas(512, 512)(q, k, v), naive_attention(q, k, v), rtol=1e-5, atol=1e-5
    )


def _tpu_device(name: str):
    if importlib.util.find_spec("libtpu") is None:
        pytest.skip("needs libtpu (the shardviz[tpu] extra) for a deviceless TPU compile")
    from jax.experimental import topologies

    # One chip: a slice smaller than a host needs the host bounds said.
    return topologies.get_topology_desc(name, "tpu", chips_per_host_bounds=[1, 1, 1]).devices[0]


@pytest.mark.parametrize("chip", ["v5e:1x1", "v6e:1x1"])
def test_compiles_for_tpu_and_declares_its_flops(chip: str) -> None:
    b, s, h, n, d = 1, 512, 4, 2, 128
    sharding = jax.sharding.SingleDeviceSharding(_tpu_device(chip))
    args = [jax.ShapeDtypeStruct((b, s, x, d), jnp.bfloat16, sharding=sharding) for x in (h, n, n)]

    def loss(q, k, v):
        out = pallas_attention(q, k, v, block_q=128, block_kv=256, interpret=False)
        return jnp.sum(out.astype(jnp.float32))

    compiled = jax.jit(jax.value_and_grad(loss, argnums=(0, 1, 2))).lower(*args).compile()

    unit = b * h * s * s * d
    kernels = {}
    for line in compiled.as_text().splitlines():
        if 'custom_call_target="tpu_custom_call"' not in line:
            continue
        cost = json.loads(re.search(r'"cost_estimate":\s*(\{[^}]*\})', line)[1])
        op_name = re.search(r'op_name="([^"]*)"', line)[1]
        kernel = re.search(r"flash_(forward|backward_dkv|backward_dq)", op_name)[0]
        kernels[kernel] = (int(cost["flops"]), op_name)
    # forward: QK^T, PV; dK/dV: QK^T, dP, dV, dK; dQ: QK^T, dP, dQ (2 flops a multiply-add)
    assert {k: f for k, (f, _) in kernels.items()} == {
        "flash_forward": 4 * unit,
        "flash_backward_dkv": 8 * unit,
        "flash_backward_dq": 6 * unit,
    }
    assert [REMAT_MARK in op for _, op in kernels.values()].count(True) == 1
    assert REMAT_MARK in kernels["flash_backward_dq"][1]
    # XLA adds its glue (transposes, delta, the group sums, the loss) to the kernels' estimates
    flops = compiled.cost_analysis()["flops"]
    assert 18 * unit <= flops <= 1.02 * 18 * unit


@pytest.mark.parametrize(("window", "block"), [(16, 16), (20, 16), (40, 16), (8, 16), (32, 8)])
def test_a_sliding_window_visits_its_band_and_equals_naive(window: int, block: int) -> None:
    """Gemma 3's local layers: the band of blocks the window reaches, from the diagonal
    (a window of a block, of part of one, of several and not a multiple of one): forward
    and gradients are the whole masked matrix's."""
    q, k, v, w = qkv(4, 2)
    attend = pallas(block, block, window=window)
    want = value_and_grads(lambda q, k, v: naive_attention(q, k, v, window=window), w)(q, k, v)
    got = value_and_grads(attend, w)(q, k, v)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-4)
    for g, h in zip(got[1], want[1], strict=True):
        np.testing.assert_allclose(g, h, rtol=1e-4, atol=1e-5)
    # the band, not the whole sequence: the forward kernel's grid has 1 + ceil((w-1)/block)
    band = 1 + -(-(window - 1) // block)
    grids = _grids(jax.make_jaxpr(attend)(q, k, v).jaxpr)
    assert grids == {f"flash_forward_window_{window}_of_{band * block}": (2, 4, 64 // block, band)}


@pytest.mark.parametrize("chunk", [16, 24])
def test_chunks_visit_the_band_of_one_and_equal_naive(chunk: int) -> None:
    """Llama 4's chunked layers in the kernels: the band of a window of the chunk, masked to
    it; named with the chunk's keys of the band's (``_chunk_16_of_32``)."""
    q, k, v, w = qkv(4, 2)
    attend = pallas(16, 16, chunk=chunk)
    want = value_and_grads(lambda q, k, v: naive_attention(q, k, v, chunk=chunk), w)(q, k, v)
    got = value_and_grads(attend, w)(q, k, v)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-4)
    for g, h in zip(got[1], want[1], strict=True):
        np.testing.assert_allclose(g, h, rtol=1e-4, atol=1e-5)
    keys = 16 * (1 + -(-(chunk - 1) // 16))
    assert set(_grids(jax.make_jaxpr(attend)(q, k, v).jaxpr)) == {
        f"flash_forward_chunk_{chunk}_of_{keys}"
    }


def _grids(jaxpr) -> dict:
    """Each Pallas kernel's name and grid in ``jaxpr``, nested calls included."""
    out = {}
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "pallas_call":
            p = eqn.params
            name = p.get("name") or p["name_and_src_info"].name
            out[name] = tuple(p["grid_mapping"].grid)
        for v in eqn.params.values():
            inner = getattr(v, "jaxpr", v)
            if hasattr(inner, "eqns"):
                out |= _grids(inner)
    return out


def test_a_window_needs_equal_blocks_and_spans_the_sequence_as_causal() -> None:
    q, k, v, _ = qkv(4, 2)
    with pytest.raises(ValueError, match="equal blocks"):
        pallas_attention(q, k, v, block_q=32, block_kv=16, window=16)
    # a window of the whole sequence or more is the causal mask: the plain kernels
    grids = _grids(jax.make_jaxpr(pallas(16, 16, window=64))(q, k, v).jaxpr)
    assert grids == {"flash_forward": (2, 4, 4, 4)}
