"""The logical axes: one name for every dim of every parameter and activation.

Sharding is written against these names, never against positions (MaxText's and Flax's
``logical_axis_rules``): a strategy maps each name to mesh axes
(:mod:`shardviz.strategies.models.logical`), and the model names each activation it pins.

The activations the decoder passes to its ``constrain(name, array)`` hook, with their
logical axes, are :data:`ACTIVATION_AXES`; the parameters' axes are in
:mod:`shardviz.strategies.models.params`.
"""

from __future__ import annotations

from collections.abc import Callable

import jax

__all__ = ["ACTIVATION_AXES", "LOGICAL_AXES", "Constrain", "no_constraint"]

#: Every logical axis name, with what the dim is.
LOGICAL_AXES: dict[str, str] = {
    "batch": "sequences of the batch (or token groups of an MoE layer)",
    "sequence": "positions within a sequence (or tokens within an MoE group)",
    "embed": "the model width, d_model",
    "mlp": "the MLP's hidden width (each expert's, in an MoE layer)",
    "heads": "query heads",
    "kv_heads": "key/value heads (fewer than query heads under GQA)",
    "head_dim": "each head's width; attention contracts it, so it stays whole",
    "vocab": "the vocabulary (embedding rows, output logits)",
    "expert": "the experts of an MoE layer",
    "layers": "the stacked decoder layers (the dim the layer scan runs over)",
    "expert_group": "token groups in tensors that also have an expert dim (MaxText's "
    "activation_batch_no_exp): apart from 'batch' so 'expert' can split both",
    "capacity": "an expert's slots for tokens in one group",
}

#: Activation name -> its logical axes. The decoder calls ``constrain(name, x)`` on each.
ACTIVATION_AXES: dict[str, tuple[str, ...]] = {
    "embedded": ("batch", "sequence", "embed"),
    "attn_in": ("batch", "sequence", "embed"),
    "query": ("batch", "sequence", "heads", "head_dim"),
    "key": ("batch", "sequence", "kv_heads", "head_dim"),
    "value": ("batch", "sequence", "kv_heads", "head_dim"),
    "attn_heads": ("batch", "sequence", "heads", "head_dim"),
    "attn_out": ("batch", "sequence", "embed"),
    "residual": ("batch", "sequence", "embed"),
    "mlp_in": ("batch", "sequence", "embed"),
    "mlp_hidden": ("batch", "sequence", "mlp"),
    "mlp_out": ("batch", "sequence", "embed"),
    "moe_in": ("batch", "sequence", "embed"),
    "dispatched": ("expert", "expert_group", "capacity", "embed"),
    "expert_hidden": ("expert", "expert_group", "capacity", "mlp"),
    "expert_out": ("expert", "expert_group", "capacity", "embed"),
    "final": ("batch", "sequence", "embed"),
    "logits": ("batch", "sequence", "vocab"),
}

Constrain = Callable[[str, jax.Array], jax.Array]


def no_constraint(name: str, x: jax.Array) -> jax.Array:
    """The default hook: ``x`` unchanged."""
    del name
    return x
