"""Mistakes in the calls themselves: each a ShardvizError naming the argument and the fix,
never a raw TypeError or a misleading 'running it failed'."""

from __future__ import annotations

import jax.numpy as jnp
import pytest

import shardviz as sv
from shardviz.errors import ShardvizError


def f(a):
    return a * 2


X = jnp.ones((8, 4))


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"steps": "5"}, "steps='5' is not a whole number"),
        ({"steps": 2.5}, "steps=2.5 is not a whole number"),
        ({"steps": 0}, "steps=0 is not a whole number"),
        ({"steps": True}, "steps=True is not a whole number"),
        ({"kwargs": [1, 2]}, "kwargs=\\[1, 2\\] is not a dict"),
        ({"kwargs": {1: 2}}, "is not a dict of keyword arguments"),
    ],
)
def test_explain_refuses_options_it_cannot_use(options, words) -> None:
    with pytest.raises(ShardvizError, match=words) as err:
        sv.explain(f, X, **options)
    assert "Fix:" in str(err.value)


def test_explain_of_something_that_is_not_a_function() -> None:
    with pytest.raises(ShardvizError, match="is not a function"):
        sv.explain(42, X)


def test_diagnose_of_something_that_is_neither_a_report_nor_a_function() -> None:
    with pytest.raises(ShardvizError, match="neither a report nor a function"):
        sv.diagnose(42)


@pytest.mark.parametrize("strategies", [[], (), "dp"])
def test_compare_needs_a_list_of_strategies(strategies) -> None:
    with pytest.raises(ShardvizError, match="is not a list of strategies"):
        sv.compare("mlp", strategies)
