"""Rotary position embeddings (Su et al., 2021) in the Llama / Hugging Face layout.

A head's dims are two halves ``(x1, x2)`` rotated pairwise, ``x1[i]`` with ``x2[i]``, by the
angle ``position * inv_freq[i]`` (``rotate_half``, not interleaved pairs). Llama 3.1 rescales
the low frequencies (:class:`~.configs.Llama3RopeScaling`).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from shardviz.strategies.models.configs import Llama3RopeScaling

__all__ = ["apply_rope", "rope_frequencies"]


def rope_frequencies(
    head_dim: int,
    theta: float,
    scaling: Llama3RopeScaling | None = None,
    linear: float = 1.0,
) -> np.ndarray:
    """Inverse frequencies ``[head_dim // 2]`` (float32), with Llama 3.1's scaling if given;
    ``linear``: positions divided by it (linear scaling, Gemma 3's global layers: 8)."""
    inv = 1.0 / theta ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim) / linear
    if scaling is not None:
        s = scaling
        wavelen = 2 * math.pi / inv
        low_wavelen = s.original_context / s.low_freq_factor
        high_wavelen = s.original_context / s.high_freq_factor
        smooth = (s.original_context / wavelen - s.low_freq_factor) / (
            s.high_freq_factor - s.low_freq_factor
        )
        blended = (1 - smooth) * inv / s.factor + smooth * inv
        inv = np.where(
            wavelen < high_wavelen, inv, np.where(wavelen > low_wavelen, inv / s.factor, blended)
        )
    return inv.astype(np.float32)


def apply_rope(x: jax.Array, inv_freq: np.ndarray) -> jax.Array:
    """``x: [B, S, N, K]`` rotated by position ``0..S-1`` (in float32, returned in x's dtype)."""
    positions = jnp.arange(x.shape[1], dtype=jnp.float32)  # an iota, not an [S] constant
    angles = positions[:, None] * jnp.asarray(inv_freq)[None, :]  # [S, K/2]
    cos, sin = jnp.cos(angles)[:, None, :], jnp.sin(angles)[:, None, :]
    xf = x.astype(jnp.float32)
    x1, x2 = jnp.split(xf, 2, axis=-1)
    return jnp.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1).astype(x.dtype)
