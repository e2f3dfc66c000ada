"""What both pipelines share: the stage axis, the layers stacked per stage, and one stage's work."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from shardviz.strategies.transformer import Params, decoder_layer

#: The mesh axis the stage dim is split over.
STAGE_AXIS = "stage"


def stack_layers(layers: list[Params], stages: int) -> Params:
    """The layers' parameters as one tree of ``[stages, layers // stages, ...]`` arrays.

    Raises:
        ValueError: the layers do not split evenly over the stages.
    """
    if stages < 1 or len(layers) % stages:
        raise ValueError(
            f"{len(layers)} layers cannot be split evenly over {stages} pipeline stages: "
            "give a number of stages that divides the number of layers"
        )
    per = len(layers) // stages
    stacked = jax.tree.map(lambda *xs: jnp.stack(xs), *layers)
    return jax.tree.map(lambda a: a.reshape((stages, per, *a.shape[1:])), stacked)


def stage_forward(layers: Params, h: jax.Array) -> jax.Array:
    """One stage: its layers in order (a scan over its ``layers // stages`` of them)."""

    def one(h: jax.Array, layer: Params) -> tuple[jax.Array, None]:
        return decoder_layer(layer, h), None

    h, _ = jax.lax.scan(one, h, layers)
    return h
