"""The sparse MoE layer (Mixtral's, Qwen3's, DeepSeek-V3's): top-k routing over SwiGLU
experts, as capacity-based einsums or dropless (:mod:`.dropless`), with shared experts where
the model has them.

Tokens are cut into groups of ``group`` consecutive positions; the router's softmax picks each
token's top-k experts, with the chosen gates renormalised to sum to 1 (Mixtral's softmax over
the top-k logits is the same thing). Each expert takes at most ``capacity =
ceil(k * capacity_factor * group / experts)`` tokens per group (GShard; routing from
:func:`shardviz.strategies.moe.route`), and the data movement is einsums over dispatch and
combine tensors ``[G, group, E, C]``, so with experts split over an ``expert`` mesh axis the
compiler turns them into all-to-alls. Mixtral itself is dropless; ``capacity_factor >=
experts / k`` drops nothing. The load-balancing loss is returned for the caller to weight.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from jax.ad_checkpoint import checkpoint_name

from shardviz.capture.hlo.matmuls import DISPATCH_MARK
from shardviz.strategies.models.axes import Constrain, no_constraint
from shardviz.strategies.models.dropless import dropless_experts
from shardviz.strategies.models.gated_mlp import ACTIVATIONS, gated_mlp
from shardviz.strategies.moe import expert_capacity, pick, route

__all__ = ["moe_mlp"]


def moe_mlp(
    p: dict[str, Any],
    x: jax.Array,
    *,
    top_k: int,
    capacity_factor: float,
    group: int,
    activation: str,
    constrain: Constrain = no_constraint,
    einsum: Any = jnp.einsum,
    scores: str = "softmax",
    scale: float = 1.0,
    normalize: bool = True,
    dropless: bool = False,
    quantization: str = "",
) -> tuple[jax.Array, jax.Array]:
    """``x: [B, S, embed]`` -> (``[B, S, embed]``, load-balancing loss); ``group`` divides S.
    ``einsum``: the experts' weight matmuls (:func:`.fp8.matmul`); ``scores``, ``scale``,
    ``normalize`` and the parameters' ``router_bias``: how the router picks and weights
    (:func:`shardviz.strategies.moe.route`). ``dropless``: every pick computed, no capacity
    (:func:`.dropless.dropless_experts`, its grouped matmuls in ``quantization``;
    ``capacity_factor`` is then unused).
    With ``p["shared"]`` (DeepSeek-V3's shared experts, one gated MLP) every token also goes
    through it, added to the routed experts' output."""
    b, s, d = x.shape
    experts = p["router"].shape[-1]
    xg = constrain("moe_in", x.reshape(b * s // group, group, d))  # [G, group, D]
    logits = jnp.einsum("gsd,de->gse", xg, p["router"], preferred_element_type=jnp.float32)
    if dropless:
        picks = pick(
            logits, top_k=top_k, scores=scores, bias=p.get("router_bias"), scale=scale,
            normalize=normalize,
        )  # fmt: skip
        y = dropless_experts(
            p, x, picks.experts.reshape(b, s, top_k), picks.gates.reshape(b, s, top_k),
            activation=activation, constrain=constrain, quantization=quantization,
        )  # fmt: skip
        return _with_shared(p, x, y, activation, constrain, einsum), picks.aux_loss
    capacity = expert_capacity(group, experts, top_k, capacity_factor)
    routing = route(
        logits, top_k=top_k, capacity=capacity, scores=scores, bias=p.get("router_bias"),
        scale=scale, normalize=normalize,
    )  # fmt: skip
    # The one-hot dispatch and combine einsums move tokens to and from their experts' slots:
    # the flop count recognises them from their one-hot operands (capture/hlo/routing.py) as
    # data movement, not the model's math; the scope only names them in the op list.
    with jax.named_scope(DISPATCH_MARK):
        dispatched = jnp.einsum("gsec,gsd->egcd", routing.dispatch.astype(x.dtype), xg)
    dispatched = constrain("dispatched", constrain("expert_slots", dispatched))
    act = ACTIVATIONS[activation]
    gate = checkpoint_name(einsum("egcd,edf->egcf", dispatched, p["w_gate"]), "mlpwi_0")
    up = checkpoint_name(einsum("egcd,edf->egcf", dispatched, p["w_up"]), "mlpwi_1")
    hidden = constrain("expert_hidden", act(gate) * up)
    out = constrain(
        "expert_out", checkpoint_name(einsum("egcf,efd->egcd", hidden, p["w_down"]), "mlpwo")
    )
    out = constrain("expert_slots", out)
    with jax.named_scope(DISPATCH_MARK):
        combined = jnp.einsum("gsec,egcd->gsd", routing.combine.astype(x.dtype), out)
    combined = combined.reshape(b, s, d)
    return _with_shared(p, x, combined, activation, constrain, einsum), routing.aux_loss


def _with_shared(
    p: dict[str, Any], x: jax.Array, y: jax.Array, activation: str, constrain: Constrain,
    einsum: Any,
) -> jax.Array:  # fmt: skip
    """The routed experts' output ``y``, plus the shared experts' (if any) on ``x``."""
    if "shared" in p:
        y = y + gated_mlp(p["shared"], x, activation, constrain, einsum)
    return constrain("mlp_out", y)
