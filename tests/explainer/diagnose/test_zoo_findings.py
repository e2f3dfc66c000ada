"""The zoo's textbook strategies give no findings, except the ones that are real (each named
here with the reason)."""

from __future__ import annotations

import pytest

import shardviz as sv
from shardviz.strategies.rules.named import get_rule_set
from shardviz.strategies.step import strategy_step
from shardviz.strategies.zoo import get_model

SIZES = {"transformer": {"layers": 1}}
CASES = [
    ("mlp", ["dp", "zero1", "zero2", "zero3", "tp", "2d"]),
    ("transformer", ["dp", "zero1", "zero2", "fsdp", "tp", "2d", "sp"]),
    ("moe", ["dp", "ep", "fsdp", "tp"]),
]
#: Findings the CPU compiler's own choices make real on these strategies: it all-reduces
#: gradients (ZeRO-2/3, FSDP, 2-D, expert weights) and sequence-parallel activations, then
#: keeps a slice, where the textbook form reduce-scatters (twice the bytes moved). The same
#: strategies compiled by the GPU compiler reduce-scatter and give none (see
#: test_backends_live.py).
REAL_ON_CPU = {
    ("mlp", "zero2"), ("mlp", "zero3"), ("mlp", "2d"),
    ("transformer", "zero2"), ("transformer", "fsdp"), ("transformer", "2d"),
    ("transformer", "sp"), ("moe", "ep"), ("moe", "fsdp"),
}  # fmt: skip


def findings_of(model: str, strategy: str):
    built = strategy_step(get_model(model, **SIZES.get(model, {})), get_rule_set(strategy))
    return sv.explain(built.step, *built.abstract, run=False).findings


@pytest.mark.parametrize(
    ("model", "strategy"), [(m, s) for m, strategies in CASES for s in strategies]
)
def test_textbook_strategies_have_no_false_findings(model, strategy):
    found = findings_of(model, strategy)
    assert found is not None
    if (model, strategy) in REAL_ON_CPU:
        assert found.kinds == ("full-reduce",), [f.title for f in found]
        (f,) = found
        assert f.fix is None and f.severity == "info"
        assert "cpu compiler kept the all-reduce" in f.why
    else:
        assert not found, [f.title for f in found]


def test_comparison_views_list_each_strategys_findings():
    c = sv.compare("mlp", ["zero2", "tp"], steps=1)
    text = str(c)
    findings = text.split("Findings (", 1)[1].splitlines()[1:]
    assert [x.split(":", 1)[0].strip() for x in findings] == ["zero2"]
    assert "full-reduce" in findings[0]
    html = c._repr_html_()
    assert html.count('class="sv-cmp-notes sv-cmp-findings"') == 1
    assert html.count("full-reduce") >= 1
