"""A strategy by name: the built-in rule sets and the pipeline's, one lookup for both."""

from __future__ import annotations

from typing import Any

from shardviz.errors import ShardvizError, problem
from shardviz.strategies.rules import (
    BUILTIN,
    OFFLOAD,
    OFFLOAD_NAMES,
    PIPELINE_NAMES,
    STRATEGY_NAMES,
    RuleSet,
)
from shardviz.strategies.rules.pipeline import pipeline_rules


def get_rule_set(strategy: str | RuleSet, **pipeline: Any) -> RuleSet:
    """A built-in strategy by name, or the user's own rule set as it is. ``"pp"`` and
    ``"pp+dp"`` take the pipeline's ``stages`` and ``microbatches``; the offload strategies
    (``"zero-offload"``, ``"act-offload"``, ``"weight-stream"``) are looked up here too."""
    if isinstance(strategy, RuleSet):
        return strategy
    if strategy in PIPELINE_NAMES:
        return pipeline_rules(strategy, **pipeline)
    if strategy in OFFLOAD:
        return OFFLOAD[strategy]
    if strategy not in BUILTIN:
        raise ShardvizError(
            problem(
                f"strategy {strategy!r}",
                "no built-in strategy has this name",
                f"use one of {', '.join(map(repr, STRATEGY_NAMES + OFFLOAD_NAMES))}, or pass "
                "a RuleSet",
            )
        )
    return BUILTIN[strategy]
