"""``Collective.why`` in the views: a ``why:`` line under the ledger entry's detail line in the
text view, a ``why`` fact (escaped) in the HTML ledger, and the ready-made words in the
Explorer's payload. Built by hand (no jax)."""

from __future__ import annotations

from dataclasses import replace

from shardviz.model.program import Report
from shardviz.model.why import CollectiveWhy, Origin
from shardviz.render.report.html import report_html
from shardviz.render.report.sections import ledger_section
from shardviz.render.report.text import report_text
from shardviz.widgets.explorer.payload import collective_text, report_payload

from .report_fixtures import megatron_report

SUMMARY = (
    "The dot_general at megatron.py:25 (y = h @ w2) sums over a dim split over 'model', so each "
    "device holds partial sums, and this all-reduce adds them into P('data', None) <b>&</b>."
)


def _with_why() -> Report:
    report = megatron_report()
    why = CollectiveWhy(
        from_spec=(("data",), ()),
        to_spec=(("data",), ()),
        needed_by="dot_general",
        needed_by_line="/home/ada/shardviz-demo/megatron.py:25",
        from_origin=Origin("argument", ((), ("model",)), "argument w1", "w1"),
        to_origin=Origin("argument", (("data",), ()), "argument x", "x"),
        summary=SUMMARY,
        partial_axes=("model",),
    )
    (c,) = report.collectives
    return replace(report, collectives=(replace(c, why=why),))


def test_text_view_puts_why_under_the_detail_line():
    lines = report_text(_with_why()).splitlines()
    detail = next(i for i, t in enumerate(lines) if "reshards dot.3" in t)
    assert lines[detail + 1].strip() == f"why: {SUMMARY}"
    # Without a why nothing changes (the golden files pin that).
    assert "why:" not in report_text(megatron_report())


def test_html_ledger_lists_why_escaped():
    html = report_html(_with_why())
    assert "<dt>why</dt><dd>The dot_general at megatron.py:25" in html
    assert "&lt;b&gt;&amp;&lt;/b&gt;" in html
    assert "<b>&</b>" not in html


def test_explorer_payload_carries_the_words():
    report = _with_why()
    words = collective_text(ledger_section(report).rows[0])
    assert words["why_text"] == SUMMARY
    assert words["why_change"] == "P('data', None) (partial sums over 'model') → P('data', None)"
    assert report_payload(report)["collectives"][0]["why_text"] == SUMMARY
    plain = collective_text(ledger_section(megatron_report()).rows[0])
    assert plain["why_text"] is None and plain["why_change"] is None


def test_explorer_change_writes_axes_and_one_dim_specs_as_jax_code():
    """No tuple of axes, no one-dim spec's tuple comma (``P('model',)``)."""
    report = _with_why()
    (c,) = report.collectives
    assert c.why is not None
    why = replace(
        c.why, from_spec=(("data", "model"),), to_spec=((),), partial_axes=("data", "model")
    )
    row = ledger_section(replace(report, collectives=(replace(c, why=why),))).rows[0]
    change = collective_text(row)["why_change"]
    assert change == "P(('data', 'model')) (partial sums over 'data', 'model') → P(None)"
