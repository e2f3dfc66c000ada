"""Rotary position embeddings (Su et al., 2021) in the Llama / Hugging Face layout.

A head's dims are two halves ``(x1, x2)`` rotated pairwise, ``x1[i]`` with ``x2[i]``, by the
angle ``position * inv_freq[i]`` (``rotate_half``, not interleaved pairs). Llama 3.1 rescales
the low frequencies (:class:`~.configs.Llama3RopeScaling`), DeepSeek-V3 interpolates them by
YaRN (:class:`~.configs.YarnScaling`).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from shardviz.strategies.models.configs import Llama3RopeScaling, YarnScaling

__all__ = ["apply_rope", "rope_frequencies"]


def rope_frequencies(
    head_dim: int,
    theta: float,
    scaling: Llama3RopeScaling | None = None,
    linear: float = 1.0,
    yarn: YarnScaling | None = None,
) -> np.ndarray:
    """Inverse frequencies ``[head_dim // 2]`` (float32), with Llama 3.1's scaling or YaRN's
    if given; ``linear``: positions divided by it (linear scaling, Gemma 3's global layers)."""
    inv = 1.0 / theta ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim) / linear
    if yarn is not None:
        inv = _yarn(inv, head_dim, theta, yarn)
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


def _yarn(inv: np.ndarray, head_dim: int, theta: float, y: YarnScaling) -> np.ndarray:
    """YaRN's blend of ``inv`` and ``inv / factor``: kept below the dim where a wavelength
    fits ``beta_fast`` rotations in the original context, divided above the one where it
    fits ``beta_slow``, a linear ramp between (the bounds floored and ceiled)."""

    def dim_of(rotations: float) -> float:  # the dim whose wavelength fits `rotations`
        return (
            head_dim
            * math.log(y.original_context / (rotations * 2 * math.pi))
            / (2 * math.log(theta))
        )

    low = max(math.floor(dim_of(y.beta_fast)), 0)
    high = min(math.ceil(dim_of(y.beta_slow)), head_dim - 1)
    ramp = np.clip((np.arange(inv.size) - low) / max(high - low, 1e-3), 0.0, 1.0)
    return inv / y.factor * ramp + inv * (1.0 - ramp)


def apply_rope(x: jax.Array, inv_freq: np.ndarray) -> jax.Array:
    """``x: [B, S, N, K]`` rotated by position ``0..S-1`` (in float32, returned in x's dtype)."""
    positions = jnp.arange(x.shape[1], dtype=jnp.float32)  # an iota, not an [S] constant
    angles = positions[:, None] * jnp.asarray(inv_freq)[None, :]  # [S, K/2]
    cos, sin = jnp.cos(angles)[:, None, :], jnp.sin(angles)[:, None, :]
    xf = x.astype(jnp.float32)
    x1, x2 = jnp.split(xf, 2, axis=-1)
    return jnp.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1).astype(x.dtype)
