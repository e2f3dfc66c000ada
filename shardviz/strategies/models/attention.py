"""Causal grouped-query attention computed in blocks (flash attention's algorithm, in jax).

Queries are cut into blocks of ``block_q`` positions and keys/values into blocks of
``block_kv``; for each query block a scan over the key/value blocks keeps a running maximum,
a running softmax denominator and a running output (the online softmax of Milakov & Gimelshein,
2018; Dao et al., 2022), so an 8192-token sequence never holds ``S x S`` scores, only
``block_q x block_kv`` at a time. The backward pass is written by hand (``custom_vjp``): it
keeps the output and the log-sum-exp per query and recomputes each block's scores, as
FlashAttention-2 does, so the gradient too needs no ``S x S`` residuals.

The causal mask is applied inside each block, and **every block is computed, masked or not**:
blocks above the diagonal are all masked and a kernel would skip them, but MFU conventions
(MaxText's, PaLM's) count attention's two matmuls in full, so this program does the work
those formulas count. Scores and the softmax are float32; the two matmuls take the inputs'
dtype (bf16 in training) with float32 accumulation.

GQA: ``q: [B, S, H, K]`` with ``H = N * G`` query heads and ``k, v: [B, S, N, K]``; query head
``h`` reads key/value head ``h // G`` (Hugging Face's ``repeat_kv``).
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp

from shardviz.capture.hlo.matmuls import REMAT_MARK

__all__ = ["blockwise_attention", "naive_attention"]

_MASKED = -1e30  # a masked score: exp(_MASKED - m) == 0 for any real running max m
_F32 = jnp.float32


def naive_attention(q: jax.Array, k: jax.Array, v: jax.Array) -> jax.Array:
    """Causal GQA attention with the whole ``[S, S]`` score matrix: the reference."""
    b, s, h, d = q.shape
    n = k.shape[2]
    q5 = q.reshape(b, s, n, h // n, d)
    scores = jnp.einsum("bqngk,bsnk->bngqs", q5, k, preferred_element_type=_F32) / math.sqrt(d)
    causal = jnp.tril(jnp.ones((s, s), dtype=bool))
    weights = jax.nn.softmax(jnp.where(causal, scores, _MASKED), axis=-1)
    out = jnp.einsum("bngqs,bsnk->bqngk", weights.astype(v.dtype), v, preferred_element_type=_F32)
    return out.reshape(b, s, h, d).astype(q.dtype)


def blockwise_attention(
    q: jax.Array, k: jax.Array, v: jax.Array, *, block_q: int = 512, block_kv: int = 512
) -> jax.Array:
    """Causal GQA attention ``[B, S, H, K]``, computed block by block (see the module doc).

    Args:
      q: queries ``[B, S, H, K]``.
      k, v: keys and values ``[B, S, N, K]``, ``N`` dividing ``H``.
      block_q, block_kv: block sizes, each capped at ``S`` and dividing it.
    """
    b, s, h, d = q.shape
    n = k.shape[2]
    bq, bk = min(block_q, s), min(block_kv, s)
    if s % bq or s % bk:
        raise ValueError(f"sequence {s} does not divide into blocks of {bq} and {bk}")
    q5 = q.reshape(b, s, n, h // n, d)
    out = _flash(q5, k, v, bq, bk, 1.0 / math.sqrt(d))
    return out.reshape(b, s, h, d)


def _blocks(x: jax.Array, size: int) -> jax.Array:
    """``[B, S, ...] -> [S / size, B, size, ...]``: blocks first, for ``lax.scan``."""
    b, s = x.shape[:2]
    return jnp.moveaxis(x.reshape(b, s // size, size, *x.shape[2:]), 1, 0)


def _unblocks(x: jax.Array) -> jax.Array:
    """The inverse of :func:`_blocks`."""
    nb, b, size = x.shape[:3]
    return jnp.moveaxis(x, 0, 1).reshape(b, nb * size, *x.shape[3:])


def _scores(qi, kj, i, j, scale):
    """Masked scores ``[B, N, G, bq, bk]`` (float32) of query block ``i`` and key block ``j``."""
    bq, bk = qi.shape[1], kj.shape[1]
    s = jnp.einsum("bqngk,bsnk->bngqs", qi, kj, preferred_element_type=_F32) * scale
    # The barrier ties the positions to the scores: a mask computed from constants alone is
    # loop-invariant, and scan's partial evaluation would hoist it out of the layer scan as
    # a stacked [S / bq, S / bk, ..., bq, bk] residual: the S x S array this module avoids.
    s, q_pos, k_pos = jax.lax.optimization_barrier(
        (s, i * bq + jnp.arange(bq)[:, None], j * bk + jnp.arange(bk)[None, :])
    )
    return jnp.where(q_pos >= k_pos, s, _MASKED)


def _forward(q5, k, v, bq, bk, scale):
    """Output ``[B, S, N, G, K]`` and log-sum-exp ``[S / bq, B, N, G, bq]``."""
    qb, kb, vb = _blocks(q5, bq), _blocks(k, bk), _blocks(v, bk)
    nk = kb.shape[0]
    stats = qb.shape[1:2] + qb.shape[3:5] + qb.shape[2:3]  # [B, N, G, bq]

    def per_query_block(_, xs):
        qi, i = xs

        def per_kv_block(carry, ys):
            m, denom, acc = carry
            kj, vj, j = ys
            s = _scores(qi, kj, i, j, scale)
            m_new = jnp.maximum(m, jnp.max(s, axis=-1))
            p = jnp.exp(s - m_new[..., None])
            alpha = jnp.exp(m - m_new)
            pv = jnp.einsum(
                "bngqs,bsnk->bngqk", p.astype(vj.dtype), vj, preferred_element_type=_F32
            )
            denom = alpha * denom + jnp.sum(p, axis=-1)
            return (m_new, denom, alpha[..., None] * acc + pv), None

        init = (
            jnp.full(stats, -jnp.inf, _F32),
            jnp.zeros(stats, _F32),
            jnp.zeros((*stats, qi.shape[-1]), _F32),
        )
        (m, denom, acc), _ = jax.lax.scan(per_kv_block, init, (kb, vb, jnp.arange(nk)))
        out = jnp.einsum("bngqk->bqngk", acc / denom[..., None]).astype(q5.dtype)
        return None, (out, m + jnp.log(denom))

    _, (out, lse) = jax.lax.scan(per_query_block, None, (qb, jnp.arange(qb.shape[0])))
    return _unblocks(out), lse


@functools.partial(jax.custom_vjp, nondiff_argnums=(3, 4, 5))
def _flash(q5, k, v, bq, bk, scale):
    return _forward(q5, k, v, bq, bk, scale)[0]


def _flash_fwd(q5, k, v, bq, bk, scale):
    out, lse = _forward(q5, k, v, bq, bk, scale)
    return out, (q5, k, v, out, lse)


def _flash_bwd(bq, bk, scale, residuals, d_out):
    """FlashAttention-2's backward: per key block, a scan over query blocks accumulates that
    block's dk, dv, and adds into dq; the scores are recomputed from q, k and the lse."""
    q5, k, v, out, lse = residuals
    delta = jnp.sum(out.astype(_F32) * d_out.astype(_F32), axis=-1)  # [B, S, N, G]
    qb, dob = _blocks(q5, bq), _blocks(d_out, bq)
    deltab = jnp.moveaxis(_blocks(delta, bq), 2, -1)  # [nq, B, N, G, bq], as lse
    kb, vb = _blocks(k, bk), _blocks(v, bk)
    nq = qb.shape[0]

    def per_kv_block(dq, ys):
        kj, vj, j = ys

        def per_query_block(carry, xs):
            dq, dk, dv = carry
            qi, doi, lse_i, delta_i, i = xs
            # Recomputed scores: named as jax names what jax.checkpoint recomputes, so the
            # flop count takes them for the hardware's extra work, not the model's.
            with jax.named_scope(REMAT_MARK):
                p = jnp.exp(_scores(qi, kj, i, j, scale) - lse_i[..., None])  # [B,N,G,bq,bk]
            dv = dv + jnp.einsum(
                "bngqs,bqngk->bsnk", p.astype(doi.dtype), doi, preferred_element_type=_F32
            )
            dp = jnp.einsum("bqngk,bsnk->bngqs", doi, vj, preferred_element_type=_F32)
            ds = (p * (dp - delta_i[..., None]) * scale).astype(qi.dtype)
            dk = dk + jnp.einsum("bngqs,bqngk->bsnk", ds, qi, preferred_element_type=_F32)
            dq_i = jnp.einsum("bngqs,bsnk->bqngk", ds, kj, preferred_element_type=_F32)
            return (dq.at[i].add(dq_i), dk, dv), None

        zeros = jnp.zeros(kj.shape, _F32)
        (dq, dk, dv), _ = jax.lax.scan(
            per_query_block, (dq, zeros, zeros), (qb, dob, lse, deltab, jnp.arange(nq))
        )
        return dq, (dk, dv)

    dq0 = jnp.zeros(qb.shape, _F32)
    dq, (dk, dv) = jax.lax.scan(per_kv_block, dq0, (kb, vb, jnp.arange(kb.shape[0])))
    return (
        _unblocks(dq).astype(q5.dtype),
        _unblocks(dk).astype(k.dtype),
        _unblocks(dv).astype(v.dtype),
    )


_flash.defvjp(_flash_fwd, _flash_bwd)
