"""A mixture of experts' weights in one serving step: the experts a batch touches, and the
bytes a kernel that skips idle experts reads (no jax).

With ``E`` experts, ``k`` per token and routing uniform and independent across tokens, a
token misses a given expert with probability ``1 - k/E``; ``T`` tokens all miss it with
``(1 - k/E)^T``, so they touch ``E x (1 - (1 - k/E)^T)`` distinct experts per layer on
average. Decoding a batch of 8 on Mixtral (top-2 of 8): ``8 x (1 - 0.75^8) = 7.2``, nearly
every expert; a batch of 1 touches 2. Prefill's thousands of tokens touch all of them.

The compiled step (capacity einsums, :mod:`.steps`) reads every expert's weights whatever
the routing; a serving kernel (grouped matmuls, megablox) reads only the experts with tokens,
and that is what the step's estimate counts.
"""

from __future__ import annotations

from shardviz.model.serving import ExpertReads
from shardviz.strategies.models.configs import ArchConfig

__all__ = ["expert_reads", "touched"]


def touched(experts: int, per_token: int, tokens: int) -> float:
    """Expected distinct experts ``tokens`` tokens touch: ``E x (1 - (1 - k/E)^T)``."""
    return experts * (1.0 - (1.0 - per_token / experts) ** tokens)


def expert_reads(
    config: ArchConfig,
    mode: str,
    batch: int,
    context: int,
    *,
    held_bytes: int,
    bytes_per_expert: int,
    expert_ways: int,
    data: int,
    experts_over_data: bool,
) -> ExpertReads:
    """The experts ``config`` touches per step and the bytes one device reads of them.

    Args:
      mode: ``"decode"`` (``batch`` tokens) or ``"prefill"`` (``batch x context``).
      held_bytes: expert weights on one device (all layers), from their shard shapes.
      bytes_per_expert: one expert's weights in one layer, whole.
      expert_ways: devices the experts are split over (each holds ``E / expert_ways``).
      data: the data axis the batch is split over.
      experts_over_data: the experts split over ``data`` (``ep``): each sees every token of
        the step; otherwise each data shard's copy sees its shard's tokens.
    """
    e, k = config.experts, config.experts_per_token
    tokens = batch if mode == "decode" else batch * context
    seen = tokens if experts_over_data else tokens // data
    share = touched(e, k, seen) / e  # the chance one expert is touched
    return ExpertReads(
        experts=e,
        experts_per_token=k,
        tokens=tokens,
        touched=touched(e, k, tokens),
        layers=config.layers,
        bytes_per_expert=bytes_per_expert,
        experts_per_device=e // expert_ways,
        tokens_per_expert=seen,
        touched_per_device=e // expert_ways * share,
        held_bytes=held_bytes,
        read_bytes=round(held_bytes * share),
    )
