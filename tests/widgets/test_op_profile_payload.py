"""The Explorer's op profile pane data: the text view's cells, or None without a schedule."""

from __future__ import annotations

import dataclasses
import json

from shardviz.model import OpWork
from shardviz.widgets.explorer.payload import op_profile_payload, report_payload
from tests.render.report_fixtures import dp_v5e_report, megatron_report

EVIL = "<script>alert(1)</script>"


def _with_ops():
    r = dp_v5e_report()
    ops = (
        OpWork("fusion.1", 2e9, 1e6, 3, op_name=f"jit(step)/jvp({EVIL})/attn/dot_general"),
        OpWork("fusion.2", 0.0, 4e6, 1, op_name="jit(step)/sgd/add"),
    )
    return dataclasses.replace(r, cost=dataclasses.replace(r.cost, ops=ops))


def test_none_without_the_compiled_schedule():
    assert op_profile_payload(megatron_report()) is None
    assert report_payload(megatron_report())["op_profile"] is None


def test_the_pane_shows_the_text_views_cells():
    p = report_payload(_with_ops())["op_profile"]
    assert p is not None
    modules = [row[0] for row in p["modules"]]
    assert modules[0] == "attention (1 op)" and "optimizer (1 op)" in modules
    assert len(modules) == len(set(modules))
    fusion = next(row for row in p["ops"] if row[0] == "fusion.1 x3")
    assert p["columns"][1:3] == ["predicted", "share"]
    assert fusion[-2:] == ["attention", "a loop x3"]  # 3 runs per step: in a loop
    assert any(row[0].startswith("all-reduce") for row in p["ops"])  # the ledger's, timed
    json.dumps(p)  # plain data
