"""ExplorerWidget without a browser: synced state is the model's JSON, selections are checked, and
``show``/``status``/``error`` let a controller drive it; the static views are escaped and offline."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest
import traitlets

import shardviz as sv
from shardviz.model import Comparison, Report
from shardviz.render.compare.html import comparison_html
from shardviz.render.report.html import report_html
from shardviz.strategies import mlp
from shardviz.widgets.esm import widget_module
from shardviz.widgets.explorer.diff import collective_key
from shardviz.widgets.explorer.payload import array_json, report_json, strategies_payload
from shardviz.widgets.explorer.widget import STATUSES, ExplorerWidget
from shardviz.widgets.mesh_view import STATIC
from tests.live_reports import megatron_mlp_report
from tests.render.compare_fixtures import comparison
from tests.render.report_fixtures import NASTY, dp_report, nasty_report, shard_map_report

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
SVG_NS = "http://www.w3.org/2000/svg"


@pytest.fixture(scope="module")
def report() -> Report:
    """A real compile: the Megatron MLP step on a 2x4 ('data', 'model') mesh."""
    return megatron_mlp_report()


@pytest.fixture(scope="module")
def real_comparison() -> Comparison:
    """The one real compare() here: dp (8 devices in a row) and tp (2 x 4)."""
    return sv.compare("mlp", ["dp", "tp"], steps=1)


def _bundle_data(bundle):
    return bundle[0] if isinstance(bundle, tuple) else bundle


# --------------------------------------------------------------------------------------------
# Synced state is the model's


def test_synced_state_is_the_payload_of_the_report(report):
    w = ExplorerWidget(report)
    state = w.get_state()
    assert state["payload"] == report_json(report)
    assert w.selected_array == f"arg:{report.arguments.leaves[0].name}"
    assert state["array"] == array_json(report, w.selected_array)
    assert (w.selected_device, w.selected_collective) == (-1, -1)
    assert (w.strategies, w.selected_strategy, w.status, w.error) == ([], "", "", "")
    assert w.report is report and w.comparison is None


def test_ledger_in_the_synced_json_equals_the_reports_collectives(report):
    w = ExplorerWidget(report)
    p = json.loads(w.get_state()["payload"])
    assert len(p["collectives"]) == len(report.collectives) > 0
    for e, c in zip(p["collectives"], report.collectives, strict=True):
        assert (e["kind"], tuple(e["axes"]), e["group_size"]) == (c.kind, c.axes, c.group_size)
        assert (e["in_bytes"], e["out_bytes"], e["moved_bytes"]) == (
            c.in_bytes, c.out_bytes, c.moved_bytes
        )  # fmt: skip
        assert tuple(map(tuple, p["groupings"][e["groups"]])) == c.groups
        frames = p["sources"][e["source"]]
        assert [(p["files"][f], line, fn) for f, line, fn in frames] == [
            (f.file, f.line, f.function) for f in c.source.frames
        ]
        assert e["reshard"] == c.reshard
        if c.reshard:
            assert e["reshard_array"] == f"mid:{c.reshard}"
    m = p["memory"]
    per = report.arguments.bytes_per_device
    assert [row[0] for row in m["bytes"]] == [per[d] for d in m["devices"]]
    assert m["temp_bytes"] == report.memory.temp_bytes


def test_picking_an_array_sends_only_its_tiles(report):
    w = ExplorerWidget(report)
    s = next(s for s in report.intermediates if s.spec is not None and any(s.spec))
    w.selected_array = f"mid:{s.name}"
    a = json.loads(w.array)
    assert a["id"] == f"mid:{s.name}" and a["spec_str"] == s.spec_str
    layout = w.array_layout
    assert layout.spec is not None and len(a["tiles"]) == layout.num_distinct_tiles
    w.selected_array = ""
    assert w.array == "" and w.array_layout is None


def test_initial_selections_can_be_given(real_comparison):
    w = ExplorerWidget(
        real_comparison, selected_strategy="tp", selected_device=3, selected_collective=1
    )
    assert w.selected_strategy == "tp" and w.report is real_comparison.result("tp").report
    assert (w.selected_device, w.selected_collective) == (3, 1)
    assert w.payload == report_json(w.report)


# --------------------------------------------------------------------------------------------
# Wrong input says what to pass


def test_wrong_types_say_what_to_pass(report, real_comparison):
    with pytest.raises(TypeError, match=r"Report \(from shardviz.explain\) or a Comparison"):
        ExplorerWidget(42)
    with pytest.raises(TypeError, match=r"pass result\.report"):
        ExplorerWidget(real_comparison.results[0])
    with pytest.raises(TypeError, match="MeshView"):
        ExplorerWidget(report.mesh)
    with pytest.raises(TypeError, match=r"shardviz\.explain\(fn"):
        ExplorerWidget(mlp.train_step)
    w = ExplorerWidget(report)
    with pytest.raises(TypeError, match="got str"):
        w.show("report.json")


def test_unknown_selections_name_the_valid_choices(report):
    w = ExplorerWidget(report)
    with pytest.raises(traitlets.TraitError, match=r"not an array of this report.*'arg:batch/x'"):
        w.selected_array = "arg:nope"
    with pytest.raises(traitlets.TraitError, match=r"not a device.*0, 1, 2, 3, 4, 5, 6, 7 or -1"):
        w.selected_device = 8
    n = len(report.collectives)
    with pytest.raises(traitlets.TraitError, match=rf"valid: 0 to {n - 1}, or -1"):
        w.selected_collective = n
    with pytest.raises(traitlets.TraitError, match="single report has no strategies"):
        w.selected_strategy = "dp"
    with pytest.raises(traitlets.TraitError, match="not a strategy.*'dp', 'fsdp', 'tp'"):
        ExplorerWidget(comparison()).selected_strategy = "zero9"
    with pytest.raises(traitlets.TraitError, match="not a strategy"):
        ExplorerWidget(comparison(), selected_strategy="zero9")
    assert (w.selected_array, w.selected_device) == (f"arg:{report.arguments.paths[0]}", -1)


def test_long_choice_lists_are_cut_short():
    w = ExplorerWidget(dp_report())
    with pytest.raises(traitlets.TraitError, match=r"… \d+ more"):
        w.selected_array = "mid:nope"


def test_status_takes_the_known_words_and_error_any_text(report):
    w = ExplorerWidget(report)
    for s in STATUSES:
        w.status = s
        assert w.get_state()["status"] == s
    with pytest.raises(traitlets.TraitError):
        w.status = "exploded"
    w.error = "CompileError: <bad>"
    assert w.get_state()["error"] == "CompileError: <bad>"


# --------------------------------------------------------------------------------------------
# Strategies and show()


def test_strategy_switch_needs_no_recompile_and_drops_stale_selections(real_comparison):
    w = ExplorerWidget(real_comparison)
    assert w.strategies == strategies_payload(real_comparison)
    assert w.selected_strategy == "dp"
    tp = real_comparison.result("tp").report
    w.selected_strategy = "tp"
    assert w.report is tp  # the comparison's own report: nothing recompiled
    assert w.payload == report_json(tp)
    last = len(tp.collectives) - 1
    w.selected_collective = last
    w.selected_device = 6
    mid = next(s.name for s in tp.intermediates if s.name not in
               {x.name for x in real_comparison.result("dp").report.intermediates})  # fmt: skip
    w.selected_array = f"mid:{mid}"
    w.selected_strategy = "dp"
    dp = real_comparison.result("dp").report
    assert w.payload == report_json(dp)
    assert w.selected_device == 6  # still a device of dp's mesh
    kept = w.selected_collective  # the same collective (kind, axes, source), wherever it is
    assert kept != -1
    assert collective_key(dp.collectives[kept]) == collective_key(tp.collectives[last])
    assert w.selected_array == f"arg:{dp.arguments.paths[0]}"  # tp's intermediate is gone
    assert w.array == array_json(dp, w.selected_array)


def test_show_replaces_the_report_and_keeps_what_still_exists():
    first, second = dp_report(), shard_map_report()
    w = ExplorerWidget(
        first, selected_device=5, selected_collective=2, selected_array="arg:batch.x"
    )
    w.status = "compiling"
    w.show(second)
    assert w.report is second and w.payload == report_json(second)
    assert w.selected_device == 5  # same mesh
    assert w.selected_collective == -1  # dp's all-reduce is not in the shard_map ledger
    assert w.selected_array == "arg:x"  # batch.x is gone: the first argument instead
    assert w.array == array_json(second, "arg:x")
    assert w.status == "compiling", "show() leaves status to the controller"

    w.selected_array = "mid:copy.5"
    w.show(dataclasses.replace(second, collectives=()))
    assert w.selected_collective == -1 and w.selected_array == "mid:copy.5"
    assert w.array == array_json(w.report, "mid:copy.5")


def _source_at(c, line):
    frame = dataclasses.replace(c.source.frames[-1], line=line)
    return dataclasses.replace(c, source=dataclasses.replace(c.source, frames=(frame,)))


def test_a_recompile_keeps_the_selected_collective_by_what_it_is_not_its_position():
    """Regression (issue 12): "#3" used to become whichever collective was third next."""
    first = dp_report()
    a, b, c = (_source_at(x, 10 + i) for i, x in enumerate(first.collectives))
    first = dataclasses.replace(first, collectives=(a, b, c))
    w = ExplorerWidget(first, selected_collective=2)
    w.show(dataclasses.replace(first, collectives=(c, a)))  # b dropped, c moved to the front
    assert w.selected_collective == 0
    w.show(dataclasses.replace(first, collectives=(a, b)))  # c gone: nothing selected
    assert w.selected_collective == -1
    w.selected_collective = 1
    w.show(dataclasses.replace(first, collectives=(b, b)))  # two of one kind: the first such
    assert w.selected_collective == 0


def test_show_says_what_changed_since_the_last_report():
    first = dp_report()
    w = ExplorerWidget(first)
    assert w.changes == ""
    fewer = dataclasses.replace(first, collectives=first.collectives[:1])
    w.show(fewer)
    assert w.changes.startswith("since the last configuration: −2 all-reduce over ('data',)")
    assert "moved per device" in w.changes and "peak" in w.changes
    assert "(unchanged)" in w.changes.split("peak")[1]  # same memory
    w.show(comparison())
    assert w.changes == ""  # a comparison is not an edit of one configuration


def test_stale_is_a_synced_trait_the_controller_sets(report):
    w = ExplorerWidget(report)
    assert w.stale == "" and "stale" in w.keys
    w.stale = "fix params/w1: unknown mesh axis 'modle'"
    assert w.get_state()["stale"].startswith("fix params/w1")


def test_show_switches_between_report_and_comparison():
    c = comparison()
    w = ExplorerWidget(dp_report())
    w.show(c)
    assert w.comparison is c and w.selected_strategy == "dp"
    assert w.strategies == strategies_payload(c)
    w.selected_strategy = "tp"
    w.show(comparison())  # a recompiled comparison: the strategy shown stays
    assert w.selected_strategy == "tp"
    assert w.payload == report_json(c.result("tp").report)
    w.show(dp_report())
    assert (w.strategies, w.selected_strategy, w.comparison) == ([], "", None)


# --------------------------------------------------------------------------------------------
# Static views and front-end files


def test_mimebundle_has_the_live_view_and_the_static_report(report):
    w = ExplorerWidget(report)
    data = _bundle_data(w._repr_mimebundle_())
    assert data[WIDGET_MIME]["model_id"] == w.model_id
    assert data["text/html"] == report_html(report)
    assert "text/plain" in data
    c = comparison()
    assert _bundle_data(ExplorerWidget(c)._repr_mimebundle_())["text/html"] == comparison_html(c)


def test_save_html_writes_one_offline_page(tmp_path, report):
    path = ExplorerWidget(report).save_html(tmp_path / "explorer.html")
    text = Path(path).read_text(encoding="utf-8")
    assert text.startswith("<!doctype html>") and report_html(report) in text
    assert not re.search(r"(?:src|href)\s*=\s*[\"']?(?:https?:)?//", text)
    assert "<script" not in text
    cpath = ExplorerWidget(comparison()).save_html(str(tmp_path / "cmp.html"))
    assert comparison_html(comparison()) in Path(cpath).read_text(encoding="utf-8")


def test_hostile_names_are_escaped_in_every_static_view(tmp_path):
    r = nasty_report()
    w = ExplorerWidget(r)
    html = _bundle_data(w._repr_mimebundle_())["text/html"]
    saved = Path(w.save_html(tmp_path / "nasty.html")).read_text(encoding="utf-8")
    for text in (html, saved):
        assert NASTY not in text
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
        assert "<script" not in text
    # the synced JSON is inert too, wherever a page embeds widget state
    for k in ("payload", "array"):
        assert "<" not in w.get_state()[k]
    assert json.loads(w.payload)["function"] == r.function


def test_front_end_files_ship_and_load_nothing(report):
    state = ExplorerWidget(report).get_state()
    js = widget_module("explorer.js")
    css = (STATIC / "explorer.css").read_text(encoding="utf-8")
    assert state["_esm"] == js and state["_css"] == css
    for text in (js.replace(SVG_NS, ""), css):  # the SVG namespace is a name, not a resource
        assert not re.search(r"https?://", text)
        assert "@import" not in text and "url(" not in text
    assert "export default" in js and "render(" in js
    assert not re.search(r"^\s*import\s", js, re.M), "the module must not import anything"
    assert ".innerHTML" not in js and "insertAdjacentHTML" not in js and "eval(" not in js


# --------------------------------------------------------------------------------------------
# Several targets


def test_strategies_on_several_targets_are_picked_by_their_label():
    from tests.render.compare_fixtures import comparison_targets

    c = comparison_targets()
    w = ExplorerWidget(c, selected_strategy="fsdp @ NVIDIA H100 SXM 1x8 (from CPU)")
    assert w.report is c.result("fsdp", target="h100").report
    assert json.loads(w.payload)["estimate"]["target_name"] == "h100:1x8"
    assert [s["id"] for s in w.strategies] == list(c.labels)
    w.selected_strategy = "tp @ TPU v5e 2x4 (from CPU)"
    assert w.report is c.result("tp", target="v5e").report
    with pytest.raises(traitlets.TraitError, match=re.escape("dp @ TPU v5e 2x4 (from CPU)")):
        w.selected_strategy = "dp"
    w.show(c)  # the same comparison again keeps the strategy shown
    assert w.selected_strategy == "tp @ TPU v5e 2x4 (from CPU)"
