"""A report's views read one :class:`ReportView`, computed once per rendering: the text and
the HTML print its fields, so a figure cannot differ between them."""

from __future__ import annotations

import dataclasses
import html as html_lib

import pytest

from shardviz.model.program import Report
from shardviz.render.report import html as report_html_module
from shardviz.render.report import sections
from shardviz.render.report import text as report_text_module
from shardviz.render.report.html import report_html
from shardviz.render.report.sections import IntermediateRow, ReportView, report_view
from shardviz.render.report.text import report_text
from tests.render.host_fixtures import megatron_four_hosts
from tests.render.report_fixtures import (
    compile_only_report,
    dp_v5e_report,
    fsdp_report,
    large_report,
    profile_report,
)

REPORTS = {
    "fsdp": fsdp_report,
    "dp_v5e": dp_v5e_report,
    "compile_only": compile_only_report,
    "profile": profile_report,
    "hosts": megatron_four_hosts,
    "large": lambda: large_report(40),
}


@pytest.mark.parametrize("module", [report_text_module, report_html_module])
def test_each_rendering_builds_the_view_once(monkeypatch, module):
    calls = []

    def counted(report: Report) -> ReportView:
        calls.append(report)
        return report_view(report)

    monkeypatch.setattr(module, "report_view", counted)
    report = fsdp_report()
    out = report_text(report) if module is report_text_module else report_html(report)
    assert out and len(calls) == 1


def _marked(v: ReportView) -> ReportView:
    """The view with a word changed in each section."""
    memory = dataclasses.replace(
        v.memory,
        peak="PEAK-W",
        parts=tuple(dataclasses.replace(p, text=f"PART-{p.name}") for p in v.memory.parts),
    )
    cost = dataclasses.replace(v.cost, flops="FLOPS-W", accessed="ACCESSED-W")
    timing = dataclasses.replace(v.timing, step="STEP-W", compile="COMPILE-W")
    check = dataclasses.replace(v.check, max_abs="DIFF-W")
    header = dataclasses.replace(v.header, status="STATUS-W", mesh="MESH-W")
    ledger = dataclasses.replace(v.ledger, headline="HEADLINE-W")
    ins = v.intermediates
    rows = tuple(
        dataclasses.replace(r, shape=f"SHAPE-{r.index}") if isinstance(r, IntermediateRow) else r
        for r in ins.listed
    )
    first = tuple(
        dataclasses.replace(r, shape=f"SHAPE-{r.index}") if isinstance(r, IntermediateRow) else r
        for r in ins.first
    )
    rest = tuple(dataclasses.replace(r, shape=f"SHAPE-{r.index}") for r in ins.rest)
    intermediates = dataclasses.replace(ins, listed=rows, first=first, rest=rest)
    estimate = v.estimate
    if estimate is not None:
        estimate = dataclasses.replace(
            estimate,
            rows=tuple(dataclasses.replace(r, value=f"EST-{r.key}") for r in estimate.rows),
        )
    return dataclasses.replace(
        v,
        header=header,
        ledger=ledger,
        intermediates=intermediates,
        memory=memory,
        cost=cost,
        timing=timing,
        check=check,
        estimate=estimate,
    )


def test_the_text_and_the_html_print_the_views_words():
    report = dp_v5e_report()
    v = _marked(report_view(report))
    text, html = report_text(report, v), html_lib.unescape(report_html(report, v))
    words = ["PEAK-W", "FLOPS-W", "ACCESSED-W", "STATUS-W", "MESH-W", "HEADLINE-W"]
    words += [f"PART-{p.name}" for p in v.memory.parts]
    words += [f"SHAPE-{r.index}" for r in v.intermediates.listed if isinstance(r, IntermediateRow)]
    assert v.estimate is not None
    words += [f"EST-{r.key}" for r in v.estimate.rows]
    for w in words:
        assert w in text, w
        assert w in html, w
    # Timing and check: this report ran, so both print them.
    assert report.timing is not None and report.check is not None
    for w in ("STEP-W", "COMPILE-W", "DIFF-W"):
        assert w in text and w in html, w


@pytest.mark.parametrize("name", sorted(REPORTS))
def test_every_figure_of_the_view_is_in_both(name):
    report = REPORTS[name]()
    v = report_view(report)
    text, html = report_text(report), html_lib.unescape(report_html(report))
    figures = [v.header.status, v.header.mesh, v.ledger.headline, v.memory.peak]
    figures += [p.text for p in v.memory.parts] + [p.exact for p in v.memory.parts]
    figures += [leaf.text for leaf in v.memory.leaves] + [r.text for r in v.memory.roles]
    figures += [x for x in (v.cost.flops, v.cost.accessed, v.cost.flops_global) if x]
    figures += [value for _, value, _ in v.cost.more]
    for group in v.ledger.groups:
        figures.append(group.summary)
        figures += [x for row in group.ledger for x in (row.in_bytes, row.moved, row.operand)]
    figures += [t.summary for t in v.ledger.kinds]
    if v.timing.measured:
        figures += [v.timing.step, v.timing.compile, v.timing.first_run]
    if v.check.checked:
        figures += [v.check.word, v.check.max_abs, v.check.tolerance]
    if v.estimate is not None:
        figures += [r.value for r in v.estimate.rows]
    if v.profile is not None:
        figures += [x for op in v.profile.rows for x in (op.median, op.total, op.percent)]
    for f in figures:
        assert f in text, (name, f)
        assert f in html, (name, f)


def test_ledger_rows_are_in_ledger_order():
    report = megatron_four_hosts()
    rows = report_view(report).ledger.rows
    assert [r.index for r in rows] == list(range(1, len(report.collectives) + 1))
    assert [r.collective for r in rows] == list(report.collectives)


def test_sections_hold_no_words_of_missing_parts():
    report = compile_only_report()
    v = sections.report_view(report)
    assert not v.timing.measured and not v.check.checked
    assert v.check.word == "not checked" and v.header.matches is None
    assert "Timing · not measured (compile-only)" in report_text(report, v)
