"""A user's own Llama-style step (tests/fixtures/user_llama.py) at its small size: the leaf
counts the issue gives, and explain(run=False) on it finds its collectives."""

from __future__ import annotations

import jax
import pytest

import shardviz as sv
from tests.fixtures import user_llama


@pytest.fixture(scope="module")
def built() -> tuple:
    return user_llama.make(user_llama.SMALL)


def test_leaf_counts(built: tuple) -> None:
    _, state, _ = built
    assert len(jax.tree.leaves(state["params"])) == 91
    assert len(jax.tree.leaves(state)) == 274
    assert len(state["params"]["layers"]) == 8
    assert all(len(layer) == 11 for layer in state["params"]["layers"])


def test_state_is_placed_fsdp_x_tp(built: tuple) -> None:
    _, state, batch = built
    params, (adam, _) = state["params"], state["opt"]
    layer = params["layers"][0]
    assert layer["wq"].sharding.spec == jax.sharding.PartitionSpec("data", "model")
    assert layer["wo"].sharding.spec == jax.sharding.PartitionSpec("model", "data")
    assert layer["attn_norm"].sharding.spec == jax.sharding.PartitionSpec()
    assert adam.mu["layers"][0]["wq"].sharding == layer["wq"].sharding
    assert batch["tokens"].sharding.spec == jax.sharding.PartitionSpec("data", None)


def test_explain_small(built: tuple) -> None:
    step, state, batch = built
    report = sv.explain(step, state, batch, run=False)
    assert len(report.arguments) == 274 + 2  # the state and the batch's tokens and targets
    assert report.collectives
    assert report.memory.alias_bytes > 0  # donate_argnums=0 is kept
