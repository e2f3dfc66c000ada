"""RMSNorm (Zhang & Sennrich, 2019), as Llama, Mixtral and Qwen use it before each block."""

from __future__ import annotations

import jax
import jax.numpy as jnp

__all__ = ["rms_norm"]


def rms_norm(x: jax.Array, scale: jax.Array, eps: float) -> jax.Array:
    """``x / rms(x) * scale`` over the last dim, computed in float32 (a bf16 mean of squares
    loses the small ones), returned in ``x``'s dtype."""
    xf = x.astype(jnp.float32)
    y = xf * jax.lax.rsqrt(jnp.mean(xf * xf, axis=-1, keepdims=True) + eps)
    return (y * scale.astype(jnp.float32)).astype(x.dtype)
