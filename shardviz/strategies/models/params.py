"""The decoder's parameters: shapes, logical axes and initialisation, from one table.

Layers are stacked: every per-layer parameter has a leading ``layers`` dim, so the decoder
runs them with one ``lax.scan`` (one compile of the layer, whatever the depth). Leaf paths::

    embed/embedding        [vocab, embed]
    layers/attn_norm/scale [layers, embed]
    layers/attn/wq         [layers, embed, heads, head_dim]      (+ bq [layers, heads, head_dim])
    layers/attn/wk, wv     [layers, embed, kv_heads, head_dim]   (+ bk, bv with qkv_bias)
    layers/attn/wo         [layers, heads, head_dim, embed]
    layers/attn/q_norm, k_norm [layers, head_dim]                (with qk_norm)
    layers/attn/wq_a [layers, embed, q_lora_out], q_a_norm, wq_b [layers, q_lora, heads, head_dim],
      wkv_a [layers, embed, kv_lora_out] (latent and shared RoPE key), kv_a_norm,
      wkv_b [layers, kv_lora, heads, head_dim] (keys' no-RoPE part and values): MLA, no wq/wk/wv
    layers/attn_post_norm/scale, layers/mlp_post_norm/scale [layers, embed]   (with post_norms)
    layers/mlp_norm/scale  [layers, embed]
    layers/mlp/w_gate, w_up [layers, embed, mlp];  layers/mlp/w_down [layers, mlp, embed]
    layers/moe/router      [layers, embed, expert]              (MoE models, instead of mlp/)
    layers/moe/router_bias [layers, expert]                     (with router_bias)
    layers/moe/w_gate, w_up [layers, expert, embed, mlp]; layers/moe/w_down [layers, expert, mlp, embed]
    layers/moe/shared/w_gate, w_up, w_down                      (shared experts: one gated MLP)
    dense_layers/...       an MoE model's dense layers, with mlp/, in layer order (DeepSeek-V3's
                           first 3; Llama 4 Maverick's every other one)
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

from shardviz.strategies.models.axes import STORED_AXES
from shardviz.strategies.models.configs import ArchConfig
from shardviz.strategies.transformer import split_normal

__all__ = ["ParamInfo", "init_params", "nest", "param_axes", "param_table"]


@dataclass(frozen=True)
class ParamInfo:
    """One parameter: its shape, logical axes and initial values.

    ``init`` is ``"normal"`` (standard normal / sqrt(fan_in)), ``"ones"`` or ``"zeros"``.
    """

    shape: tuple[int, ...]
    axes: tuple[str | None, ...]
    init: str = "normal"
    fan_in: int = 1


def param_table(config: ArchConfig) -> dict[str, ParamInfo]:
    """Every parameter of ``config`` by leaf path (``"layers/attn/wq"``), in init order.
    An MoE model's dense layers (its first ``dense_layers``, those between its MoE layers)
    are a stack of their own, ``dense_layers/...``."""
    c = config
    D, V = c.d_model, c.vocab  # noqa: N806 (the dims' usual letters)
    t: dict[str, ParamInfo] = {"embed/embedding": ParamInfo((V, D), ("vocab", "embed"), fan_in=1)}
    dense = c.layers - c.moe_layers if c.is_moe else 0
    if dense:
        t |= _layer_table(c, "dense_layers", dense, moe=False)
    t |= _layer_table(c, "layers", c.moe_layers if c.is_moe else c.layers, c.is_moe)
    t["final_norm/scale"] = ParamInfo((D,), ("embed",), "ones")
    if not c.tied_embeddings:
        t["unembed"] = ParamInfo((D, V), ("embed", "vocab"), fan_in=D)
    return t


def _layer_table(c: ArchConfig, stack: str, n: int, moe: bool) -> dict[str, ParamInfo]:
    """A stack of ``n`` layers' parameters under ``stack/``, each with a leading ``layers``
    dim; their MLP a mixture of experts if ``moe``."""
    D = c.d_model  # noqa: N806

    def p(
        shape: tuple[int, ...], axes: tuple[str | None, ...], init: str = "normal", fan_in: int = 1
    ):
        return ParamInfo((n, *shape), ("layers", *axes), init, fan_in)

    t = {f"{stack}/attn_norm/scale": p((D,), ("embed",), "ones")}
    t |= {f"{stack}/attn/{k}": v for k, v in _attention_table(c, p).items()}
    if c.post_norms:
        t[f"{stack}/attn_post_norm/scale"] = p((D,), ("embed",), "ones")
    t[f"{stack}/mlp_norm/scale"] = p((D,), ("embed",), "ones")
    if c.post_norms:
        t[f"{stack}/mlp_post_norm/scale"] = p((D,), ("embed",), "ones")
    if moe:
        E, F = c.experts, c.ffn  # noqa: N806
        # The router as MaxText's (its gate: ("embed", None)), the experts' width apart
        # (embed_no_exp), so a strategy can split every other weight over the expert axes.
        t[f"{stack}/moe/router"] = p((D, E), ("embed", None), fan_in=D)
        if c.router_bias:
            t[f"{stack}/moe/router_bias"] = p((E,), (None,), "zeros")
        for name in ("w_gate", "w_up"):
            t[f"{stack}/moe/{name}"] = p((E, D, F), STORED_AXES["expert_w_in_stored"], fan_in=D)
        t[f"{stack}/moe/w_down"] = p((E, F, D), STORED_AXES["expert_w_out_stored"], fan_in=F)
        if c.shared_experts:
            t |= _mlp_table(p, f"{stack}/moe/shared", D, c.shared_experts * F)
    else:
        t |= _mlp_table(p, f"{stack}/mlp", D, (c.dense_ffn or c.ffn) if c.is_moe else c.ffn)
    return t


def _mlp_table(p: Any, prefix: str, d: int, f: int) -> dict[str, ParamInfo]:
    """A gated MLP's three weights, ``d -> f -> d``."""
    return {
        f"{prefix}/w_gate": p((d, f), ("embed", "mlp"), fan_in=d),
        f"{prefix}/w_up": p((d, f), ("embed", "mlp"), fan_in=d),
        f"{prefix}/w_down": p((f, d), ("mlp", "embed"), fan_in=f),
    }


def _attention_table(c: ArchConfig, p: Any) -> dict[str, ParamInfo]:
    """One layer's attention parameters by name (see the module doc)."""
    D, H, N, K, Kv = c.d_model, c.heads, c.kv_heads, c.head_dim, c.value_dim  # noqa: N806
    out = p((H, Kv, D), ("heads", "head_dim", "embed"), fan_in=H * Kv)
    if c.latent:
        Q, R = c.q_lora_rank, c.kv_lora_rank  # noqa: N806
        t = {}
        if Q:
            t["wq_a"] = p((D, Q), ("embed", "q_lora_out"), fan_in=D)
            t["q_a_norm"] = p((Q,), ("q_lora_out",), "ones")
            t["wq_b"] = p((Q, H, K), ("q_lora", "heads", "head_dim"), fan_in=Q)
        else:
            t["wq"] = p((D, H, K), ("embed", "heads", "head_dim"), fan_in=D)
        t["wkv_a"] = p((D, R + c.rope_head_dim), ("embed", "kv_lora_out"), fan_in=D)
        t["kv_a_norm"] = p((R,), ("kv_lora_out",), "ones")
        nope = K - c.rope_head_dim
        t["wkv_b"] = p((R, H, nope + Kv), ("kv_lora", "heads", "head_dim"), fan_in=R)
        return t | {"wo": out}
    t = {
        "wq": p((D, H, K), ("embed", "heads", "head_dim"), fan_in=D),
        "wk": p((D, N, K), ("embed", "kv_heads", "head_dim"), fan_in=D),
        "wv": p((D, N, K), ("embed", "kv_heads", "head_dim"), fan_in=D),
        "wo": out,
    }
    if c.qkv_bias:
        t["bq"] = p((H, K), ("heads", "head_dim"), "zeros")
        t["bk"] = p((N, K), ("kv_heads", "head_dim"), "zeros")
        t["bv"] = p((N, K), ("kv_heads", "head_dim"), "zeros")
    if c.qk_norm:
        t["q_norm"] = p((K,), ("head_dim",), "ones")
        t["k_norm"] = p((K,), ("head_dim",), "ones")
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
