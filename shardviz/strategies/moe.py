"""A GShard-style mixture-of-experts MLP layer in plain jax, and a small model around it.

Tokens come in groups ``[G, S, D]`` (groups, tokens per group, d_model). A router picks the
top-k experts of each token (k = 2 in GShard); each expert takes at most ``capacity`` tokens
per group, ``ceil(top_k * capacity_factor * S / experts)``, and tokens beyond it are dropped
for that expert (their output for it is zero; the residual path still carries them). All
data movement is written as einsums over dispatch / combine tensors ``[G, S, E, C]``, so
when the groups are split over a data axis and the experts over an ``expert`` axis the
compiler turns the dispatch and the combine into all-to-alls.

Parameters (nested dicts, stable leaf paths for sharding rules)::

    proj/w        [d_model, d_model]             input projection
    moe/w_gate    [d_model, experts]             router
    moe/w_in      [experts, d_model, d_ff]       expert MLPs, first matmul
    moe/w_out     [experts, d_ff, d_model]       expert MLPs, second matmul
    head/w        [d_model, d_model]             output projection

The model regresses a fixed nonlinear function of its input; the loss adds the GShard
auxiliary load-balancing loss, weighted by ``aux_weight``.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from shardviz.strategies.transformer import (
    Batch,
    Constrain,
    Params,
    no_constraint,
    split_normal,
)

#: Activation names passed to the ``constrain`` hook, with their shapes (G groups, S tokens
#: per group, E experts, C capacity, D d_model, F d_ff).
ACTIVATIONS: dict[str, str] = {
    "embed": "[G, S, D] input projection output, the MoE layer's input",
    "router_logits": "[G, S, E] router logits",
    "dispatched": "[E, G, C, D] tokens gathered per expert: the expert inputs",
    "expert_hidden": "[E, G, C, F] expert MLP hidden activations",
    "expert_out": "[E, G, C, D] expert outputs, before the combine",
    "combined": "[G, S, D] expert outputs back in token order, gate-weighted",
    "residual": "[G, S, D] embed + combined",
}


class Routing(NamedTuple):
    """Where each token goes: both tensors are ``[G, S, E, C]``, in float32.

    ``dispatch[g, s, e, c]`` is 1 when token ``s`` of group ``g`` takes slot ``c`` of expert
    ``e``; ``combine`` is the same with the token's normalised gate weight instead of 1.
    ``aux_loss`` is GShard's load-balancing loss (1.0 when routing is uniform).
    """

    dispatch: jax.Array
    combine: jax.Array
    aux_loss: jax.Array


def expert_capacity(group_size: int, experts: int, top_k: int, capacity_factor: float) -> int:
    """Slots per expert per group: ``ceil(top_k * capacity_factor * group_size / experts)``, >= 1."""
    return max(1, math.ceil(top_k * capacity_factor * group_size / experts))


class Picks(NamedTuple):
    """Each token's chosen experts, before any capacity limit: ``experts`` (int32) and
    ``gates`` (float32) are ``[..., top_k]``, the token's first choice first; ``aux_loss`` is
    GShard's load-balancing loss over the groups of ``logits`` (1.0 when routing is uniform)."""

    experts: jax.Array
    gates: jax.Array
    aux_loss: jax.Array


def pick(
    logits: jax.Array,
    *,
    top_k: int,
    scores: str = "softmax",
    bias: jax.Array | None = None,
    scale: float = 1.0,
    normalize: bool = True,
) -> Picks:
    """Each token's top-k experts and their gates, from router logits ``[G, S, E]`` (the
    arguments as :func:`route`'s): what a dropless layer computes with. The same rounds
    (:func:`_rounds`) as :func:`route` places into slots."""
    choices, _, gates, aux_loss = _rounds(logits, top_k, scores, bias, scale, normalize)
    return Picks(jnp.stack(choices, axis=-1).astype(jnp.int32), jnp.stack(gates, axis=-1), aux_loss)


def _rounds(
    logits: jax.Array,
    top_k: int,
    scores: str,
    bias: jax.Array | None,
    scale: float,
    normalize: bool,
) -> tuple[list[jax.Array], list[jax.Array], list[jax.Array], jax.Array]:
    """The top-k choice round by round: each round's expert ``[G, S]``, its one-hot mask
    ``[G, S, E]`` and its gate ``[G, S]``, and the load-balancing loss. :func:`route` places
    the masks as they are (the program the partitioner sees is the one it always saw:
    through stacked choices it turned the expert-parallel dispatch's all-to-all into other
    collectives)."""
    logits = logits.astype(jnp.float32)
    sigmoid = scores == "sigmoid"
    probs = jax.nn.sigmoid(logits) if sigmoid else jax.nn.softmax(logits, axis=-1)
    experts = probs.shape[-1]
    remaining = probs if bias is None else probs + bias.astype(jnp.float32)
    choices, masks, gates = [], [], []
    for _ in range(top_k):
        choice = jnp.argmax(remaining, axis=-1)
        mask = jax.nn.one_hot(choice, experts, dtype=jnp.float32)  # [G, S, E]
        choices.append(choice)
        masks.append(mask)
        gates.append(jnp.sum(probs * mask, axis=-1))  # [G, S]
        remaining = jnp.where(mask > 0, -jnp.inf, remaining)
    total = sum(gates)
    if normalize:
        gates = [g / jnp.maximum(total, jnp.finfo(jnp.float32).tiny) for g in gates]
    gates = [scale * g for g in gates] if scale != 1.0 else gates

    # GShard's auxiliary loss: fraction of first choices per expert times mean router prob
    # (sigmoid scores normalised over the experts first, as DeepSeek-V3's balance loss).
    density = jnp.mean(masks[0], axis=1)  # [G, E]
    if sigmoid:
        probs = probs / jnp.sum(probs, axis=-1, keepdims=True)
    density_proxy = jnp.mean(probs, axis=1)  # [G, E]
    aux_loss = jnp.mean(density * density_proxy) * experts**2
    return choices, masks, gates, aux_loss


def route(
    logits: jax.Array,
    *,
    top_k: int,
    capacity: int,
    scores: str = "softmax",
    bias: jax.Array | None = None,
    scale: float = 1.0,
    normalize: bool = True,
) -> Routing:
    """Top-k routing with a capacity limit, GShard style.

    Every token's first choice is placed before any token's second choice; within one round
    tokens fill an expert's slots in order, and a token that finds the expert full is dropped
    for that expert. Gates of the chosen experts are normalised to sum to 1 per token.

    Args:
      logits: router logits ``[G, S, E]``.
      top_k: experts per token (GShard: 2).
      capacity: slots per expert per group.
      scores: ``"softmax"`` over the experts, or ``"sigmoid"`` of each logit (DeepSeek-V3).
      bias: ``[E]`` added to the scores to choose the experts, not to weight them
        (DeepSeek-V3's load-balancing bias), or ``None``.
      scale: the gates multiplied by this (DeepSeek-V3: 2.5).
      normalize: the chosen gates renormalised to sum to 1 (DeepSeek-V2 keeps the softmax's
        own scores of its picks).

    Returns:
      A :class:`Routing`.
    """
    _, masks, gates, aux_loss = _rounds(logits, top_k, scores, bias, scale, normalize)
    filled = jnp.zeros_like(masks[0][:, :1, :])  # [G, 1, E] slots taken by earlier rounds
    dispatch = jnp.zeros((*logits.shape, capacity), jnp.float32)
    combine = jnp.zeros_like(dispatch)
    for mask, gate in zip(masks, gates, strict=True):
        position = jnp.cumsum(mask, axis=1) - 1 + filled  # [G, S, E] slot each token would take
        mask = mask * (position < capacity)
        filled = filled + jnp.sum(mask, axis=1, keepdims=True)
        slot = jnp.sum(position * mask, axis=-1).astype(jnp.int32)  # [G, S]
        placed = mask[..., None] * jax.nn.one_hot(slot, capacity, dtype=jnp.float32)[:, :, None]
        dispatch = dispatch + placed
        combine = combine + gate[..., None, None] * placed
    return Routing(dispatch, combine, aux_loss)


def init_params(
    key: jax.Array, *, d_model: int, d_ff: int, experts: int, dtype: Any = jnp.float32
) -> Params:
    """Random weights scaled by 1/sqrt(fan-in); the tree in the module docstring."""
    shapes = [
        (d_model, d_model),
        (d_model, experts),
        (experts, d_model, d_ff),
        (experts, d_ff, d_model),
        (d_model, d_model),
    ]
    fan_in = [d_model, d_model, d_model, d_ff, d_model]
    proj, gate, w_in, w_out, head = (
        (z / jnp.sqrt(f)).astype(dtype)
        for z, f in zip(split_normal(key, shapes), fan_in, strict=True)
    )
    return {
        "proj": {"w": proj},
        "moe": {"w_gate": gate, "w_in": w_in, "w_out": w_out},
        "head": {"w": head},
    }


def make_batch(
    key: jax.Array, *, batch: int, seq: int, d_model: int, dtype: Any = jnp.float32
) -> Batch:
    """Random inputs ``x: [batch, seq, d_model]`` and the target ``y = sin(2 x)``."""
    x = jax.random.normal(key, (batch, seq, d_model), dtype)
    return {"x": x, "y": jnp.sin(2.0 * x)}


def moe_layer(
    p: Params,
    x: jax.Array,
    *,
    top_k: int,
    capacity_factor: float,
    constrain: Constrain = no_constraint,
) -> tuple[jax.Array, jax.Array]:
    """The MoE MLP on grouped tokens ``x: [G, S, D]``: returns ``([G, S, D], aux_loss)``."""
    experts = p["w_gate"].shape[-1]
    capacity = expert_capacity(x.shape[1], experts, top_k, capacity_factor)
    logits = constrain("router_logits", jnp.einsum("gsd,de->gse", x, p["w_gate"]))
    routing = route(logits, top_k=top_k, capacity=capacity)
    dispatch = routing.dispatch.astype(x.dtype)
    dispatched = constrain("dispatched", jnp.einsum("gsec,gsd->egcd", dispatch, x))
    hidden = jax.nn.gelu(jnp.einsum("egcd,edf->egcf", dispatched, p["w_in"]))
    hidden = constrain("expert_hidden", hidden)
    out = constrain("expert_out", jnp.einsum("egcf,efd->egcd", hidden, p["w_out"]))
    combine = routing.combine.astype(x.dtype)
    return constrain("combined", jnp.einsum("gsec,egcd->gsd", combine, out)), routing.aux_loss


def forward(
    params: Params,
    x: jax.Array,
    *,
    top_k: int,
    capacity_factor: float,
    group_size: int,
    constrain: Constrain = no_constraint,
) -> tuple[jax.Array, jax.Array]:
    """``x: [B, T, D]`` -> ``(prediction [B, T, D], aux_loss)``; tokens are grouped by ``group_size``."""
    b, t, d = x.shape
    groups = x.reshape(b * t // group_size, group_size, d)
    h = constrain("embed", groups @ params["proj"]["w"])
    moe_out, aux = moe_layer(
        params["moe"], h, top_k=top_k, capacity_factor=capacity_factor, constrain=constrain
    )
    h = constrain("residual", h + moe_out)
    return (h @ params["head"]["w"]).reshape(b, t, d), aux


def loss_fn(
    params: Params,
    batch: Batch,
    *,
    top_k: int = 2,
    capacity_factor: float = 1.25,
    group_size: int | None = None,
    aux_weight: float = 0.01,
    constrain: Constrain = no_constraint,
) -> jax.Array:
    """Mean squared error plus ``aux_weight`` times the load-balancing loss.

    ``group_size`` defaults to the sequence length (one group per sequence).
    """
    x = batch["x"]
    pred, aux = forward(
        params,
        x,
        top_k=top_k,
        capacity_factor=capacity_factor,
        group_size=group_size or x.shape[1],
        constrain=constrain,
    )
    mse = jnp.mean((pred.astype(jnp.float32) - batch["y"].astype(jnp.float32)) ** 2)
    return mse + aux_weight * aux
