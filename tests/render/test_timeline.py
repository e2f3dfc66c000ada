"""The per-device timeline: its facts (model), its SVG and text (render), in the report."""

from __future__ import annotations

import dataclasses
import re

from shardviz.model import OpEvent, Report
from shardviz.model.timeline import COMPUTE, ILLUSTRATIVE_LABEL, op_kind, timeline_of
from shardviz.render.report.html import report_html, timeline_section
from shardviz.render.report.text import report_text
from shardviz.render.timeline import layout, ticks, timeline_html, timeline_lines

from .report_fixtures import (
    NASTY,
    QUOTES,
    STEP,
    megatron_report,
    profile_report,
    timeline_report,
)


def test_op_kind_names_collectives_and_compute():
    assert op_kind("all-reduce.2") == "all-reduce"
    assert op_kind("all-gather-start.1") == "all-gather"
    assert op_kind("collective-permute-done") == "collective-permute"
    assert op_kind("multiply_reduce_fusion") == COMPUTE
    assert op_kind("all-reducer.1") == COMPUTE


def test_facts_lanes_kinds_totals():
    r = timeline_report()
    t = timeline_of(r)
    assert t is not None
    assert [lane.device for lane in t.lanes] == [0, 1, 2, 3]
    assert t.bars == len(r.timeline or ())
    assert t.kinds == (COMPUTE, "all-reduce")
    assert abs(t.totals["all-reduce"] - (4 * 80e-6 + 20e-6)) < 1e-12
    assert abs(t.totals[COMPUTE] - 4 * 110e-6) < 1e-12
    assert abs(t.span - 210e-6) < 1e-12
    assert t.illustrative == (r.platform == "cpu")


def test_no_timeline_no_section():
    r = megatron_report()
    assert timeline_of(r) is None
    assert timeline_html(r) == "" and timeline_lines(r) == []
    assert "sv-timeline" not in report_html(r)
    assert "Timeline" not in report_text(r)
    # a profile alone (as before this view existed) draws no timeline either
    assert "sv-timeline" not in report_html(profile_report())


def test_html_one_lane_per_device_and_bar_counts():
    r = timeline_report(devices=8)
    html = report_html(r)
    lanes = re.findall(r'<g class="sv-tl-lane" data-device="(\d+)">(.*?)</g>', html)
    assert [int(d) for d, _ in lanes] == list(range(8))
    for _, body in lanes:
        assert body.count('class="sv-tl-bar"') == len(STEP)
    assert html.count('class="sv-tl-bar"') == len(r.timeline or ())
    assert html.count('data-kind="all-reduce" fill="#0969da"') == 8


def test_cpu_label_says_illustrative_and_gpu_says_real():
    cpu = report_html(timeline_report("cpu"))
    assert "illustrative: CPU devices share the host&#x27;s cores" in cpu
    assert ILLUSTRATIVE_LABEL in "\n".join(timeline_lines(timeline_report("cpu")))
    gpu = report_html(timeline_report("gpu"))
    assert "share the host" not in gpu and "real: measured on gpu devices" in gpu


def test_layout_places_bars_on_the_axis():
    t = timeline_of(timeline_report())
    assert t is not None
    rows = layout(t, width=210.0)
    _, bars = rows[0]
    assert [round(b.x) for b in bars] == [0, 100, 180]
    assert [round(b.w) for b in bars] == [100, 80, 10]
    assert max(b.x + b.w for _, bs in rows for b in bs) <= 210.0 + 1e-9


def test_ticks_are_round_and_cover_the_span():
    assert ticks(210e-6) == [i * 50e-6 for i in range(5)]
    assert ticks(0.0) == [0.0]
    assert ticks(1.0)[-1] <= 1.0


def test_escapes_op_names():
    events = (OpEvent(0, f"op{NASTY}&{QUOTES}", 0.0, 1e-3),)
    r = dataclasses.replace(profile_report(), timeline=events, platform=f"<b>{NASTY}</b>")
    html = timeline_html(r)
    assert "<script>" not in html and "<b>" not in html
    assert "&lt;script&gt;" in html


def test_text_one_line_per_kind_with_total():
    lines = timeline_lines(timeline_report("cpu"))
    assert lines[0].startswith("Timeline · one profiled step · 4 devices · 12 ops")
    assert [line.split()[0] for line in lines[1:]] == [COMPUTE, "all-reduce"]
    assert "440 µs" in lines[1] and "340 µs" in lines[2]
    assert lines == report_text(timeline_report("cpu")).split("\n\n")[-1].splitlines()


def test_json_round_trip_keeps_the_timeline():
    r = timeline_report()
    back = Report.from_json(r.to_json())
    assert back.timeline == r.timeline
    # a report saved before timelines existed still loads
    data = r.to_json().replace('"timeline"', '"unused_key"')
    assert Report.from_json(data).timeline is None


def test_the_timeline_alone_is_styled_as_in_the_report():
    report = timeline_report()
    alone = timeline_section(report)
    assert alone.startswith('<div class="sv-root sv-report"') and "<style>" in alone
    assert timeline_html(report) in alone and ".sv-report h4" in alone
    assert timeline_section(profile_report()) == ""  # no timeline
