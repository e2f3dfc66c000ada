"""RMSNorm (Zhang & Sennrich, 2019), as Llama, Mixtral and Qwen use it before each block."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp

if TYPE_CHECKING:
    from shardviz.strategies.models.configs import ArchConfig

__all__ = ["head_norm", "rms_norm"]


def rms_norm(x: jax.Array, scale: jax.Array, eps: float) -> jax.Array:
    """``x / rms(x) * scale`` over the last dim, computed in float32 (a bf16 mean of squares
    loses the small ones), returned in ``x``'s dtype."""
    xf = x.astype(jnp.float32)
    y = xf * jax.lax.rsqrt(jnp.mean(xf * xf, axis=-1, keepdims=True) + eps)
    return (y * scale.astype(jnp.float32)).astype(x.dtype)


def head_norm(y: jax.Array, p: dict[str, Any], w: str, config: ArchConfig) -> jax.Array:
    """The query (``w == "wq"``) or key (``"wk"``) projection ``y: [B, S, heads, head_dim]``
    of a ``qk_norm`` architecture, each head RMS-normalised over its width with the layer's
    ``q_norm`` / ``k_norm`` scale (Qwen3); ``y`` as it is otherwise. The training decoder and
    the serving steps both call it, so they compute the same attention."""
    if not config.qk_norm or w not in ("wq", "wk"):
        return y
    return rms_norm(y, p["q_norm" if w == "wq" else "k_norm"], config.norm_eps)
