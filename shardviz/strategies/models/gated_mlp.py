"""The gated MLP (SwiGLU, Shazeer 2020) of Llama, Mixtral's experts and Qwen: the decoder's
feed-forward block. (``shardviz.strategies.mlp`` is the course's two-layer MLP, another model.)"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from jax.ad_checkpoint import checkpoint_name

from shardviz.strategies.models.axes import Constrain, no_constraint

__all__ = ["ACTIVATIONS", "gated_mlp"]

#: Gate activations by ArchConfig.activation name.
ACTIVATIONS = {"silu": jax.nn.silu, "gelu": jax.nn.gelu}


def gated_mlp(
    p: dict[str, Any],
    x: jax.Array,
    activation: str,
    constrain: Constrain = no_constraint,
    einsum: Any = jnp.einsum,
) -> jax.Array:
    """``w_down(act(x @ w_gate) * (x @ w_up))`` for ``x: [B, S, embed]`` (``einsum``: the
    weight matmuls, :func:`.fp8.matmul`)."""
    act = ACTIVATIONS[activation]
    # Named as MaxText names them, for its remat vocabulary (:mod:`.remat`).
    gate = checkpoint_name(einsum("bsd,df->bsf", x, p["w_gate"]), "mlpwi_0")
    up = checkpoint_name(einsum("bsd,df->bsf", x, p["w_up"]), "mlpwi_1")
    hidden = constrain("mlp_hidden", act(gate) * up)
    out = checkpoint_name(einsum("bsf,fd->bsd", hidden, p["w_down"]), "mlpwo")
    return constrain("mlp_out", out)
