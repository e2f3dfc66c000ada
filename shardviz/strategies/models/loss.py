"""Next-token cross-entropy over sequence chunks, so ``[B, S, vocab]`` logits are never whole.

A scan over chunks of ``chunk`` positions computes each chunk's logits (float32), its
log-sum-exp and the target's logit, and adds up the loss; the scan body is rematerialised, so
the backward pass recomputes a chunk's logits instead of keeping all of them. The target's
logit is a one-hot contraction, which splits cleanly when the vocabulary is split.

The table is pinned whole over FSDP before the loop (activation ``unembed_gathered``), as
MaxText's vocabulary tiling gathers it. Left to the partitioner, a step whose gradients are
FSDP-sharded gathers the table and all-reduces its gradient inside the loop, once per chunk
(measured on a deviceless v6e:4x4, Gemma 3's [3840, 262144] table: both in the loop body;
pinned, both once in the step).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from shardviz.strategies.models.axes import Constrain, no_constraint

__all__ = ["chunked_cross_entropy"]


def chunked_cross_entropy(
    hidden: jax.Array,
    unembed: jax.Array,
    targets: jax.Array,
    chunk: int,
    constrain: Constrain = no_constraint,
) -> jax.Array:
    """Mean cross-entropy of ``hidden [B, S, D] @ unembed [D, V]`` against ``targets [B, S]``.

    ``chunk`` (capped at S) divides S; one chunk is the plain, unchunked loss.
    """
    b, s, d = hidden.shape
    chunk = min(chunk, s)
    if s % chunk:
        raise ValueError(f"sequence {s} does not divide into loss chunks of {chunk}")
    vocab = unembed.shape[-1]
    unembed = constrain("unembed_gathered", unembed)
    hc = jnp.moveaxis(hidden.reshape(b, s // chunk, chunk, d), 1, 0)
    tc = jnp.moveaxis(targets.reshape(b, s // chunk, chunk), 1, 0)

    @jax.checkpoint
    def per_chunk(total: jax.Array, xs: tuple[jax.Array, jax.Array]):
        h, t = xs
        logits = jnp.einsum("bcd,dv->bcv", h, unembed, preferred_element_type=jnp.float32)
        logits = constrain("logits", logits)
        picked = jnp.sum(logits * jax.nn.one_hot(t, vocab, dtype=logits.dtype), axis=-1)
        return total + jnp.sum(jax.nn.logsumexp(logits, axis=-1) - picked), None

    total, _ = jax.lax.scan(per_chunk, jnp.zeros((), jnp.float32), (hc, tc))
    return total / (b * s)
