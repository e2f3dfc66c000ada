"""The decoder's serving steps in jax: weights and KV cache in bfloat16, int8 or int4.

- :func:`serving_weights`: the decoder's parameters (:mod:`..models.params`: a dense MLP or
  experts) as ShapeDtypeStructs, matrices in the weight dtype, norm scales in bfloat16;
- :func:`decode_step`: one new token per sequence at position ``pos``, its keys and values
  written into the cache, attention over positions ``0..pos`` read from the cache;
- :func:`prefill_step`: the whole prompt (blockwise attention), its keys and values as the
  cache, and the first generated token.

A mixture of experts' MLP is :func:`~..models.experts.moe_mlp`: top-k routing within groups
of at most :data:`MOE_GROUP` tokens of one data shard, each expert taking up to
``ceil(k x`` :data:`CAPACITY_FACTOR` ``x group / experts)`` of them (GShard's capacity), as
one-hot dispatch and combine einsums: the program reads every expert's weights, and moves
tokens between chips where the experts are split (see :mod:`.experts` for the weights a
dropless kernel reads, the figure the step's estimate uses).

Quantised weights and caches are dequantised to bfloat16 as they are read (weight-only
quantisation: the matmuls run in bfloat16, as the scaling book assumes). A fixed scale stands
in for the per-channel scales a real quantiser keeps: they are under 0.1% of the bytes, and
the values here are never meant to be good text, only the program's shapes and traffic.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from shardviz.strategies.models.attention import blockwise_attention
from shardviz.strategies.models.configs import ArchConfig
from shardviz.strategies.models.experts import moe_mlp
from shardviz.strategies.models.gated_mlp import gated_mlp
from shardviz.strategies.models.norm import head_norm, rms_norm
from shardviz.strategies.models.params import nest, param_table
from shardviz.strategies.models.rope import apply_rope, rope_frequencies

__all__ = [
    "CAPACITY_FACTOR",
    "MOE_GROUP",
    "Constrain",
    "cache_shape",
    "decode_step",
    "moe_group",
    "prefill_step",
    "serving_weights",
]

BF16 = jnp.bfloat16
#: name -> array -> the array pinned to the layout's spec for ``name`` (or unchanged).
Constrain = Callable[[str, jax.Array], jax.Array]
#: Fixed scales of the quantised values (see the module doc): weights, cache.
_WEIGHT_SCALE = {"int8": 1 / 64, "int4": 1 / 4}
_CACHE_SCALE = {"int8": 8.0, "int4": 2.0}
_CACHE_RANGE = {"int8": 127, "int4": 7}
#: The most tokens of one routing group, and the experts' capacity factor (GShard's 1.25).
MOE_GROUP = 256
CAPACITY_FACTOR = 1.25


def _none(name: str, x: jax.Array) -> jax.Array:
    del name
    return x


def serving_weights(config: ArchConfig, dtype: str) -> dict[str, Any]:
    """The parameter tree as ShapeDtypeStructs: matrices in ``dtype``, norms in bfloat16."""
    flat = {
        path: jax.ShapeDtypeStruct(info.shape, BF16 if info.init == "ones" else jnp.dtype(dtype))
        for path, info in param_table(config).items()
    }
    return nest(flat)


def cache_shape(config: ArchConfig, batch: int, context: int) -> tuple[int, ...]:
    """The keys' (and values') cache: ``[layers, batch, context, kv_heads, head_dim]``."""
    return (config.layers, batch, context, config.kv_heads, config.head_dim)


def _weight(w: jax.Array) -> jax.Array:
    name = jnp.dtype(w.dtype).name
    if name in _WEIGHT_SCALE:
        return w.astype(BF16) * jnp.asarray(_WEIGHT_SCALE[name], BF16)
    return w.astype(BF16)


def _to_cache(x: jax.Array, dtype: Any) -> jax.Array:
    name = jnp.dtype(dtype).name
    if name not in _CACHE_SCALE:
        return x.astype(dtype)
    r = _CACHE_RANGE[name]
    return jnp.clip(jnp.round(x.astype(jnp.float32) * _CACHE_SCALE[name]), -r - 1, r).astype(dtype)


def _from_cache(x: jax.Array) -> jax.Array:
    name = jnp.dtype(x.dtype).name
    if name not in _CACHE_SCALE:
        return x.astype(BF16)
    return x.astype(BF16) / jnp.asarray(_CACHE_SCALE[name], BF16)


def _rope_at(x: jax.Array, pos: jax.Array, inv_freq: np.ndarray) -> jax.Array:
    """``x: [B, 1, N, K]`` rotated by position ``pos`` (as :func:`apply_rope` does at ``pos``)."""
    angles = pos.astype(jnp.float32) * jnp.asarray(inv_freq)  # [K/2]
    cos, sin = jnp.cos(angles), jnp.sin(angles)
    x1, x2 = jnp.split(x.astype(jnp.float32), 2, axis=-1)
    return jnp.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1).astype(x.dtype)


def _project(p: dict[str, Any], x: jax.Array, w: str, b: str, c: ArchConfig) -> jax.Array:
    """The q, k or v projection (``w``), with its bias and, for q and k, the per-head RMSNorm
    of a ``qk_norm`` architecture (as the training decoder computes it)."""
    y = jnp.einsum("bsd,dnk->bsnk", x, _weight(p[w]))
    return head_norm(y + p[b].astype(BF16) if c.qkv_bias else y, p, w, c)


def moe_group(tokens_per_shard: int) -> int:
    """Tokens per routing group: :data:`MOE_GROUP` or fewer, dividing one data shard's tokens
    (so routing never crosses a shard: ``[B, S, D]`` cut into groups keeps the batch split)."""
    return math.gcd(tokens_per_shard, MOE_GROUP)


def _mlp(
    p: dict[str, Any], x: jax.Array, config: ArchConfig, constrain: Constrain, group: int | None
) -> jax.Array:
    """The layer's MLP: SwiGLU, or top-k of the experts (groups of ``group`` tokens; ``None``:
    :func:`moe_group` of all the tokens)."""
    if not config.is_moe:
        return gated_mlp({k: _weight(v) for k, v in p["mlp"].items()}, x, config.activation)
    out, _ = moe_mlp(
        {k: _weight(v) for k, v in p["moe"].items()}, x,
        top_k=config.experts_per_token, capacity_factor=CAPACITY_FACTOR,
        group=group or moe_group(x.shape[0] * x.shape[1]), activation=config.activation,
        constrain=constrain,
    )  # fmt: skip
    return out


def _logits_token(params: dict[str, Any], x: jax.Array, config: ArchConfig) -> jax.Array:
    """The greedy next token of the last position of ``x: [B, S, D]``."""
    h = rms_norm(x[:, -1], params["final_norm"]["scale"], config.norm_eps)
    unembed = (
        _weight(params["embed"]["embedding"]).T
        if config.tied_embeddings
        else _weight(params["unembed"])
    )
    logits = jnp.einsum("bd,dv->bv", h, unembed, preferred_element_type=jnp.float32)
    return jnp.argmax(logits, axis=-1).astype(jnp.int32)


def decode_step(
    params: dict[str, Any],
    cache_k: jax.Array,
    cache_v: jax.Array,
    tokens: jax.Array,
    pos: jax.Array,
    *,
    config: ArchConfig,
    constrain: Constrain = _none,
    group: int | None = None,
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """One generated token per sequence: ``tokens: int32 [B]`` at position ``pos`` (a scalar).

    Returns the next tokens ``[B]`` and both caches with position ``pos`` written (donate the
    caches so the write is in place). ``group``: a mixture of experts' routing group.
    """
    c = config
    inv_freq = rope_frequencies(c.head_dim, c.rope_theta, c.rope_scaling)
    x = _weight(jnp.take(params["embed"]["embedding"], tokens, axis=0))[:, None, :]  # [B,1,D]
    context = cache_k.shape[2]
    scale = 1.0 / float(np.sqrt(c.head_dim))

    def layer(carry, xs):
        x, ck, cv = carry
        p, index = xs
        h = rms_norm(x, p["attn_norm"]["scale"], c.norm_eps)
        a = p["attn"]
        q = _rope_at(_project(a, h, "wq", "bq", c), pos, inv_freq)
        k = _rope_at(_project(a, h, "wk", "bk", c), pos, inv_freq)
        v = _project(a, h, "wv", "bv", c)
        # Read this layer's cache before writing the new position into the big cache: a read
        # after the write makes the compiler copy the whole loop-carried cache (a cache's
        # worth of scratch); the new position joins the small slice read instead.
        k_new, v_new = _to_cache(k, ck.dtype), _to_cache(v, cv.dtype)
        here = (0, pos, 0, 0)
        old_k = jax.lax.dynamic_index_in_dim(ck, index, 0, False)
        old_v = jax.lax.dynamic_index_in_dim(cv, index, 0, False)
        keys = constrain(
            "cache_layer", _from_cache(jax.lax.dynamic_update_slice(old_k, k_new, here))
        )
        values = constrain(
            "cache_layer", _from_cache(jax.lax.dynamic_update_slice(old_v, v_new, here))
        )
        at = (index, 0, pos, 0, 0)
        ck = jax.lax.dynamic_update_slice(ck, k_new[None], at)
        cv = jax.lax.dynamic_update_slice(cv, v_new[None], at)
        b, _, heads, kd = q.shape
        q5 = q.reshape(b, c.kv_heads, heads // c.kv_heads, kd)  # [B, N, G, K]
        s = jnp.einsum("bngk,bsnk->bngs", q5, keys, preferred_element_type=jnp.float32) * scale
        s = constrain("scores", jnp.where(jnp.arange(context) <= pos, s, -1e30))
        w = jax.nn.softmax(s, axis=-1).astype(BF16)
        out = jnp.einsum("bngs,bsnk->bngk", w, values).reshape(b, 1, heads, kd)
        x = x + jnp.einsum("bsnk,nkd->bsd", out, _weight(a["wo"]))
        h = rms_norm(x, p["mlp_norm"]["scale"], c.norm_eps)
        return (x + _mlp(p, h, c, constrain, group), ck, cv), None

    layers = {k: v for k, v in params["layers"].items()}
    (x, cache_k, cache_v), _ = jax.lax.scan(
        layer, (x, cache_k, cache_v), (layers, jnp.arange(c.layers))
    )
    return _logits_token(params, x, c), cache_k, cache_v


def prefill_step(
    params: dict[str, Any],
    tokens: jax.Array,
    *,
    config: ArchConfig,
    cache_dtype: str,
    block: int = 512,
    constrain: Constrain = _none,
    group: int | None = None,
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """The prompt ``tokens: int32 [B, S]`` through every layer (causal blockwise attention).

    Returns the first generated token ``[B]`` and the caches ``[layers, B, S, kv_heads,
    head_dim]`` in ``cache_dtype``. ``group``: a mixture of experts' routing group.
    """
    c = config
    inv_freq = rope_frequencies(c.head_dim, c.rope_theta, c.rope_scaling)
    x = _weight(jnp.take(params["embed"]["embedding"], tokens, axis=0))  # [B, S, D]
    seq = tokens.shape[1]
    dtype = jnp.dtype(cache_dtype)

    def layer(x, p):
        h = rms_norm(x, p["attn_norm"]["scale"], c.norm_eps)
        a = p["attn"]
        q = apply_rope(_project(a, h, "wq", "bq", c), inv_freq)
        k = apply_rope(_project(a, h, "wk", "bk", c), inv_freq)
        v = _project(a, h, "wv", "bv", c)
        heads = blockwise_attention(q, k, v, block_q=min(block, seq), block_kv=min(block, seq))
        x = x + jnp.einsum("bsnk,nkd->bsd", heads, _weight(a["wo"]))
        h = rms_norm(x, p["mlp_norm"]["scale"], c.norm_eps)
        kc = constrain("cache_layer", _to_cache(k, dtype))
        vc = constrain("cache_layer", _to_cache(v, dtype))
        return x + _mlp(p, h, c, constrain, group), (kc, vc)

    x, (cache_k, cache_v) = jax.lax.scan(layer, x, params["layers"])
    return _logits_token(params, x, c), cache_k, cache_v
