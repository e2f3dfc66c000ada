"""How long a decode or prefill step takes on a chip: flops counted from the dims, the rest
from bytes, with the chip's published figures (no jax).

Decode (the scaling book's applied-inference formula): the cache is read once per step and
is always bandwidth-bound; the weights' matmuls take the longer of reading the weights and
computing them: ``kv / bw + max(weights / bw, flops / peak)``. Prefill is compute: the larger
of ``flops / peak`` and the bytes it reads and writes over the bandwidth. Either way, a step
whose collectives take longer than that is set by them (``max``: they may overlap).
"""

from __future__ import annotations

from dataclasses import dataclass

from shardviz.model.hardware import Hardware
from shardviz.strategies.models.configs import ArchConfig, param_count

__all__ = ["StepTime", "step_flops", "step_time"]


def _matmul_params(config: ArchConfig) -> int:
    """Parameters that take part in a matmul per token: all but the embedding (a gather;
    with tied embeddings it is the output head too) and the norm scales; of a mixture of
    experts, the router and the ``experts_per_token`` experts a token goes to (its active
    parameters, as the field counts model flops)."""
    c = config
    norms = c.layers * 2 * c.d_model + c.d_model
    embed = 0 if c.tied_embeddings else c.vocab * c.d_model
    idle = (c.experts - c.experts_per_token) * 3 * c.d_model * c.ffn * c.layers
    return param_count(c) - norms - embed - idle


def step_flops(config: ArchConfig, mode: str, batch: int, context: int) -> float:
    """Flops of one step, whole model (all devices together).

    Decode: ``2 x matmul params x batch`` (a mixture of experts' active ones) plus attention's two matmuls over the context,
    ``4 x batch x context x heads x head_dim x layers``. Prefill: the same for every one of
    the ``context`` prompt tokens, attention over every block (the blockwise program
    computes masked blocks too): ``2 x P x B x S + 4 x B x S^2 x H x K x L``.
    """
    c = config
    attention = 4.0 * batch * context * c.heads * c.head_dim * c.layers
    if mode == "decode":
        return 2.0 * _matmul_params(c) * batch + attention
    return 2.0 * _matmul_params(c) * batch * context + attention * context


@dataclass(frozen=True)
class StepTime:
    """The estimate's terms (seconds) and which one sets the step."""

    memory_seconds: float
    compute_seconds: float
    collective_seconds: float
    step_seconds: float
    bound: str


def step_time(
    mode: str,
    hw: Hardware,
    weight_bytes: int,
    kv_bytes: int,
    flops_per_device: float,
    collective_seconds: float,
) -> StepTime:
    """The step on ``hw`` for one device's bytes and flops (see the module doc);
    ``weight_bytes``: the weights the step reads (a mixture of experts': only the experts
    its tokens touch, :mod:`.experts`)."""
    bw, peak = hw.hbm_bandwidth, hw.peak_flops_bf16
    memory = (weight_bytes + kv_bytes) / bw
    compute = flops_per_device / peak
    if mode == "decode":
        on_chip = kv_bytes / bw + max(weight_bytes / bw, compute)
        bound = "compute" if compute > weight_bytes / bw else "memory"
    else:
        on_chip = max(compute, memory)
        bound = "compute" if compute >= memory else "memory"
    if collective_seconds > on_chip:
        return StepTime(memory, compute, collective_seconds, collective_seconds, "collectives")
    return StepTime(memory, compute, collective_seconds, on_chip, bound)
