"""Parallelism strategies as sharding rules over real models, the model zoo, and ZeRO's
memory accounting projected to any scale."""

from shardviz.strategies.accounting import ProjectionRow as ProjectionRow
from shardviz.strategies.accounting import StateBytes as StateBytes
from shardviz.strategies.accounting import count_params as count_params
from shardviz.strategies.accounting import model_state_bytes as model_state_bytes
from shardviz.strategies.accounting import projection_table as projection_table

__all__ = [
    "BUILTIN",
    "ARCH_NAMES",
    "MODEL_NAMES",
    "STRATEGY_NAMES",
    "ModelDef",
    "ProjectionRow",
    "RuleSet",
    "StateBytes",
    "StrategyStep",
    "compare",
    "count_params",
    "default_sizes",
    "get_model",
    "get_rule_set",
    "init_train_state",
    "make_train_step",
    "model_state_bytes",
    "projection_table",
    "run_strategy",
    "shard_largest",
    "strategy_step",
]

_LAZY = {
    "BUILTIN": "shardviz.strategies.rules",
    "STRATEGY_NAMES": "shardviz.strategies.rules",
    "RuleSet": "shardviz.strategies.rules",
    "get_rule_set": "shardviz.strategies.rules.named",
    "shard_largest": "shardviz.strategies.rules",
    "ARCH_NAMES": "shardviz.strategies.zoo",
    "MODEL_NAMES": "shardviz.strategies.zoo",
    "ModelDef": "shardviz.strategies.zoo",
    "default_sizes": "shardviz.strategies.zoo",
    "get_model": "shardviz.strategies.zoo",
    "init_train_state": "shardviz.strategies.zoo",
    "make_train_step": "shardviz.strategies.zoo",
    "compare": "shardviz.strategies.runner",
    "run_strategy": "shardviz.strategies.runner",
    "StrategyStep": "shardviz.strategies.step",
    "strategy_step": "shardviz.strategies.step",
}


def __getattr__(name: str):
    import importlib

    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'shardviz.strategies' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
