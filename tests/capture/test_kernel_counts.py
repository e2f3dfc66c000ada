"""jax's own kernels, compiled deviceless for TPU v5e inside ``shard_map`` as frameworks
call them, explained with ``run=False``: each kernel's hardware and model flops per device
against a hand count, and no kernel left silent.

Hand counts (one device: batch 1 of 4, ``H`` heads, sequence ``S``, head dim ``D``):
attention's forward is two matmuls of ``2 S S D`` per head (Q K^T, P V); a causal mask
with ``n`` blocks a side computes ``n (n + 1) / 2`` of the ``n^2`` blocks. The backward
runs Q K^T and dP again: a separate dq kernel computes 3 matmuls (Q K^T, dP, dQ), a dkv
kernel 4 (Q K^T, dP, dV, dK), a fused one 5. The field's model flops are the forward's
two and the backward's four (dP, dV, dK, dQ) in full, whatever the mask skips.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz as sv

B, H, KV, S, D = 4, 4, 2, 1024, 128
BLOCK = 256
MATMUL = 2.0 * 1 * H * S * S * D  # one S x S x D matmul, all heads, one device's batch


@pytest.fixture(scope="module")
def mesh() -> jax.sharding.Mesh:
    return jax.sharding.Mesh(np.array(sv.topology("v5e:2x2").devices).reshape(4), ("data",))


def _share(causal: bool) -> float:
    n = S // BLOCK
    return (n * (n + 1) / 2) / (n * n) if causal else 1.0


def _explain(mesh, attn, kv_heads: int) -> sv.Report:
    def loss(q, k, v):
        f = jax.shard_map(
            attn, mesh=mesh, in_specs=(P("data"),) * 3, out_specs=P("data"), check_vma=False
        )
        return f(q, k, v).astype(jnp.float32).sum()

    sh = NamedSharding(mesh, P("data"))
    q = jax.ShapeDtypeStruct((B, H, S, D), jnp.bfloat16, sharding=sh)
    kv = jax.ShapeDtypeStruct((B, kv_heads, S, D), jnp.bfloat16, sharding=sh)
    return sv.explain(jax.grad(loss, argnums=(0, 1, 2)), q, kv, kv, run=False)


def _check(report: sv.Report, hardware: float, model: float) -> None:
    cost = report.cost
    assert cost is not None and cost.kernels
    assert not cost.uncounted_kernels
    assert all(k.how == "counted" for k in cost.kernels)
    assert sum(k.flops or 0 for k in cost.kernels) == pytest.approx(hardware, rel=0.05)
    assert sum(k.model_flops or 0 for k in cost.kernels) == pytest.approx(model, rel=0.05)
    # the program's own figures hold them: the compiler's cost model had none of them
    assert cost.matmul_flops_per_device == pytest.approx(hardware, rel=0.05)
    assert cost.model_flops_per_device == pytest.approx(model, rel=0.05)
    assert cost.flops_per_device >= 0.95 * hardware


@pytest.mark.parametrize("causal", [True, False], ids=["causal", "full"])
@pytest.mark.parametrize("fused", [True, False], ids=["fused", "separate"])
def test_splash_attention_gqa(mesh, causal: bool, fused: bool) -> None:
    from jax.experimental.pallas.ops.tpu.splash_attention import (
        splash_attention_kernel as sk,
    )
    from jax.experimental.pallas.ops.tpu.splash_attention import (
        splash_attention_mask as sm,
    )

    one = (lambda: sm.CausalMask((S, S))) if causal else (lambda: sm.FullMask((S, S)))
    sizes = sk.BlockSizes(
        block_q=BLOCK, block_kv_compute=BLOCK, block_kv=BLOCK, block_q_dkv=BLOCK,
        block_kv_dkv=BLOCK, block_kv_dkv_compute=BLOCK,
        block_q_dq=None if fused else BLOCK, block_kv_dq=None if fused else BLOCK,
        use_fused_bwd_kernel=fused,
    )  # fmt: skip
    kernel = sk.make_splash_mha(
        mask=sm.MultiHeadMask([one() for _ in range(H)]), block_sizes=sizes,
        head_shards=1, q_seq_shards=1,
    )  # fmt: skip

    def attn(q, k, v):  # GQA: each kv head serves H // KV query heads
        k, v = jnp.repeat(k, H // KV, axis=1), jnp.repeat(v, H // KV, axis=1)
        return jax.vmap(kernel)(q, k, v)

    report = _explain(mesh, attn, KV)
    share = _share(causal)
    backward = 5 if fused else 7
    _check(report, (2 + backward) * MATMUL * share, 6 * MATMUL)
    assert report.cost.compiler_flops_per_device < 0.05 * MATMUL  # splash declares nothing
    names = {k.name for k in report.cost.kernels}
    assert any("fwd" in n for n in names) and any("dkv" in n for n in names)
    assert fused == (not any("dq" in n for n in names))


@pytest.mark.parametrize("causal", [True, False], ids=["causal", "full"])
def test_flash_attention_forward_and_backward(mesh, causal: bool) -> None:
    """jax's flash attention declares its forward's cost (as if no block were skipped);
    its backward kernels declare none: all three are counted from their bodies."""
    from jax.experimental.pallas.ops.tpu import flash_attention as fa

    sizes = fa.BlockSizes(
        block_q=BLOCK, block_k_major=BLOCK, block_k=BLOCK, block_b=1,
        block_q_major_dkv=BLOCK, block_k_major_dkv=BLOCK, block_k_dkv=BLOCK,
        block_q_dkv=BLOCK, block_k_major_dq=BLOCK, block_k_dq=BLOCK, block_q_dq=BLOCK,
    )  # fmt: skip
    report = _explain(mesh, lambda q, k, v: fa.flash_attention(
        q, k, v, causal=causal, block_sizes=sizes), H)  # fmt: skip
    _check(report, 9 * MATMUL * _share(causal), 6 * MATMUL)


def test_megablox_gmm_and_tgmm(mesh) -> None:
    """Grouped matmuls (MoE) declare their cost: 2 m k n each, whatever the groups."""
    from jax.experimental.pallas.ops.tpu.megablox import gmm

    m, k, n, groups = 1024, 512, 256, 4

    def loss(lhs, rhs, sizes):
        return (gmm(lhs, rhs, sizes, tiling=(128, 128, 128)).astype(jnp.float32) ** 2).sum()

    step = jax.shard_map(
        lambda a, b, c: jax.grad(loss, argnums=(0, 1))(a, b, c), mesh=mesh,
        in_specs=(P(),) * 3, out_specs=(P(), P()), check_vma=False,
    )  # fmt: skip
    report = sv.explain(
        step,
        jax.ShapeDtypeStruct((m, k), jnp.bfloat16),
        jax.ShapeDtypeStruct((groups, k, n), jnp.bfloat16),
        jax.ShapeDtypeStruct((groups,), jnp.int32),
        run=False,
    )
    kernels = report.cost.kernels
    assert {k.name for k in kernels} == {"gmm", "tgmm"}
    assert not report.cost.uncounted_kernels
    # forward, dlhs (gmm with the rhs transposed) and drhs (tgmm)
    assert sum(k.flops or 0 for k in kernels) == pytest.approx(3 * 2 * m * k * n, rel=0.05)
    # Each row goes through its own group's weights only: all of it is model work (an MoE's
    # active parameters), none of it padding.
    assert report.cost.model_flops_per_device == pytest.approx(3 * 2 * m * k * n, rel=0.05)
    assert not report.cost.padding_flops_per_device


def test_ragged_paged_attention_is_named_when_its_lengths_are_unknown(mesh) -> None:
    """Deviceless, the sequence lengths are shapes only: the kernel's loops run as many
    times as they say, so it is named as not counted, and the estimate is no bound."""
    from jax.experimental.pallas.ops.tpu.ragged_paged_attention import (
        ragged_paged_attention as rpa,
    )

    tokens, heads, kv_heads, dim, page, pages, seqs, per_seq = 128, 8, 2, 128, 16, 64, 4, 8

    def serve(q, kv, kv_lens, page_indices, cu_q_lens, num_seqs):
        return rpa(q, kv, kv_lens, page_indices, cu_q_lens, num_seqs,
                   num_kv_pages_per_block=4, num_queries_per_block=32)  # fmt: skip

    step = jax.shard_map(serve, mesh=mesh, in_specs=(P(),) * 6, out_specs=P(), check_vma=False)
    args = [
        jax.ShapeDtypeStruct((tokens, heads, dim), jnp.bfloat16),
        jax.ShapeDtypeStruct((pages, page, 2 * kv_heads, dim), jnp.bfloat16),
        jax.ShapeDtypeStruct((seqs,), jnp.int32),
        jax.ShapeDtypeStruct((seqs, per_seq), jnp.int32),
        jax.ShapeDtypeStruct((seqs + 1,), jnp.int32),
        jax.ShapeDtypeStruct((1,), jnp.int32),
    ]
    report = sv.explain(step, *args, run=False)
    (kernel,) = report.cost.uncounted_kernels
    assert kernel.name == "ragged_paged_attention_kernel"
    assert "data" in kernel.why or "steps" in kernel.why
    assert "`ragged_paged_attention_kernel` not counted" in kernel.describe()


def test_ragged_paged_attention_counted_from_known_lengths(mesh) -> None:
    """Given the lengths as numpy arrays (their values known while tracing), the kernel's
    steps are followed in order (they pass the sequence and buffer they reached on through
    scalar memory): each sequence's queries against its own pages, 4 x q_len x kv_len x
    heads x dim."""
    from jax.experimental.pallas.ops.tpu.ragged_paged_attention import (
        ragged_paged_attention as rpa,
    )

    tokens, heads, kv_heads, dim, page, pages, per_seq = 256, 8, 2, 128, 16, 128, 16
    q_lens, kv_lens = [64, 64, 64, 64], [64, 64, 128, 256]

    def serve(q, kv, kv_lens, page_indices, cu_q_lens, num_seqs):
        return rpa(q, kv, kv_lens, page_indices, cu_q_lens, num_seqs,
                   num_kv_pages_per_block=4, num_queries_per_block=32)  # fmt: skip

    step = jax.shard_map(serve, mesh=mesh, in_specs=(P(),) * 6, out_specs=P(), check_vma=False)
    seqs = len(q_lens)
    report = sv.explain(
        step,
        jax.ShapeDtypeStruct((tokens, heads, dim), jnp.bfloat16),
        jax.ShapeDtypeStruct((pages, page, 2 * kv_heads, dim), jnp.bfloat16),
        np.array(kv_lens, np.int32),
        np.arange(seqs * per_seq, dtype=np.int32).reshape(seqs, per_seq) % pages,
        np.cumsum([0, *q_lens]).astype(np.int32),
        np.array([seqs], np.int32),
        run=False,
    )
    (kernel,) = report.cost.kernels
    hand = sum(4.0 * q * kv * heads * dim for q, kv in zip(q_lens, kv_lens, strict=True))
    assert kernel.how == "counted"
    assert kernel.flops == pytest.approx(hand, rel=0.05)
    assert kernel.model_flops == kernel.flops  # serving: the pages are the work


def test_gpu_pallas_attention_deviceless_h100() -> None:
    """jax's Pallas GPU attention (Triton custom calls), compiled deviceless for H100: the
    forward counted block by block (its kv loop stops at the diagonal), the model flops in
    full whatever the mask, and the backward's recomputed matmuls apart."""
    from jax.experimental.pallas.ops.gpu import attention as gpu_attention

    mesh = jax.sharding.Mesh(np.array(sv.topology("h100:4").devices).reshape(4), ("data",))
    heads, dim, block = 4, 64, 128

    def attn(q, k, v):
        return gpu_attention.mha(q, k, v, segment_ids=None, causal=True,
                                 block_sizes=gpu_attention.BlockSizes(block, block, block, block, block, block))  # fmt: skip

    def loss(q, k, v):
        f = jax.shard_map(attn, mesh=mesh, in_specs=(P("data"),) * 3, out_specs=P("data"),
                          check_vma=False)  # fmt: skip
        return f(q, k, v).astype(jnp.float32).sum()

    q = jax.ShapeDtypeStruct(
        (B, S, heads, dim), jnp.float16, sharding=NamedSharding(mesh, P("data"))
    )
    report = sv.explain(jax.grad(loss, argnums=(0, 1, 2)), q, q, q, run=False)
    kernels = {k.name: k for k in report.cost.kernels}
    assert {k.target for k in kernels.values()} == {"__gpu$xla.gpu.triton"}
    assert not report.cost.uncounted_kernels
    full = 2.0 * heads * S * S * dim  # one matmul over all heads of one device's sequence
    n = S // block
    causal = (n * (n + 1) / 2) / n**2
    assert kernels["mha_forward"].flops == pytest.approx(2 * full * causal)
    # its dkv loop runs Q K^T, dP, dV, dK; its dq loop Q K^T, dP, dQ: 7 matmuls
    assert kernels["mha_backward"].flops == pytest.approx(7 * full * causal, rel=0.05)
    model = sum(k.model_flops or 0 for k in kernels.values())
    assert model == pytest.approx(6 * full, rel=0.05)


def test_a_lowered_without_its_trace_reads_the_kernels_bodies(mesh) -> None:
    """A bare Lowered (and its Compiled) holds no jaxpr: each splash kernel is read from the
    body its custom call carries, every branch at its costliest (an upper bound on what the
    causal mask lets it compute), its model flops in full as from the trace."""
    from jax.experimental.pallas.ops.tpu.splash_attention import (
        splash_attention_kernel as sk,
    )
    from jax.experimental.pallas.ops.tpu.splash_attention import (
        splash_attention_mask as sm,
    )

    sizes = sk.BlockSizes(
        block_q=BLOCK, block_kv_compute=BLOCK, block_kv=BLOCK, block_q_dkv=BLOCK,
        block_kv_dkv=BLOCK, block_kv_dkv_compute=BLOCK, use_fused_bwd_kernel=True,
    )  # fmt: skip
    kernel = sk.make_splash_mha(
        mask=sm.MultiHeadMask([sm.CausalMask((S, S)) for _ in range(H)]), block_sizes=sizes,
        head_shards=1, q_seq_shards=1,
    )  # fmt: skip

    def loss(q, k, v):
        f = jax.shard_map(lambda *a: jax.vmap(kernel)(*a), mesh=mesh,
                          in_specs=(P("data"),) * 3, out_specs=P("data"), check_vma=False)  # fmt: skip
        return f(q, k, v).astype(jnp.float32).sum()

    q = jax.ShapeDtypeStruct((B, H, S, D), jnp.bfloat16, sharding=NamedSharding(mesh, P("data")))
    lowered = jax.jit(jax.grad(loss, argnums=(0, 1, 2))).lower(q, q, q)
    for stage in (lowered, lowered.compile()):
        cost = sv.explain(stage).cost
        assert not cost.uncounted_kernels
        assert {k.how for k in cost.kernels} == {"bounded"}
        assert sum(k.flops or 0 for k in cost.kernels) == pytest.approx(7 * MATMUL)  # dense
        assert sum(k.model_flops or 0 for k in cost.kernels) == pytest.approx(6 * MATMUL)
