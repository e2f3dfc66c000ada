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
those formulas count. A sliding window (Gemma 3's local layers) is the exception: each query
block visits only the key blocks its window reaches (a band along the diagonal, as a
block-sparse kernel such as splash attention does), so the work is ``S x (window + block)``
per head, not ``S x S``. The field counts ``S x window`` (MaxText's Gemma 3 formula): the
band's farthest block is computed under :data:`WINDOW_EDGE_MARK`, counted as the hardware's
work and not the model's (exactly the excess when the block divides the window). Scores and
the softmax are float32; the two matmuls take the inputs'
dtype (bf16 in training) with float32 accumulation.

GQA: ``q: [B, S, H, K]`` with ``H = N * G`` query heads and ``k, v: [B, S, N, K]``; query head
``h`` reads key/value head ``h // G`` (Hugging Face's ``repeat_kv``).
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp

from shardviz.capture.hlo.matmuls import REMAT_MARK, WINDOW_EDGE_MARK

__all__ = ["band_and_chunk", "band_blocks", "blockwise_attention", "naive_attention", "visible"]

_MASKED = -1e30  # a masked score: exp(_MASKED - m) == 0 for any real running max m
_F32 = jnp.float32


def naive_attention(
    q: jax.Array,
    k: jax.Array,
    v: jax.Array,
    window: int = 0,
    scale: float | None = None,
    chunk: int = 0,
) -> jax.Array:
    """Causal GQA attention with the whole ``[S, S]`` score matrix: the reference.
    ``window``: each query sees only its ``window`` latest keys, itself included (0: all);
    ``chunk``: only the keys of its own chunk of that many positions (Llama 4's local
    layers; 0: no chunks)."""
    b, s, h, d = q.shape
    n = k.shape[2]
    q5 = q.reshape(b, s, n, h // n, d)
    scale = 1.0 / math.sqrt(d) if scale is None else scale
    scores = jnp.einsum("bqngk,bsnk->bngqs", q5, k, preferred_element_type=_F32) * scale
    causal = jnp.tril(jnp.ones((s, s), dtype=bool))
    if window:
        causal = causal & ~jnp.tril(jnp.ones((s, s), dtype=bool), -window)
    if chunk:
        pos = jnp.arange(s) // chunk
        causal = causal & (pos[:, None] == pos[None, :])
    weights = jax.nn.softmax(jnp.where(causal, scores, _MASKED), axis=-1)
    out = jnp.einsum("bngqs,bsnk->bqngk", weights.astype(v.dtype), v, preferred_element_type=_F32)
    return out.reshape(b, s, h, v.shape[-1]).astype(q.dtype)


def blockwise_attention(
    q: jax.Array,
    k: jax.Array,
    v: jax.Array,
    *,
    block_q: int = 512,
    block_kv: int = 512,
    window: int = 0,
    chunk: int = 0,
) -> jax.Array:
    """Causal GQA attention ``[B, S, H, Kv]``, computed block by block (see the module doc).

    Args:
      q: queries ``[B, S, H, K]``.
      k, v: keys ``[B, S, N, K]`` and values ``[B, S, N, Kv]``, ``N`` dividing ``H`` (MLA's
        values are narrower than its queries and keys).
      block_q, block_kv: block sizes, each capped at ``S`` and dividing it.
      window: each query sees only its ``window`` latest keys, itself included (0: all;
        a window of ``S`` or more is the causal mask alone).
      chunk: each query sees only the keys of its own chunk of ``chunk`` positions (Llama
        4's RoPE layers; 0 or ``S`` or more: no chunks): the band of a window of ``chunk``,
        masked to the chunk, so its edge block is the one the field does not count.
    """
    window, chunk = band_and_chunk(window, chunk, q.shape[1])
    b, s, h, d = q.shape
    n = k.shape[2]
    bq, bk = min(block_q, s), min(block_kv, s)
    if s % bq or s % bk:
        raise ValueError(f"sequence {s} does not divide into blocks of {bq} and {bk}")
    q5 = q.reshape(b, s, n, h // n, d)
    out = _flash(q5, k, v, bq, bk, 1.0 / math.sqrt(d), window, chunk)
    return out.reshape(b, s, h, v.shape[-1])


def band_and_chunk(window: int, chunk: int, seq: int) -> tuple[int, int]:
    """``(the band's window, the chunk)`` of a sliding ``window`` or a ``chunk`` over ``seq``
    positions: either at ``seq`` or more is the causal mask alone (0); a chunk is computed
    over the band of a window of its size, masked to itself.

    Raises:
      ValueError: both a window and a chunk.
    """
    window = window if 0 < window < seq else 0
    chunk = chunk if 0 < chunk < seq else 0
    if window and chunk:
        raise ValueError(f"a sliding window ({window}) and chunks ({chunk}) in one layer")
    return (chunk or window), chunk


def band_blocks(window: int, block: int, other: int, most: int) -> int:
    """Blocks of ``other`` positions one block of ``block`` positions meets within a window
    (the band's width; at most ``most``, every block). When ``other`` divides ``block`` the
    band starts on a block's edge: ``block / other`` blocks for the block itself and
    ``ceil((window - 1) / other)`` behind it."""
    if block % other == 0:
        return min(most, block // other - (-(window - 1) // other))
    return min(most, (window + block - 2) // other + 2)


def _edge(band: int) -> int:
    """Blocks of a band computed as its edge (the farthest one, when there are 2 or more)."""
    return 1 if band >= 2 else 0


def _edge_step(body, carry, band: int):
    """``carry`` after the band's edge block (step ``band - 1`` of ``body``), computed
    under :data:`WINDOW_EDGE_MARK`; ``carry`` as it is when the band has no edge."""
    if not _edge(band):
        return carry
    with jax.named_scope(WINDOW_EDGE_MARK):
        return body(carry, jnp.asarray(band - 1))[0]


def _blocks(x: jax.Array, size: int) -> jax.Array:
    """``[B, S, ...] -> [S / size, B, size, ...]``: blocks first, for ``lax.scan``."""
    b, s = x.shape[:2]
    return jnp.moveaxis(x.reshape(b, s // size, size, *x.shape[2:]), 1, 0)


def _unblocks(x: jax.Array) -> jax.Array:
    """The inverse of :func:`_blocks`."""
    nb, b, size = x.shape[:3]
    return jnp.moveaxis(x, 0, 1).reshape(b, nb * size, *x.shape[3:])


def _scores(qi, kj, i, j, scale, window=0, seq=0, chunk=0):
    """Masked scores ``[B, N, G, bq, bk]`` (float32) of query block ``i`` and key block ``j``.

    With a ``window``, ``i`` and ``j`` are a band's block numbers, which may fall outside the
    sequence (``seq`` positions): such positions are masked (the block read is a clamped one).
    With a ``chunk``, keys outside the query's chunk are masked too.
    """
    bq, bk = qi.shape[1], kj.shape[1]
    s = jnp.einsum("bqngk,bsnk->bngqs", qi, kj, preferred_element_type=_F32) * scale
    # The barrier ties the positions to the scores: a mask computed from constants alone is
    # loop-invariant, and scan's partial evaluation would hoist it out of the layer scan as
    # a stacked [S / bq, S / bk, ..., bq, bk] residual: the S x S array this module avoids.
    s, q_pos, k_pos = jax.lax.optimization_barrier(
        (s, i * bq + jnp.arange(bq)[:, None], j * bk + jnp.arange(bk)[None, :])
    )
    return jnp.where(visible(q_pos, k_pos, window, seq, chunk), s, _MASKED)


def visible(q_pos, k_pos, window: int = 0, seq: int = 0, chunk: int = 0):
    """Which keys each query sees, from their positions (broadcast against each other):
    causal; within a ``window`` (past either end of the ``seq`` positions: none, a band's
    clamped block); within the query's ``chunk``. One rule for the blockwise program and
    the kernels."""
    keep = q_pos >= k_pos
    if window:
        keep = keep & (q_pos - k_pos < window) & (k_pos >= 0) & (q_pos < seq)
    if chunk:
        keep = keep & (q_pos // chunk == k_pos // chunk)
    return keep


def _forward(q5, k, v, bq, bk, scale, window=0, chunk=0):
    """Output ``[B, S, N, G, K]`` and log-sum-exp ``[S / bq, B, N, G, bq]``."""
    qb, kb, vb = _blocks(q5, bq), _blocks(k, bk), _blocks(v, bk)
    nk = kb.shape[0]
    seq = k.shape[1]
    stats = qb.shape[1:2] + qb.shape[3:5] + qb.shape[2:3]  # [B, N, G, bq]
    band = band_blocks(window, bq, bk, nk) if window else nk

    def per_query_block(_, xs):
        qi, i = xs
        # With a window: the band's blocks, from the diagonal one back (its first holds
        # every query's own key, so the running max is real before any masked block).
        last = ((i + 1) * bq - 1) // bk

        def per_kv_block(carry, ys):
            m, denom, acc = carry
            if window:
                j = last - ys
                jc = jnp.maximum(j, 0)
                kj, vj = kb[jc], vb[jc]
            else:
                kj, vj, j = ys
            s = _scores(qi, kj, i, j, scale, window, seq, chunk)
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
            jnp.zeros((*stats, vb.shape[-1]), _F32),
        )
        if window:
            carry, _ = jax.lax.scan(per_kv_block, init, jnp.arange(band - _edge(band)))
            (m, denom, acc) = _edge_step(per_kv_block, carry, band)
        else:
            (m, denom, acc), _ = jax.lax.scan(per_kv_block, init, (kb, vb, jnp.arange(nk)))
        out = jnp.einsum("bngqk->bqngk", acc / denom[..., None]).astype(q5.dtype)
        return None, (out, m + jnp.log(denom))

    _, (out, lse) = jax.lax.scan(per_query_block, None, (qb, jnp.arange(qb.shape[0])))
    return _unblocks(out), lse


@functools.partial(jax.custom_vjp, nondiff_argnums=(3, 4, 5, 6, 7))
def _flash(q5, k, v, bq, bk, scale, window=0, chunk=0):
    return _forward(q5, k, v, bq, bk, scale, window, chunk)[0]


def _flash_fwd(q5, k, v, bq, bk, scale, window=0, chunk=0):
    out, lse = _forward(q5, k, v, bq, bk, scale, window, chunk)
    return out, (q5, k, v, out, lse)


def _flash_bwd(bq, bk, scale, window, chunk, residuals, d_out):
    """FlashAttention-2's backward: per key block, a scan over query blocks accumulates that
    block's dk, dv, and adds into dq; the scores are recomputed from q, k and the lse."""
    q5, k, v, out, lse = residuals
    delta = jnp.sum(out.astype(_F32) * d_out.astype(_F32), axis=-1)  # [B, S, N, G]
    qb, dob = _blocks(q5, bq), _blocks(d_out, bq)
    deltab = jnp.moveaxis(_blocks(delta, bq), 2, -1)  # [nq, B, N, G, bq], as lse
    kb, vb = _blocks(k, bk), _blocks(v, bk)
    nq = qb.shape[0]
    seq = k.shape[1]
    band = band_blocks(window, bk, bq, nq) if window else nq

    def per_kv_block(dq, ys):
        kj, vj, j = ys
        first = (j * bk) // bq  # with a window: the band of query blocks from the diagonal on

        def per_query_block(carry, xs):
            dq, dk, dv = carry
            if window:
                i = first + xs
                ic = jnp.minimum(i, nq - 1)
                qi, doi, lse_i, delta_i = qb[ic], dob[ic], lse[ic], deltab[ic]
            else:
                qi, doi, lse_i, delta_i, i = xs
                ic = i
            # Recomputed scores: named as jax names what jax.checkpoint recomputes, so the
            # flop count takes them for the hardware's extra work, not the model's.
            with jax.named_scope(REMAT_MARK):
                # Operands made under the mark: XLA:CPU's library fusions keep no metadata
                # of their own, and the product is known by its operands' names.
                qi_r, kj_r = jax.lax.optimization_barrier((qi, kj))
                scores = _scores(qi_r, kj_r, i, j, scale, window, seq, chunk)
                p = jnp.exp(scores - lse_i[..., None])  # [B,N,G,bq,bk]
            dv = dv + jnp.einsum(
                "bngqs,bqngk->bsnk", p.astype(doi.dtype), doi, preferred_element_type=_F32
            )
            dp = jnp.einsum("bqngk,bsnk->bngqs", doi, vj, preferred_element_type=_F32)
            ds = (p * (dp - delta_i[..., None]) * scale).astype(qi.dtype)
            dk = dk + jnp.einsum("bngqs,bqngk->bsnk", ds, qi, preferred_element_type=_F32)
            dq_i = jnp.einsum("bngqs,bsnk->bqngk", ds, kj, preferred_element_type=_F32)
            return (dq.at[ic].add(dq_i), dk, dv), None

        zeros = (jnp.zeros(kj.shape, _F32), jnp.zeros(vj.shape, _F32))
        if window:
            carry, _ = jax.lax.scan(per_query_block, (dq, *zeros), jnp.arange(band - _edge(band)))
            dq, dk, dv = _edge_step(per_query_block, carry, band)
        else:
            xs_q = (qb, dob, lse, deltab, jnp.arange(nq))
            (dq, dk, dv), _ = jax.lax.scan(per_query_block, (dq, *zeros), xs_q)
        return dq, (dk, dv)

    dq0 = jnp.zeros(qb.shape, _F32)
    dq, (dk, dv) = jax.lax.scan(per_kv_block, dq0, (kb, vb, jnp.arange(kb.shape[0])))
    return (
        _unblocks(dq).astype(q5.dtype),
        _unblocks(dk).astype(k.dtype),
        _unblocks(dv).astype(v.dtype),
    )


_flash.defvjp(_flash_fwd, _flash_bwd)
