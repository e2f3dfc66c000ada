"""Reduced sizes of the published architectures: the same structure, compiled in seconds."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax

#: A 2-layer model with GQA (8 query heads over 4 kv heads), every dim divisible by 8, in
#: float32 compute so sharded and single-device runs agree closely.
SMALL: dict[str, Any] = {
    "layers": 2,
    "d_model": 64,
    "heads": 8,
    "kv_heads": 4,
    "head_dim": 16,
    "ffn": 128,
    "vocab": 256,
    "seq": 64,
    "batch": 8,
    "attention_block": 16,
    "loss_chunk": 32,
    "compute_dtype": "float32",
}

#: The vision encoder Llama 4's published totals include and shardviz does not plan, counted
#: by hand from MaxText's llama4 configs: 34 ViT layers of width 1408 and MLP 5632 (q, k, v, o
#: and two MLP matrices; biases, norms and the projector left out).
VISION = 34 * (4 * 1408 * 1408 + 2 * 1408 * 5632)

#: Mixtral reduced: 4 experts, top-2, routing groups of 32 tokens, no token dropped.
SMALL_MOE: dict[str, Any] = {**SMALL, "experts": 4, "moe_group": 32, "capacity_factor": 2.0}


def small(name: str, **changes: Any) -> dict[str, Any]:
    """The reduced sizes for architecture ``name`` (a mixture of experts keeps its top-k,
    at most 2 of 4 experts; local and global layers keep their pattern, with a window of a
    quarter of the sequence; latent attention keeps its latents, narrower, and a dense first
    layer), with ``changes``."""
    from shardviz.strategies.models.configs import get_config

    config = get_config(name)
    if config.latent:  # MLA: query/key heads of 16 + 8 RoPE dims, values of 16; 1 dense layer
        mla = {"kv_heads": SMALL["heads"], "head_dim": 24, "rope_head_dim": 8,
               "v_head_dim": 16, "q_lora_rank": 32, "kv_lora_rank": 16, "layers": 3,
               "dense_layers": 1, "dense_ffn": 128, "ffn": 32}  # fmt: skip
        return {**SMALL_MOE, "experts_per_token": 2, **mla, **changes}
    if config.nope_every:  # Llama 4: two blocks of 4 (3 RoPE, 1 NoPE; Maverick's MoE every other)
        dense = {"dense_ffn": 128} if config.moe_every > 1 else {}
        return {**SMALL_MOE, "layers": 8, "experts_per_token": 1, **dense, **changes}
    if config.windowed:  # a block of 6 layers (5 local, 1 global) and 2 local ones after it
        return {**SMALL, "layers": 8, "sliding_window": 16, **changes}
    if not config.is_moe:
        return {**SMALL, **changes}
    return {**SMALL_MOE, "experts_per_token": min(2, config.experts_per_token), **changes}


def compiled(fn: Callable, *args: Any, **jit_kwargs: Any) -> Callable:
    """``jax.jit(fn, **jit_kwargs)`` compiled for ``args`` with XLA's backend optimisation off:
    the same numbers, half the compile time of these scanned models on two CPU cores."""
    lowered = jax.jit(fn, **jit_kwargs).lower(*args)
    return lowered.compile(compiler_options={"xla_backend_optimization_level": 0})


def step_cost(name: str, **changes: Any) -> tuple[Any, Any, Any]:
    """A reduced ``name``'s training step (``value_and_grad``, as a train step: with ``grad``
    alone XLA drops the forward's logits, which only the loss needs) explained without
    running: ``(cost, report, model)``; ``changes`` as :func:`small` takes them."""
    import shardviz as sv
    from shardviz.strategies.zoo import get_model

    model = get_model(name, **small(name, **changes))
    params = jax.eval_shape(model.init_params, jax.random.key(0))
    batch = jax.eval_shape(model.make_batch, jax.random.key(1))
    report = sv.explain(jax.value_and_grad(model.loss), params, batch, run=False, diagnose=False)
    assert report.cost is not None
    return report.cost, report, model


def formula(model: Any) -> float:
    """MaxText's model flops of ``model``'s step over one sequence (tests explain one a
    device)."""
    from shardviz.strategies.models.flops import training_flops

    seq = model.info["seq"]
    return training_flops(model.info["config"], tokens=seq, seq=seq).total
