"""``sv.compare`` on a published architecture: its strategies are its logical axis rules,
``batch_per_device`` sets the global batch from the devices, and at reduced sizes every
strategy runs for real on the 8 CPU devices and is checked against one device."""

from __future__ import annotations

import pytest

import shardviz as sv
from shardviz.errors import ShardvizError

from .small import small


@pytest.fixture(scope="module")
def comparison() -> sv.Comparison:
    sizes = {k: v for k, v in small("llama3.1-8b").items() if k != "batch"}
    return sv.compare("llama3.1-8b", ["fsdp", "fsdp+tp"], batch_per_device=1, steps=1, **sizes)


def test_each_strategy_is_its_logical_rules_and_matches_one_device(comparison) -> None:
    assert [r.strategy for r in comparison.results] == ["fsdp", "fsdp+tp"]
    for r in comparison.results:
        assert "logical axis rules" in r.title
        assert r.report.check is not None and r.report.check.matches
        cost = r.report.cost
        assert cost is not None and cost.loops and not cost.lower_bound
    fsdp, tp = comparison.results
    assert fsdp.mesh.axis_names == ("fsdp",)
    assert tp.mesh.axis_names == ("fsdp", "tensor")


def test_batch_per_device_is_times_the_devices(comparison) -> None:
    # 1 sequence per device on 8 devices: the global batch is 8.
    arguments = comparison.results[0].report.arguments
    inputs = next(leaf for leaf in arguments.leaves if leaf.name.endswith("inputs"))
    assert inputs.shape[0] == 8


@pytest.mark.parametrize(
    ("sizes", "words"),
    [
        ({"batch_per_device": 1, "batch": 8}, "give one"),
        ({"batch_per_device": 0}, "batch_per_device=0 is not a whole number >= 1"),
        ({"batch_per_device": 1.5}, "batch_per_device=1.5 is not a whole number"),
    ],
)
def test_a_batch_given_two_ways_or_not_whole_is_refused(sizes, words) -> None:
    with pytest.raises(ShardvizError, match=words):
        sv.compare("llama3.1-8b", ["fsdp"], **sizes)


def test_the_explorer_opens_on_the_comparison(comparison) -> None:
    import json

    from shardviz.widgets.explorer.widget import ExplorerWidget

    w = ExplorerWidget(comparison)
    assert w.comparison is comparison
    assert [s["id"] for s in w.strategies] == ["fsdp", "fsdp+tp"]
    assert w.selected_strategy == "fsdp"
    p = json.loads(w.get_state()["payload"])
    assert len(p["collectives"]) == len(comparison.results[0].report.collectives) > 0
