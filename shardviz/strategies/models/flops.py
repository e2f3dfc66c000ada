"""A training step's model flops as published MFUs count them, from the architecture alone.

The convention of MaxText's published tables (and of PaLM's appendix B): every weight matmul
forward and backward, ``6 x (matmul weights) x tokens``; the output head is a matmul, the
input embedding a lookup (no flops); attention's two matmuls (``QK^T`` and ``PV``) over the
whole ``S x S`` score matrix (a sliding-window layer's ``S x window``, a chunked layer's
chunks, each ``chunk x chunk``), forward and backward
(``x 3``), **not** halved for the causal mask (MaxText's figures of 2024-25 count it in full:
the published Llama 3.1 MFUs match it, 45.3% and 50.3% against the published 45.46% and
50.33%); an MoE layer counts its router, its shared experts and ``experts_per_token``
routed experts per token; MLA counts its latent projections, and attention at the query/key
width for ``QK^T`` and the value width for ``PV``. No jax: the numbers shardviz's own count
of the compiled program (``Cost.model_flops_per_device``) is checked against.
"""

from __future__ import annotations

from dataclasses import dataclass

from shardviz.strategies.models.configs import ArchConfig, layer_weights

__all__ = ["StepFlops", "training_flops"]


@dataclass(frozen=True)
class StepFlops:
    """Model flops of one training step (forward and backward) over ``tokens`` tokens:
    the weights' matmuls and attention's, and their sum."""

    weights: float
    attention: float

    @property
    def total(self) -> float:
        return self.weights + self.attention


def training_flops(
    config: ArchConfig, tokens: int, seq: int, causal_half: bool = False
) -> StepFlops:
    """Model flops of a training step over ``tokens`` tokens in sequences of ``seq``.

    Args:
      config: the architecture.
      tokens: tokens the step trains on (per device: the batch per device x ``seq``).
      seq: the sequence length (attention's cost grows with it).
      causal_half: count attention's matmuls halved for the causal mask (what some
        conventions and FlashAttention's benchmarks do); default: in full, as computed.
    """
    c = config
    weights = layer_weights(c) + c.d_model * c.vocab
    keys = sum(_keys(c, i, seq) for i in range(c.layers))
    per_key = 2 * c.heads * (c.head_dim + c.value_dim)  # QK^T, PV per token per key, forward
    attention = 3.0 * per_key * keys * tokens * (0.5 if causal_half else 1.0)
    return StepFlops(weights=6.0 * weights * tokens, attention=attention)


def _keys(config: ArchConfig, layer: int, seq: int) -> float:
    """Keys each query of ``layer`` is counted against: the sequence for a global layer,
    the window for a local one (MaxText's Gemma 3 formula), and for a chunked one (Llama 4's
    RoPE layers past one chunk) each chunk in full, the sum of the chunks' squares over the
    sequence (MaxText's Llama 4 formula)."""
    window = config.window_of(layer)
    if window:
        return min(window, seq)
    chunk = config.attention_chunk
    if chunk and chunk < seq and config.roped(layer):
        full, rest = divmod(seq, chunk)
        return (full * chunk**2 + rest**2) / seq
    return seq
