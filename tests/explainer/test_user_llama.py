"""A user's own Llama-style step (tests/fixtures/user_llama.py) at its small size: the leaf
counts the issue gives, and explain(run=False) on it finds its collectives."""

from __future__ import annotations

import jax
import pytest

import shardviz as sv
from shardviz.render.leaf_rows import leaf_rows
from shardviz.render.report.sections import report_view
from shardviz.render.report.view import FOLD_COLLECTIVES
from shardviz.widgets.explorer.payload import report_payload
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


def test_views_fold_a_big_step(built: tuple) -> None:
    """The same code as benchmarks/report_size.py, at the small size: every repeated
    collective, reshard point and per-layer leaf folds into one row, and each folded
    collective is still reachable from its row."""
    step, state, batch = built
    report = sv.explain(step, state, batch, run=False)
    v = report_view(report)
    shown = [r for g in v.ledger.groups for r in g.ledger]
    assert len(report.collectives) > FOLD_COLLECTIVES
    assert len(shown) < len(report.collectives) / 3
    numbers = sorted(j for r in shown for j in (r.index, *r.same))
    assert numbers == list(range(1, len(report.collectives) + 1))
    assert set(v.ledger.shown_as) == set(numbers)
    assert any(" ×8 " in f"{row.label} " for row in leaf_rows(report.arguments))
    html = report._repr_html_()
    text = str(report)
    assert "more like it: #" in text and "more like it: #" in html
    assert html.count('class="sv-collective"') == len(shown)
    payload = report_payload(report)
    assert len(payload["collectives"]) == len(report.collectives)  # the Explorer keeps all
