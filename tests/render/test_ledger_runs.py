"""The ledger says how often each collective runs a step, and its totals count every run."""

from __future__ import annotations

import dataclasses

from shardviz.model.units import format_bytes
from shardviz.render.report.html import report_html
from shardviz.render.report.sections import report_view
from shardviz.render.report.text import report_text
from tests.render.report_fixtures import fsdp_report


def _looped(trips=12):
    """The FSDP step with its first collective inside a loop of ``trips`` per step."""
    r = fsdp_report()
    first = dataclasses.replace(r.collectives[0], trips=trips)
    return dataclasses.replace(r, collectives=(first, *r.collectives[1:]))


def test_a_runs_column_only_when_something_loops():
    assert "runs" not in report_text(fsdp_report()).split("\n\n")[1].splitlines()[1]
    text = report_text(_looped())
    ledger = text[text.index("Collectives ·") :]
    header = ledger.splitlines()[1]
    assert "runs" in header.split()
    assert " x12 " in ledger
    assert 'class="sv-runs" title="runs 12 times a step">x12<' in report_html(_looped())


def test_group_and_kind_totals_count_every_run():
    r = _looped()
    v = report_view(r)
    c = r.collectives[0]
    group = next(g for g in v.ledger.groups if any(i == 1 for i, _ in g.rows))
    others = sum(x.moved_bytes for i, x in group.rows if i != 1)
    assert group.step_bytes == 12 * c.moved_bytes + others
    assert f"moved {format_bytes(group.step_bytes)} per device per step (" in group.summary
    kind = next(k for k in v.ledger.kinds if k.kind == c.kind)
    assert kind.step_bytes > kind.moved_bytes and "per step (" in kind.summary


def test_an_unknown_count_says_so():
    r = _looped(trips=None)
    v = report_view(r)
    row = next(x for g in v.ledger.groups for x in g.ledger if x.index == 1)
    assert row.runs == "x?"
    assert "at least" in v.ledger.headline
    assert any("(at least" in g.summary for g in v.ledger.groups)
