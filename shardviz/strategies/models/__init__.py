"""Published decoder-only LLM architectures, written as production training code is.

- :mod:`.configs`: :class:`ArchConfig`, the published dims (:data:`CONFIGS`) and the exact
  :func:`param_count` (no jax);
- :mod:`.params`, :mod:`.decoder` (and :mod:`.attention`, :mod:`.attention_pallas`,
  :mod:`.rope`, :mod:`.norm`, :mod:`.gated_mlp`, :mod:`.experts`, :mod:`.loss`): the model as a
  jax function over stacked parameters, scanned, rematerialised, bf16 over float32 master
  weights, attention as Pallas kernels on TPU;
- :mod:`.axes`: every dim's logical name; the strategies as logical axis rules
  (:data:`STRATEGY_RULES`) live with the other rule sets, in
  :mod:`shardviz.strategies.rules.logical`, and are exported here too;
- :mod:`.build`: :func:`decoder_model`, a published architecture with reduced sizes or other
  options, which ``get_model(name, ...)`` wraps in a ``ModelDef``.

Names are loaded on first use, so ``configs`` can be imported without jax.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "ARCH_NAMES": "configs",
    "CONFIGS": "configs",
    "ArchConfig": "configs",
    "Llama3RopeScaling": "configs",
    "get_config": "configs",
    "param_count": "configs",
    "ACTIVATION_AXES": "axes",
    "LOGICAL_AXES": "axes",
    "SpecConstrain": "axes",
    "per_shard": "axes",
    "ATTENTION_KINDS": "decoder",
    "REMAT_POLICIES": "decoder",
    "REMAT_TENSORS": "remat",
    "custom_remat": "remat",
    "DecoderOptions": "decoder",
    "decoder_loss": "decoder",
    "blockwise_attention": "attention",
    "naive_attention": "attention",
    "pallas_attention": "attention_pallas",
    "init_params": "params",
    "param_axes": "params",
    "param_table": "params",
    "DecoderModel": "build",
    "decoder_model": "build",
    "default_overrides": "build",
    "LOGICAL_STRATEGIES": "shardviz.strategies.rules.logical",
    "STRATEGY_RULES": "shardviz.strategies.rules.logical",
    "LogicalRules": "shardviz.strategies.rules.logical",
    "activation_constrainer": "shardviz.strategies.rules.logical",
    "batch_specs": "shardviz.strategies.rules.logical",
    "get_logical_rules": "shardviz.strategies.rules.logical",
    "logical_rule_set": "shardviz.strategies.rules.logical",
    "logical_to_spec": "shardviz.strategies.rules.logical",
    "make_mesh": "shardviz.strategies.rules.logical",
    "param_shardings": "shardviz.strategies.rules.logical",
    "param_specs": "shardviz.strategies.rules.logical",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'shardviz.strategies.models' has no attribute {name!r}")
    path = module if module.startswith("shardviz.") else f"{__name__}.{module}"
    value = getattr(importlib.import_module(path), name)
    globals()[name] = value
    return value
