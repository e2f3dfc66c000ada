"""The gated MLP of Llama, Mixtral's experts and Qwen: SwiGLU (Shazeer, 2020)."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from shardviz.strategies.models.axes import Constrain, no_constraint

__all__ = ["ACTIVATIONS", "gated_mlp"]

#: Gate activations by ArchConfig.activation name.
ACTIVATIONS = {"silu": jax.nn.silu, "gelu": jax.nn.gelu}


def gated_mlp(
    p: dict[str, Any], x: jax.Array, activation: str, constrain: Constrain = no_constraint
) -> jax.Array:
    """``w_down(act(x @ w_gate) * (x @ w_up))`` for ``x: [B, S, embed]``."""
    act = ACTIVATIONS[activation]
    gate = jnp.einsum("bsd,df->bsf", x, p["w_gate"])
    up = jnp.einsum("bsd,df->bsf", x, p["w_up"])
    hidden = constrain("mlp_hidden", act(gate) * up)
    return constrain("mlp_out", jnp.einsum("bsf,fd->bsd", hidden, p["w_down"]))
