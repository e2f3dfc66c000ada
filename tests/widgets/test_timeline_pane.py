"""The Explorer's timeline pane: the JSON of the report's timeline view, or None without one."""

from __future__ import annotations

import json

from shardviz.render.timeline import PLOT_WIDTH
from shardviz.widgets.explorer.payload import report_payload, timeline_payload
from tests.render.report_fixtures import (
    NASTY,
    STEP,
    megatron_report,
    profile_report,
    timeline_report,
)


def test_no_timeline_without_a_profile_trace():
    assert timeline_payload(megatron_report()) is None
    assert timeline_payload(profile_report()) is None
    assert report_payload(megatron_report())["timeline"] is None


def test_lanes_bars_kinds_and_label():
    r = timeline_report("cpu", devices=8)
    p = report_payload(r)["timeline"]
    assert p is not None
    assert [lane["device"] for lane in p["lanes"]] == list(range(8))
    assert all(len(lane["bars"]) == len(STEP) for lane in p["lanes"])
    assert [k[0] for k in p["kinds"]] == ["compute", "all-reduce"]
    assert p["kinds"][1][1] == "#0969da"
    assert p["illustrative"] and p["label"] == "illustrative: CPU devices share the host's cores"
    kinds = [p["kinds"][bar[2]][0] for bar in p["lanes"][0]["bars"]]
    assert kinds == ["compute", "all-reduce", "compute"]
    assert all(x >= 0 and x + w <= PLOT_WIDTH + 0.01 for x, w, _, _ in p["lanes"][3]["bars"])
    assert p["ticks"][0] == [0, "0 s"]
    assert "dot.1" in p["lanes"][0]["bars"][0][3]


def test_real_on_gpu_and_names_kept_as_data():
    from dataclasses import replace

    from shardviz.model import OpEvent

    r = replace(timeline_report("gpu"), timeline=(OpEvent(0, f"op{NASTY}", 0.0, 1e-3),))
    p = timeline_payload(r)
    assert p is not None and not p["illustrative"] and p["label"].startswith("real")
    assert NASTY in json.dumps(p)  # escaped by the front end's textContent, not here


def test_the_pane_is_the_views_json_and_a_word_changed_there_shows_everywhere(monkeypatch):
    """The timeline's words are spelled once, in its view: the Explorer syncs the view's
    JSON, and a word reworded in the view shows in the text, the HTML and the pane."""
    import shardviz.render.timeline as tl
    from shardviz.model.timeline import timeline_of
    from shardviz.render.report.html import report_html
    from shardviz.render.report.text import report_text

    r = timeline_report("cpu", devices=4)
    view = tl.timeline_view(timeline_of(r))
    assert tl.TimelineView.from_json(json.dumps(timeline_payload(r))) == view
    spelled = tl.format_seconds
    monkeypatch.setattr(tl, "format_seconds", lambda s: "T" + spelled(s))
    total = "T" + spelled(timeline_of(r).totals["all-reduce"])
    assert total in report_text(r) and total in report_html(r)
    assert [k[2] for k in report_payload(r)["timeline"]["kinds"]][1] == total
