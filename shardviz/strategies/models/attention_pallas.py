"""Causal grouped-query attention as Pallas TPU kernels (FlashAttention-2), scores in VMEM.

:func:`pallas_attention` computes what :func:`.attention.blockwise_attention` computes, with
the same online softmax and the same hand-written backward, but as three Pallas kernels:
``flash_forward``, ``flash_backward_dkv`` and ``flash_backward_dq``. The point is where the
score blocks live: XLA compiles blockwise attention's ``[block_q, block_kv]`` scores into
fusions that write each block to HBM and read it back; in a kernel they stay in VMEM, and
HBM sees only q, k, v, dO, the output, the per-query statistics and the gradients.

As in :mod:`.attention`, the causal mask is applied inside each block, from the block indices
and iota positions, and **every block is computed, masked or not**: a production kernel would
skip the blocks above the diagonal, but MFU conventions (MaxText's, PaLM's) count attention's
two matmuls in full, so these kernels do (and their cost estimates declare) the work those
formulas count. A sliding window (Gemma 3's local layers) is the exception, as in
:mod:`.attention`: each query block visits only the band of key blocks its window reaches,
from the diagonal back (and each key block the band of query blocks on from it), the band's
block numbers clamped to the sequence and what the clamp repeats masked. The kernels' names
then carry the share of their keys the field counts (``flash_forward_window_1024_of_2048``).
Scores and the softmax are float32; the matmuls take the inputs' dtype with float32
accumulation.

Layout: the kernels see ``[B, H, S, K]`` queries and ``[B, N, S, K]`` keys/values (transposed
outside), so each block is ``(1, 1, block, K)`` and its last two dims are what Mosaic wants
(the block size a multiple of 8, ``K`` the full dim). GQA is in the key/value index maps
(query head ``h`` reads key/value head ``h // G``): k and v are never repeated in HBM. The
per-query statistics (the log-sum-exp, and the backward's ``delta = rowsum(dO * O)``) are
``[B, H, 1, S]`` float32, one lane-dense row per head: XLA tiles that ``T(1, 128)`` in HBM,
4 bytes a query. A column ``[B, H, S, 1]`` is tiled ``T(8, 128)``, 128 times its bytes in
HBM and in every copy, as is the lane-dense broadcast ``[B, H, S, 128]`` jax's own kernels
use. The dK/dV kernel works on transposed score blocks (keys on sublanes), where a row is
what it needs; the forward writes its column as a row, and the dQ kernel turns the rows
into columns, once per query block each.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

from shardviz.capture.hlo.matmuls import REMAT_MARK
from shardviz.strategies.models.attention import band_and_chunk, band_blocks, visible

__all__ = ["pallas_attention"]

_MASKED = -1e30  # a masked score: exp(_MASKED - m) == 0 for any real running max m
_F32 = jnp.float32
_NN = (((1,), (0,)), ((), ()))  # a @ b
_NT = (((1,), (1,)), ((), ()))  # a @ b.T
_SQ = pl.squeezed  # a block dim of 1 the kernel does not see


def pallas_attention(
    q: jax.Array,
    k: jax.Array,
    v: jax.Array,
    *,
    block_q: int = 512,
    block_kv: int = 512,
    interpret: bool | None = None,
    window: int = 0,
    chunk: int = 0,
) -> jax.Array:
    """Causal GQA attention ``[B, S, H, K]`` in Pallas kernels (see the module doc).

    Args:
      q: queries ``[B, S, H, K]``.
      k, v: keys ``[B, S, N, K]`` and values ``[B, S, N, Kv]``, ``N`` dividing ``H``.
      block_q, block_kv: block sizes, each capped at ``S`` and dividing it.
      interpret: run the kernels in Pallas's interpreter; ``None``: when jax's default
        backend is not a TPU. A deviceless compile for TPU (default backend CPU, target TPU)
        must pass ``False``.
      window: each query sees only its ``window`` latest keys, itself included (0: all; a
        window of ``S`` or more is the causal mask alone): the kernels visit the band of
        blocks along the diagonal the window reaches (``block_q == block_kv``).
      chunk: each query sees only the keys of its own chunk of ``chunk`` positions (Llama
        4's RoPE layers; 0 or ``S`` or more: no chunks): the band of a window of its size,
        masked to the chunk.

    Returns:
      The attention output, ``[B, S, H, Kv]`` in ``q``'s dtype.
    """
    b, s, h, d = q.shape
    n = k.shape[2]
    if h % n:
        raise ValueError(f"{n} key/value heads do not divide {h} query heads")
    bq, bk = min(block_q, s), min(block_kv, s)
    if s % bq or s % bk:
        raise ValueError(f"sequence {s} does not divide into blocks of {bq} and {bk}")
    window, chunk = band_and_chunk(window, chunk, s)
    if window and bq != bk:
        raise ValueError(f"a sliding window needs equal blocks (block_q {bq}, block_kv {bk})")
    if interpret is None:
        interpret = jax.default_backend() != "tpu"
    scale = 1.0 / math.sqrt(d)
    out = _flash(_swap(q), _swap(k), _swap(v), bq, bk, scale, bool(interpret), window, chunk)
    return _swap(out)


def _swap(x: jax.Array) -> jax.Array:
    """``[B, S, X, K] <-> [B, X, S, K]``: the kernels' layout, heads before positions."""
    return jnp.swapaxes(x, 1, 2)


# --- kernels: refs are one block, (block, K) or a row of statistics (1, block), the head and
# batch dims squeezed. Score blocks are [bq, bk] (queries on sublanes, statistics as columns)
# in the forward and dQ kernels, and [bk, bq] (keys on sublanes, statistics as rows) in the
# dK/dV kernel, so that every matmul is a @ b or a @ b.T.


def _masked_scores(a, b, a0, b0, scale, queries_first, window=0, seq=0, chunk=0):
    """Scores ``a @ b.T`` (float32) causally masked, ``a``'s block starting at position ``a0``
    and ``b``'s at ``b0``: ``[bq, bk]`` if ``queries_first`` (``a`` is q), else ``[bk, bq]``.
    With a ``window`` also outside it, and a block past either end of the ``seq`` positions
    (a band's block number before the first or after the last: its index map clamps it);
    with a ``chunk``, keys outside the query's chunk too."""
    shape = (a.shape[0], b.shape[0])
    s = lax.dot_general(a, b, _NT, preferred_element_type=_F32) * scale
    a_pos = a0 + lax.broadcasted_iota(jnp.int32, shape, 0)
    b_pos = b0 + lax.broadcasted_iota(jnp.int32, shape, 1)
    q_pos, k_pos = (a_pos, b_pos) if queries_first else (b_pos, a_pos)
    return jnp.where(visible(q_pos, k_pos, window, seq, chunk), s, _MASKED)


def _row_to_column(row):
    """``[1, n] -> [n, 1]`` through an aligned ``[128, n]`` transpose, which Mosaic lowers."""
    return jnp.broadcast_to(row, (128, row.shape[1])).T[:, :1]


def _column_to_row(col):
    """``[n, 1] -> [1, n]``, as :func:`_row_to_column`."""
    return jnp.broadcast_to(col, (col.shape[0], 128)).T[:1, :]


def _forward_kernel(
    q_ref, k_ref, v_ref, o_ref, lse_ref, m_ref, l_ref, acc_ref, *, scale, window=0, seq=0,
    chunk=0,
):  # fmt: skip
    """One (query block, key block) step of the online softmax; grid (b, h, i, j). With a
    ``window``, ``j`` counts the band's blocks back from the diagonal (key block ``i - j``):
    the first step always has each query's own key, so no row starts all masked."""
    i, j = pl.program_id(2), pl.program_id(3)
    kv = i - j if window else j

    @pl.when(j == 0)
    def _init():
        m_ref[...] = jnp.full(m_ref.shape, -jnp.inf, _F32)
        l_ref[...] = jnp.zeros(l_ref.shape, _F32)
        acc_ref[...] = jnp.zeros(acc_ref.shape, _F32)

    q, k, v = q_ref[...], k_ref[...], v_ref[...]
    s = _masked_scores(q, k, i * q.shape[0], kv * k.shape[0], scale, True, window, seq, chunk)
    m_prev = m_ref[...]
    m_new = jnp.maximum(m_prev, jnp.max(s, axis=1, keepdims=True))
    p = jnp.exp(s - m_new)
    alpha = jnp.exp(m_prev - m_new)
    pv = lax.dot_general(p.astype(v.dtype), v, _NN, preferred_element_type=_F32)
    l_ref[...] = alpha * l_ref[...] + jnp.sum(p, axis=1, keepdims=True)
    acc_ref[...] = alpha * acc_ref[...] + pv
    m_ref[...] = m_new

    @pl.when(j == pl.num_programs(3) - 1)
    def _finish():
        o_ref[...] = (acc_ref[...] / l_ref[...]).astype(o_ref.dtype)
        lse_ref[...] = _column_to_row(m_ref[...] + jnp.log(l_ref[...]))


def _dkv_kernel(
    q_ref, k_ref, v_ref, do_ref, lse_ref, delta_ref, dk_ref, dv_ref, dk_acc, dv_acc, *, scale,
    window=0, seq=0, chunk=0,
):  # fmt: skip
    """dK and dV of key block ``j`` for one query head, over query blocks; grid (b, h, j, t):
    query block ``t`` (with a ``window``: ``j + t``, the band forward from the diagonal).
    Works on transposed blocks (``p.T`` is ``[bk, bq]``), the statistics as rows."""
    j, t = pl.program_id(2), pl.program_id(3)
    i = j + t if window else t

    @pl.when(t == 0)
    def _init():
        dk_acc[...] = jnp.zeros(dk_acc.shape, _F32)
        dv_acc[...] = jnp.zeros(dv_acc.shape, _F32)

    q, k, do = q_ref[...], k_ref[...], do_ref[...]
    s_t = _masked_scores(k, q, j * k.shape[0], i * q.shape[0], scale, False, window, seq, chunk)
    p_t = jnp.exp(s_t - lse_ref[...])
    dv_acc[...] += lax.dot_general(p_t.astype(do.dtype), do, _NN, preferred_element_type=_F32)
    dp_t = lax.dot_general(v_ref[...], do, _NT, preferred_element_type=_F32)
    ds_t = (p_t * (dp_t - delta_ref[...]) * scale).astype(q.dtype)
    dk_acc[...] += lax.dot_general(ds_t, q, _NN, preferred_element_type=_F32)

    @pl.when(t == pl.num_programs(3) - 1)
    def _finish():
        dk_ref[...] = dk_acc[...]
        dv_ref[...] = dv_acc[...]


def _dq_kernel(
    q_ref, k_ref, v_ref, do_ref, lse_ref, delta_ref, dq_ref, lse_col, delta_col, dq_acc, *,
    scale, window=0, seq=0, chunk=0,
):  # fmt: skip
    """dQ of query block ``i`` over key blocks; grid (b, h, i, j), ``j`` as the forward's.
    The statistics' rows are turned into columns once per query block."""
    i, j = pl.program_id(2), pl.program_id(3)
    kv = i - j if window else j

    @pl.when(j == 0)
    def _init():
        lse_col[...] = _row_to_column(lse_ref[...])
        delta_col[...] = _row_to_column(delta_ref[...])
        dq_acc[...] = jnp.zeros(dq_acc.shape, _F32)

    q, k = q_ref[...], k_ref[...]
    s = _masked_scores(q, k, i * q.shape[0], kv * k.shape[0], scale, True, window, seq, chunk)
    p = jnp.exp(s - lse_col[...])
    dp = lax.dot_general(do_ref[...], v_ref[...], _NT, preferred_element_type=_F32)
    ds = (p * (dp - delta_col[...]) * scale).astype(q.dtype)
    dq_acc[...] += lax.dot_general(ds, k, _NN, preferred_element_type=_F32)

    @pl.when(j == pl.num_programs(3) - 1)
    def _finish():
        dq_ref[...] = dq_acc[...].astype(dq_ref.dtype)


# --- pallas_calls. Grid (b, h, a2, a3): the query block index is a2 or a3, the key block
# index the other. Queries, dO, dQ (and the per-query-head dK, dV) are [B, H, S, K]; keys and
# values [B, N, S, K]; the statistics (lse, delta) [B, H, 1, S] float32.
#
# Cost estimates. flops: 2 per multiply-add of the kernel's matmuls over all blocks (masked
# ones too: they are computed). bytes_accessed: HBM traffic as the grid's pipeline moves it:
# an input block is copied in when its block index differs from the previous grid step's, so
# a block that stays put along the sequential (last) axis is read once per visit of that
# axis and one that moves with it once per grid step; each output block is written once.


def _specs(g: int, bq: int, bk: int, d: int, q_axis: int, dv: int, band: int = 0, nq: int = 0):
    """BlockSpecs of a query-like array, a key array (head ``h // g``: GQA without a repeat
    in HBM), a statistic, an output-like array and a value array (``dv`` wide: MLA's are
    narrower than its queries and keys), the query block index on grid axis ``q_axis``.
    With a ``band`` (a sliding window's), the other grid axis counts blocks from the
    diagonal: key blocks back from a query block, query blocks on from a key block, clamped
    to the sequence's ``nq`` blocks (the kernels mask what the clamp repeats)."""

    def qi(a2, a3):
        if q_axis == 2:
            return a2
        return jnp.minimum(a2 + a3, nq - 1) if band else a3

    def kj(a2, a3):
        if q_axis != 2:
            return a2
        return jnp.maximum(a2 - a3, 0) if band else a3

    def query_like(width: int) -> pl.BlockSpec:
        return pl.BlockSpec((_SQ, _SQ, bq, width), lambda b, h, a2, a3: (b, h, qi(a2, a3), 0))

    def kv_like(width: int) -> pl.BlockSpec:
        return pl.BlockSpec(
            (_SQ, _SQ, bk, width), lambda b, h, a2, a3: (b, lax.div(h, g), kj(a2, a3), 0)
        )

    stat = pl.BlockSpec((_SQ, _SQ, 1, bq), lambda b, h, a2, a3: (b, h, 0, qi(a2, a3)))
    return query_like(d), kv_like(d), stat, query_like(dv), kv_like(dv)


def _params() -> pltpu.CompilerParams:
    """The last grid axis carries the accumulators (sequential); the others are independent."""
    return pltpu.CompilerParams(
        dimension_semantics=("parallel", "parallel", "parallel", "arbitrary")
    )


def _sizes(q: jax.Array, k: jax.Array, bq: int, bk: int):
    """``b, h, s, d, g, nq, nk`` and the bytes of q, of k, and of one statistic."""
    b, h, s, d = q.shape
    g = h // k.shape[1]
    q_bytes = q.size * q.dtype.itemsize
    kv_bytes = k.size * k.dtype.itemsize
    return b, h, s, d, g, s // bq, s // bk, q_bytes, kv_bytes, b * h * s * 4


def _widths(q: jax.Array, k: jax.Array, v: jax.Array) -> tuple[int, float, float]:
    """The value width, and the value's and an output's bytes relative to the key's and the
    query's (1 unless MLA's values are narrower)."""
    dv = v.shape[-1]
    return dv, dv / k.shape[-1], dv / q.shape[-1]


def _forward(q, k, v, bq, bk, scale, interpret, window=0, chunk=0):
    """Output ``[B, H, S, K]`` and log-sum-exp ``[B, H, 1, S]`` float32."""
    b, h, s, d, g, nq, nk, q_bytes, kv_bytes, stat_bytes = _sizes(q, k, bq, bk)
    dv, v_rel, o_rel = _widths(q, k, v)
    band, steps, keys = _band(window, bk, nk, s)
    q_spec, kv_spec, stat_spec, o_spec, v_spec = _specs(g, bq, bk, d, 2, dv, band, nq)
    cost = pl.CostEstimate(
        flops=2 * b * h * s * keys * (d + dv),  # QK^T and PV
        transcendentals=b * h * s * (keys + steps + 1),  # exp for p; for alpha per block; log
        # q once per query block; k and v at every step (nq * G times each); out, lse once
        bytes_accessed=int((1 + o_rel) * q_bytes + (1 + v_rel) * nq * g * kv_bytes * keys / s)
        + stat_bytes,
    )
    return pl.pallas_call(
        functools.partial(_forward_kernel, scale=scale, window=window, seq=s, chunk=chunk),
        out_shape=(
            jax.ShapeDtypeStruct((b, h, s, dv), q.dtype),
            jax.ShapeDtypeStruct((b, h, 1, s), _F32),
        ),
        grid=(b, h, nq, steps),
        in_specs=[q_spec, kv_spec, v_spec],
        out_specs=(o_spec, stat_spec),
        scratch_shapes=[
            pltpu.VMEM((bq, 1), _F32),  # running max
            pltpu.VMEM((bq, 1), _F32),  # running denominator
            pltpu.VMEM((bq, dv), _F32),  # running output
        ],
        compiler_params=_params(),
        cost_estimate=cost,
        interpret=interpret,
        name=_name("flash_forward", window, keys, chunk),
    )(q, k, v)


def _backward_dkv(q, k, v, do, lse, delta, bq, bk, scale, interpret, window=0, chunk=0):
    """dK and dV per query head, ``[B, H, S, K]`` float32 (the caller sums each group)."""
    b, h, s, d, g, nq, nk, q_bytes, kv_bytes, stat_bytes = _sizes(q, k, bq, bk)
    dv, v_rel, o_rel = _widths(q, k, v)
    band, steps, keys = _band(window, bq, nq, s)
    q_spec, kv_spec, stat_spec, o_spec, v_spec = _specs(g, bq, bk, d, 3, dv, band, nq)

    def per_head(width: int) -> pl.BlockSpec:
        return pl.BlockSpec((_SQ, _SQ, bk, width), lambda b, h, j, i: (b, h, j, 0))

    visits = nk * keys / s  # times each query block is read
    cost = pl.CostEstimate(
        flops=4 * b * h * s * keys * (d + dv),  # QK^T (recomputed) and dK; dP and dV
        transcendentals=b * h * s * keys,  # exp for p
        # k and v once per key block (G times each: once per query head); q, dO, lse and
        # delta at every step (nk times each); dK and dV (float32, per query head) once
        bytes_accessed=int((1 + v_rel) * g * kv_bytes + visits * (1 + o_rel) * q_bytes)
        + int(visits * 2 * stat_bytes)
        + b * h * s * (d + dv) * 4,
    )
    return pl.pallas_call(
        functools.partial(_dkv_kernel, scale=scale, window=window, seq=s, chunk=chunk),
        out_shape=(
            jax.ShapeDtypeStruct(q.shape, _F32),
            jax.ShapeDtypeStruct((b, h, s, dv), _F32),
        ),
        grid=(b, h, nk, steps),
        in_specs=[q_spec, kv_spec, v_spec, o_spec, stat_spec, stat_spec],
        out_specs=(per_head(d), per_head(dv)),
        scratch_shapes=[pltpu.VMEM((bk, d), _F32), pltpu.VMEM((bk, dv), _F32)],
        compiler_params=_params(),
        cost_estimate=cost,
        interpret=interpret,
        name=_name("flash_backward_dkv", window, keys, chunk),
    )(q, k, v, do, lse, delta)


def _backward_dq(q, k, v, do, lse, delta, bq, bk, scale, interpret, window=0, chunk=0):
    """dQ ``[B, H, S, K]`` in q's dtype."""
    b, h, s, d, g, nq, nk, q_bytes, kv_bytes, stat_bytes = _sizes(q, k, bq, bk)
    dv, v_rel, o_rel = _widths(q, k, v)
    band, steps, keys = _band(window, bk, nk, s)
    q_spec, kv_spec, stat_spec, o_spec, v_spec = _specs(g, bq, bk, d, 2, dv, band, nq)
    cost = pl.CostEstimate(
        flops=2 * b * h * s * keys * (2 * d + dv),  # QK^T and dP (both recomputed), dQ
        transcendentals=b * h * s * keys,  # exp for p
        # q, dO, lse and delta once per query block; k and v at every step (nq * G times
        # each); dQ once
        bytes_accessed=int((2 + o_rel) * q_bytes + (1 + v_rel) * nq * g * kv_bytes * keys / s)
        + 2 * stat_bytes,
    )
    return pl.pallas_call(
        functools.partial(_dq_kernel, scale=scale, window=window, seq=s, chunk=chunk),
        out_shape=jax.ShapeDtypeStruct(q.shape, q.dtype),
        grid=(b, h, nq, steps),
        in_specs=[q_spec, kv_spec, v_spec, o_spec, stat_spec, stat_spec],
        out_specs=q_spec,
        scratch_shapes=[
            pltpu.VMEM((bq, 1), _F32),  # lse as a column
            pltpu.VMEM((bq, 1), _F32),  # delta as a column
            pltpu.VMEM((bq, d), _F32),  # dQ
        ],
        compiler_params=_params(),
        cost_estimate=cost,
        interpret=interpret,
        name=_name("flash_backward_dq", window, keys, chunk),
    )(q, k, v, do, lse, delta)


def _band(window: int, block: int, blocks: int, s: int) -> tuple[int, int, int]:
    """A kernel's band, its grid's last axis and the keys each query is computed against:
    no window, ``(0, blocks, s)``; with one, the blocks one block meets within it
    (:func:`.attention.band_blocks`, equal blocks both ways) for both."""
    if not window:
        return 0, blocks, s
    band = band_blocks(window, block, block, blocks)
    return band, band, band * block


def _name(kernel: str, window: int, keys: int, chunk: int = 0) -> str:
    """The kernel's name; with a window, the part of its computed keys the field counts
    (``..._window_1024_of_2048``: MaxText's Gemma 3 formula counts a window's keys, the
    kernel computes its band's; a chunk's, ``..._chunk_8192_of_8704``, the chunk's keys of
    the band of a window of its size; :func:`~shardviz.capture.kernel_costs.model_share`
    reads it)."""
    if chunk:
        return f"{kernel}_chunk_{chunk}_of_{keys}"
    return f"{kernel}_window_{window}_of_{keys}" if window else kernel


# --- the differentiable function, on the kernels' [B, X, S, K] layout


@functools.partial(jax.custom_vjp, nondiff_argnums=(3, 4, 5, 6, 7, 8))
def _flash(q, k, v, bq, bk, scale, interpret, window, chunk):
    return _forward(q, k, v, bq, bk, scale, interpret, window, chunk)[0]


def _flash_fwd(q, k, v, bq, bk, scale, interpret, window, chunk):
    out, lse = _forward(q, k, v, bq, bk, scale, interpret, window, chunk)
    return out, (q, k, v, out, lse)


def _flash_bwd(bq, bk, scale, interpret, window, chunk, residuals, d_out):
    """FlashAttention-2's backward in two kernels; p is recomputed from q, k and the lse."""
    q, k, v, out, lse = residuals
    b, n, s = k.shape[:3]
    delta = jnp.sum(out.astype(_F32) * d_out.astype(_F32), axis=-1)[:, :, None, :]
    args = (q, k, v, d_out, lse, delta, bq, bk, scale, interpret, window, chunk)
    dk, dv = _backward_dkv(*args)
    # The dQ kernel recomputes QK^T (the forward's) and dP (the dK/dV kernel's), so it is
    # named as jax names what jax.checkpoint recomputes: the project's flop count takes
    # this kernel as the hardware's extra work. The dK/dV kernel's 4 matmuls then make the
    # model's backward 2x the forward, the field's convention.
    with jax.named_scope(REMAT_MARK):
        dq = _backward_dq(*args)

    def per_kv_head(x, like):  # [B, H, S, K] float32 -> [B, N, S, K]: sum over each group
        return x.reshape(b, n, -1, s, x.shape[-1]).sum(axis=2).astype(like.dtype)

    return dq, per_kv_head(dk, k), per_kv_head(dv, v)


_flash.defvjp(_flash_fwd, _flash_bwd)
