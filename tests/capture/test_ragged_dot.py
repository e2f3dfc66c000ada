"""Grouped matmuls as users write them (``jax.lax.ragged_dot``, a dropless MoE's experts):
model flops are each row against its own group's weights, whatever dense form the compiler
gives them (issue 41).

The CPU compiler, and the TPU compiler for the weight gradient, copy the rows once per group
and mask each copy to its group's rows: the hardware does ``g`` times the work, of which one
share is the model's; the TPU's grouped-matmul kernels (forward, input gradient) do only the
useful work. Hand count: ``2 x rows x k x n`` per grouped matmul, three per step with the
gradient (forward, rows' gradient, weights' gradient).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz as sv

M, K, N = 256, 128, 64


def _loss(lhs, rhs, sizes):
    return (jax.lax.ragged_dot(lhs, rhs, sizes).astype(jnp.float32) ** 2).sum()


def _mesh(backend: str) -> jax.sharding.Mesh:
    devices = {
        "cpu": lambda: jax.devices()[:4],
        "tpu": lambda: sv.topology("v5e:2x2").devices,
        "gpu": lambda: sv.topology("h100:1x4").devices,
    }[backend]()
    return jax.sharding.Mesh(np.array(devices).reshape(4), ("data",))


def _args(mesh, groups: int):
    rep = NamedSharding(mesh, P())
    return (
        jax.ShapeDtypeStruct((M, K), jnp.bfloat16, sharding=rep),
        jax.ShapeDtypeStruct((groups, K, N), jnp.bfloat16, sharding=rep),
        jax.ShapeDtypeStruct((groups,), jnp.int32, sharding=rep),
    )


@pytest.mark.parametrize("backend", ["cpu", "tpu", "gpu"])
@pytest.mark.parametrize("groups", [2, 8])
def test_model_flops_are_each_row_against_its_own_group(backend: str, groups: int) -> None:
    """Forward and gradient on each backend: model flops = the hand count; what the dense
    forms compute beyond it is hardware work shown apart (``padding_flops_per_device``)."""
    report = sv.explain(jax.grad(_loss, argnums=(0, 1)), *_args(_mesh(backend), groups), run=False)
    cost = report.cost
    hand = 3 * 2 * M * K * N
    assert cost.model_flops_per_device == pytest.approx(hand, rel=1e-6)
    # A dense form on CPU and GPU (and, with jax 0.10's libtpu, for the TPU's weight
    # gradient); newer libtpu runs all three as grouped-matmul kernels: no padding then.
    assert cost.matmul_flops_per_device >= hand
    assert cost.padding_flops_per_device == pytest.approx(
        cost.matmul_flops_per_device - hand, rel=1e-6
    )


def test_grouped_matmuls_in_scanned_layers_per_device() -> None:
    """Each device's own rows (``shard_map``), three layers scanned: three times the
    per-device hand count; the dense CPU form is ``groups`` times that in hardware."""
    mesh, groups, layers = _mesh("cpu"), 4, 3

    def local(x, w, sizes):
        def layer(h, wl):
            return jax.lax.ragged_dot(h, wl, sizes).astype(h.dtype), None

        h, _ = jax.lax.scan(layer, x, w)
        return jnp.sum(h.astype(jnp.float32) ** 2)

    def loss(x, w, sizes):
        per = jax.shard_map(
            local, mesh=mesh, in_specs=(P("data"), P(), P()), out_specs=P(), check_vma=False
        )
        return per(x, w, sizes)

    sh = NamedSharding(mesh, P("data"))
    rep = NamedSharding(mesh, P())
    args = (
        jax.ShapeDtypeStruct((M, K), jnp.float32, sharding=sh),
        jax.ShapeDtypeStruct((layers, groups, K, K), jnp.float32, sharding=rep),
        jax.ShapeDtypeStruct((groups,), jnp.int32, sharding=rep),
    )
    cost = sv.explain(jax.grad(loss, argnums=(0, 1)), *args, run=False).cost
    hand = layers * 3 * 2 * (M // 4) * K * K
    assert cost.model_flops_per_device == pytest.approx(hand, rel=1e-6)
    assert cost.matmul_flops_per_device == pytest.approx(groups * hand, rel=1e-6)


def test_a_causal_mask_is_not_a_group_mask() -> None:
    """Attention's causal mask (an ``iota`` against an ``iota``) and a length mask leave
    model flops as they were: every matmul is the model's."""

    def attend(q, k, v, lengths):
        s = jnp.einsum("bqd,bkd->bqk", q, k)
        pos = jnp.arange(s.shape[1])
        keep = (pos[:, None] >= pos[None, :]) & (pos[None, None, :] < lengths[:, None, None])
        p = jax.nn.softmax(jnp.where(keep, s, -1e9), axis=-1)
        return jnp.sum(jnp.einsum("bqk,bkd->bqd", p, v) ** 2)

    b, t, d = 4, 64, 32
    mesh = _mesh("cpu")
    rep = NamedSharding(mesh, P())
    args = [jax.ShapeDtypeStruct((b, t, d), jnp.float32, sharding=rep)] * 3
    args.append(jax.ShapeDtypeStruct((b,), jnp.int32, sharding=rep))
    cost = sv.explain(jax.grad(attend, argnums=(0, 1, 2)), *args, run=False).cost
    assert not cost.padding_flops_per_device
    assert cost.model_flops_per_device == pytest.approx(cost.matmul_flops_per_device)
