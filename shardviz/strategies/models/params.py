"""The decoder's parameters: shapes, logical axes and initialisation, from one table.

Layers are stacked: every per-layer parameter has a leading ``layers`` dim, so the decoder
runs them with one ``lax.scan`` (one compile of the layer, whatever the depth). Leaf paths::

    embed/embedding        [vocab, embed]
    layers/attn_norm/scale [layers, embed]
    layers/attn/wq         [layers, embed, heads, head_dim]      (+ bq [layers, heads, head_dim])
    layers/attn/wk, wv     [layers, embed, kv_heads, head_dim]   (+ bk, bv with qkv_bias)
    layers/attn/wo         [layers, heads, head_dim, embed]
    layers/attn/q_norm, k_norm [layers, head_dim]                (with qk_norm)
    layers/attn_post_norm/scale, layers/mlp_post_norm/scale [layers, embed]   (with post_norms)
    layers/mlp_norm/scale  [layers, embed]
    layers/mlp/w_gate, w_up [layers, embed, mlp];  layers/mlp/w_down [layers, mlp, embed]
    layers/moe/router      [layers, embed, expert]              (MoE models, instead of mlp/)
    layers/moe/w_gate, w_up [layers, expert, embed, mlp]; layers/moe/w_down [layers, expert, mlp, embed]
    final_norm/scale       [embed]
    unembed                [embed, vocab]                        (absent with tied embeddings)

Weights are float32 master copies (the loss casts them to the compute dtype).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp

from shardviz.strategies.models.configs import ArchConfig
from shardviz.strategies.transformer import split_normal

__all__ = ["ParamInfo", "init_params", "nest", "param_axes", "param_table"]


@dataclass(frozen=True)
class ParamInfo:
    """One parameter: its shape, logical axes and initial values.

    ``init`` is ``"normal"`` (standard normal / sqrt(fan_in)), ``"ones"`` or ``"zeros"``.
    """

    shape: tuple[int, ...]
    axes: tuple[str, ...]
    init: str = "normal"
    fan_in: int = 1


def param_table(config: ArchConfig) -> dict[str, ParamInfo]:
    """Every parameter of ``config`` by leaf path (``"layers/attn/wq"``), in init order."""
    c = config
    L, D, H, N, K, F, V = (  # noqa: N806 (the dims' usual letters)
        c.layers,
        c.d_model,
        c.heads,
        c.kv_heads,
        c.head_dim,
        c.ffn,
        c.vocab,
    )
    t: dict[str, ParamInfo] = {
        "embed/embedding": ParamInfo((V, D), ("vocab", "embed"), fan_in=1),
        "layers/attn_norm/scale": ParamInfo((L, D), ("layers", "embed"), "ones"),
        "layers/attn/wq": ParamInfo(
            (L, D, H, K), ("layers", "embed", "heads", "head_dim"), fan_in=D
        ),
        "layers/attn/wk": ParamInfo(
            (L, D, N, K), ("layers", "embed", "kv_heads", "head_dim"), fan_in=D
        ),
        "layers/attn/wv": ParamInfo(
            (L, D, N, K), ("layers", "embed", "kv_heads", "head_dim"), fan_in=D
        ),
        "layers/attn/wo": ParamInfo(
            (L, H, K, D), ("layers", "heads", "head_dim", "embed"), fan_in=H * K
        ),
    }
    if c.qkv_bias:
        t["layers/attn/bq"] = ParamInfo((L, H, K), ("layers", "heads", "head_dim"), "zeros")
        t["layers/attn/bk"] = ParamInfo((L, N, K), ("layers", "kv_heads", "head_dim"), "zeros")
        t["layers/attn/bv"] = ParamInfo((L, N, K), ("layers", "kv_heads", "head_dim"), "zeros")
    if c.qk_norm:
        t["layers/attn/q_norm"] = ParamInfo((L, K), ("layers", "head_dim"), "ones")
        t["layers/attn/k_norm"] = ParamInfo((L, K), ("layers", "head_dim"), "ones")
    if c.post_norms:
        t["layers/attn_post_norm/scale"] = ParamInfo((L, D), ("layers", "embed"), "ones")
    t["layers/mlp_norm/scale"] = ParamInfo((L, D), ("layers", "embed"), "ones")
    if c.post_norms:
        t["layers/mlp_post_norm/scale"] = ParamInfo((L, D), ("layers", "embed"), "ones")
    if c.is_moe:
        E = c.experts  # noqa: N806
        t["layers/moe/router"] = ParamInfo((L, D, E), ("layers", "embed", "expert"), fan_in=D)
        for name in ("w_gate", "w_up"):
            t[f"layers/moe/{name}"] = ParamInfo(
                (L, E, D, F), ("layers", "expert", "embed", "mlp"), fan_in=D
            )
        t["layers/moe/w_down"] = ParamInfo(
            (L, E, F, D), ("layers", "expert", "mlp", "embed"), fan_in=F
        )
    else:
        for name in ("w_gate", "w_up"):
            t[f"layers/mlp/{name}"] = ParamInfo((L, D, F), ("layers", "embed", "mlp"), fan_in=D)
        t["layers/mlp/w_down"] = ParamInfo((L, F, D), ("layers", "mlp", "embed"), fan_in=F)
    t["final_norm/scale"] = ParamInfo((D,), ("embed",), "ones")
    if not c.tied_embeddings:
        t["unembed"] = ParamInfo((D, V), ("embed", "vocab"), fan_in=D)
    return t


def nest(flat: dict[str, Any]) -> dict[str, Any]:
    """``{"a/b": x}`` -> ``{"a": {"b": x}}``."""
    out: dict[str, Any] = {}
    for path, value in flat.items():
        *parents, leaf = path.split("/")
        node = out
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = value
    return out


def param_axes(config: ArchConfig) -> dict[str, Any]:
    """The parameter tree with each leaf's logical axes (a tuple of names) in its place."""
    return nest({path: info.axes for path, info in param_table(config).items()})


def init_params(key: jax.Array, config: ArchConfig, dtype: Any = jnp.float32) -> dict[str, Any]:
    """Fresh parameters: normals scaled by 1/sqrt(fan-in), RMSNorm scales 1, biases 0.

    The normals come from one draw, cut into leaves (one random generator to compile instead
    of one per leaf: seconds on CPU). Under ``jax.eval_shape`` this gives the shapes without
    allocating (any size); jit it with ``out_shardings`` to create each leaf split on device.
    """
    table = param_table(config)
    random = {path: info for path, info in table.items() if info.init == "normal"}
    draws = dict(zip(random, split_normal(key, [i.shape for i in random.values()]), strict=True))
    flat = {}
    for path, info in table.items():
        if info.init == "ones":
            flat[path] = jnp.ones(info.shape, dtype)
        elif info.init == "zeros":
            flat[path] = jnp.zeros(info.shape, dtype)
        else:
            flat[path] = (draws[path] / math.sqrt(info.fan_in)).astype(dtype)
    return nest(flat)
