"""The comparison's HTML view: one row per strategy, memory segments that add up, transfer
bars equal to the ledger, badges, escaping, no network, the full reports collapsed."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from shardviz.render.compare.html import comparison_html
from shardviz.render.compare.view import (
    COMPONENT_BY_KEY,
    comparison_kinds,
    kind_count,
    kind_moved,
    memory_parts,
    memory_total,
)

from .compare_fixtures import NASTY, QUOTES, comparison, comparison_edges, comparison_nasty
from .test_html import Doc
from .test_report_html import assert_offline


def _mem_rows(doc: Doc) -> dict[str, tuple[int, list[tuple[str, int]]]]:
    """Per strategy on the memory chart: data-total and its segments (component, bytes)."""
    out: dict[str, tuple[int, list[tuple[str, int]]]] = {}
    current = None
    for tag, a in doc.elements:
        cls = (a.get("class") or "").split()
        if tag == "g" and "sv-cmp-memrow" in cls:
            current = a["data-strategy"]
            out[current] = (int(a["data-total"]), [])
        elif tag == "rect" and "sv-mem" in cls:
            assert current is not None
            out[current][1].append((a["data-component"], int(a["data-bytes"])))
    return out


def test_one_row_per_strategy_in_order() -> None:
    for c in (comparison(), comparison_edges()):
        doc = Doc(comparison_html(c))
        rows = doc.with_class("sv-strategy")
        assert [r["data-strategy"] for r in rows] == [r.strategy for r in c.results]
        assert all(
            tag == "tr"
            for tag, a in doc.elements
            if "sv-strategy" in (a.get("class") or "").split()
        )


def test_memory_segments_add_up_to_each_total() -> None:
    for c in (comparison(), comparison_edges()):
        rows = _mem_rows(Doc(comparison_html(c)))
        assert list(rows) == [r.strategy for r in c.results]
        for r in c.results:
            total, segs = rows[r.strategy]
            assert total == memory_total(r.memory)
            assert sum(b for _, b in segs) == total
            want = [(p.key, b) for p, b in memory_parts(r.memory)]
            assert segs == want


def test_memory_bars_share_one_scale_and_fixed_colours() -> None:
    c = comparison()
    out = comparison_html(c)
    widths: dict[str, float] = {}
    for m in re.finditer(r'<g class="sv-cmp-memrow" data-strategy="(\w+)".*?</g>', out, re.S):
        w = sum(float(x) for x in re.findall(r'class="sv-mem"[^>]*?width="([\d.]+)"', m.group(0)))
        widths[m.group(1)] = w
    totals = {r.strategy: memory_total(r.memory) for r in c.results}
    # Widths are proportional to bytes across strategies (one scale), within rounding.
    ratio = widths["dp"] / totals["dp"]
    for s in totals:
        assert abs(widths[s] - totals[s] * ratio) < 1.0, s
    for key, comp in COMPONENT_BY_KEY.items():
        fills = set(re.findall(rf'data-component="{key}"[^>]*?fill="(#[0-9a-f]+)"', out))
        assert fills == {comp.color}, key


def test_moved_bars_equal_the_ledger_by_kind() -> None:
    c = comparison()
    doc = Doc(comparison_html(c))
    bars = {
        (a["data-strategy"], a["data-kind"]): int(a["data-bytes"])
        for a in doc.with_class("sv-moved")
    }
    want = {
        (r.strategy, k): kind_moved(r, k)
        for r in c.results
        for k in comparison_kinds(c)
        if kind_count(r, k)
    }
    assert bars == want
    assert ("fsdp", "reduce-scatter") in bars and ("dp", "all-gather") not in bars


def test_moved_bars_by_mesh_axes_equal_the_ledger() -> None:
    c = comparison()
    doc = Doc(comparison_html(c))
    bars = {
        (a["data-strategy"], a["data-axes"]): int(a["data-bytes"])
        for a in doc.with_class("sv-moved-axes")
    }
    want = {
        (r.strategy, ",".join(s.axes)): sum(
            x.moved_bytes for x in r.collectives if x.axes == s.axes
        )
        for r in c.results
        for s in r.collectives
    }
    assert bars == want
    assert bars[("tp", "model")] == 48 * 1024 and ("dp", "data") not in bars
    for r in c.results:  # the two charts split the same bytes
        assert sum(b for (s, _), b in bars.items() if s == r.strategy) == sum(
            kind_moved(r, k) for k in comparison_kinds(c)
        )


def test_the_compilers_temp_is_shown_and_said_plainly_when_under_the_gradients() -> None:
    c = comparison()
    doc = Doc(comparison_html(c))
    temps = [int(a["data-bytes"]) for a in doc.with_class("sv-cmp-temp")]
    assert temps == [r.memory.temp for r in c.results]
    assert not doc.with_class("sv-cmp-tempnote")  # every temp here holds its gradients
    dp = c.result("dp")
    small = dataclasses.replace(dp.memory, temp=dp.memory.grads // 2, activations=0)
    c = dataclasses.replace(c, results=(dataclasses.replace(dp, memory=small), *c.results[1:]))
    out = comparison_html(c)
    notes = Doc(out).with_class("sv-cmp-tempnote")
    assert [a["data-strategy"] for a in notes] == ["dp"]
    assert "smaller than the gradients (3 MiB)" in out
    assert "activations/temp" not in out and "temp beyond grads" in out


def test_check_badges_and_reconciled_cells() -> None:
    c = comparison_edges()
    out = comparison_html(c)
    doc = Doc(out)
    checks = [a["class"].split() for a in doc.with_class("sv-cmp-check")]
    assert [("sv-ok" in x, "sv-bad" in x, "sv-none" in x) for x in checks] == [
        (False, False, True),  # single: no reference
        (False, True, False),  # fsdp: MISMATCH
        (False, False, True),  # tp: n.a.
    ]
    assert [a["data-reconciled"] for _, a in doc.elements if "data-reconciled" in a] == [
        "1",
        "0",
        "1",
    ]
    bad = c.result("fsdp").memory
    text = doc.all_text
    assert f"leaves {bad.arguments_from_leaves:,} B" in text
    assert f"compiler {bad.arguments_from_compiler:,} B" in text
    assert "MISMATCH" in text and "n/a" in text


def test_step_times_and_notes_shown() -> None:
    c = comparison()
    text = Doc(comparison_html(c)).all_text
    for s in ("2.12 ms", "3.47 ms", "2.81 ms"):
        assert s in text
    assert "the compiler chose all-reduce + dynamic-slice instead of reduce-scatter" in text
    assert "every strategy trains the same parameters" in text


def test_full_reports_collapsed_per_strategy() -> None:
    c = comparison()
    out = comparison_html(c)
    doc = Doc(out)
    details = [(tag, a) for tag, a in doc.elements if "sv-cmp-report" in (a.get("class") or "")]
    assert [a["data-strategy"] for _, a in details] == [r.strategy for r in c.results]
    assert all(tag == "details" and "open" not in a for tag, a in details)
    for r in c.results:
        assert r.report._repr_html_() in out


def test_escaping_of_hostile_strings() -> None:
    c = comparison_nasty()
    out = comparison_html(c)
    doc = Doc(out)
    assert "<script" not in out.lower()
    row = doc.with_class("sv-strategy")[0]
    assert row["data-strategy"] == c.results[0].strategy  # round-trips through the escaping
    text = doc.all_text
    assert f"note {NASTY} {QUOTES}" in text
    assert f"top {NASTY}" in text
    assert f"desc {NASTY} {QUOTES}" in text
    assert f"weird-{NASTY}" in text
    assert f"f32{QUOTES}" in text
    assert_offline(out)


def test_offline_and_repr() -> None:
    for c in (comparison(), comparison_edges(), comparison_nasty()):
        out = comparison_html(c)
        assert_offline(out)
        assert c._repr_html_() == out
        assert out.startswith('<div class="sv-root sv-compare">')


def test_save_html_writes_an_offline_page(tmp_path: Path) -> None:
    c = comparison()
    path = c.save_html(str(tmp_path / "c.html"))
    text = Path(path).read_text(encoding="utf-8")
    assert text.startswith("<!doctype html>")
    assert comparison_html(c) in text
    assert_offline(text)


def test_empty_comparison_renders() -> None:
    c = comparison()
    empty = type(c)(model="mlp", num_params=1, param_dtype="float32", results=())
    out = comparison_html(empty)
    assert "no strategies" in out
    assert not Doc(out).with_class("sv-strategy")


# --------------------------------------------------------------------------------------------
# Estimates on targets


def test_estimate_rows_per_target_with_fits_and_labels() -> None:
    from .compare_fixtures import comparison_targets

    c = comparison_targets()
    out = comparison_html(c)
    doc = Doc(out)
    groups = doc.with_class("sv-cmp-estgroup")
    assert [g["data-target"] for g in groups] == [
        "TPU v5e 2x4 (8 chips, 2 hosts)",
        "NVIDIA H100 SXM 1x8 (8 GPUs, 1 host)",
    ]
    rows = doc.with_class("sv-cmp-estrow")
    assert len(rows) == len(c.results)
    got = {(r["data-strategy"], r["data-target"]) for r in rows}
    assert got == {(r.strategy, r.report.target.name) for r in c.results}
    steps = [float(a["data-seconds"]) for a in doc.with_class("sv-cmp-est")]
    want = sorted(r.report.estimate.step_seconds for r in c.results)
    assert sorted(steps) == want
    assert all(a["data-fits"] == "1" for a in doc.with_class("sv-cmp-fit"))
    assert "a lower bound, not a measurement" in out
    # every row of every part is labelled by its target
    strategy_rows = doc.with_class("sv-strategy")
    assert [(a["data-strategy"], a["data-target"]) for a in strategy_rows] == [
        (r.strategy, r.report.target.name) for r in c.results
    ]
    assert "@ NVIDIA H100 SXM 1x8" in out
    assert len(doc.with_class("sv-cmp-memrow")) == len(c.results)
    assert_offline(out)


def test_hbm_lines_on_the_memory_chart() -> None:
    from .compare_fixtures import comparison_small_hbm, comparison_targets

    # far above the bars: marked at the edge, off the scale
    doc = Doc(comparison_html(comparison_targets()))
    off = doc.with_class("sv-cmp-hbm-off")
    assert sorted(int(a["data-hbm"]) for a in off) == sorted([16 * 2**30] * 3 + [80 * 2**30] * 3)
    # near the bars: a line on the scale, one per strategy with an estimate
    c = comparison_small_hbm()
    out = comparison_html(c)
    doc = Doc(out)
    lines = [a for a in doc.with_class("sv-cmp-hbm") if a.get("data-hbm")]
    assert [int(a["data-hbm"]) for a in lines] == [8 * 2**20, 8 * 2**20]
    assert not doc.with_class("sv-cmp-hbm-off")
    fits = {a["data-strategy"]: a for a in doc.with_class("sv-cmp-estrow")}
    assert set(fits) == {"single", "fsdp"}
    assert [a["data-fits"] for a in doc.with_class("sv-cmp-fit")] == ["0", "1"]
    assert "does not fit" in out and "no estimate (no target): tp" in out


def test_no_estimates_no_estimate_markup() -> None:
    for c in (comparison(), comparison_edges()):
        out = comparison_html(c)
        doc = Doc(out)
        for cls in ("sv-cmp-estrow", "sv-cmp-est", "sv-cmp-fit", "sv-cmp-hbm", "sv-cmp-hbm-off"):
            assert not doc.with_class(cls), cls
        assert "data-target" not in out and "a lower bound" not in out


# --------------------------------------------------------------------------------------------
# Fitting a notebook's output column at 1280 px (issue 40)


def test_the_figures_are_two_narrow_tables_one_row_per_strategy_in_each() -> None:
    from shardviz.render.compare.html import FIT_W

    for c in (comparison(), comparison_edges()):
        out = comparison_html(c)
        doc = Doc(out)
        names = [r.strategy for r in c.results]
        assert [a["data-strategy"] for a in doc.with_class("sv-strategy")] == names
        assert [a["data-strategy"] for a in doc.with_class("sv-cmp-collrow")] == names
        memory = out[out.index('<table class="sv-cmp-t sv-cmp-table">') :]
        memory = memory[: memory.index("</table>")]
        assert "reconciled" in memory and "moved" not in memory and "loss" not in memory
        colls = out[out.index('<table class="sv-cmp-t sv-cmp-colltable">') :]
        colls = colls[: colls.index("</table>")]
        assert "by mesh axes" in colls and "peak" not in colls
        # every chart is drawn no wider than the column, and scales down past it
        for w in re.findall(r'<svg class="sv-cmp-chart[^"]*"[^>]*? width="([\d.]+)"', out):
            assert float(w) <= FIT_W + 40, w
        assert "svg.sv-cmp-chart{max-width:100%;height:auto}" in out


def test_a_reconciled_no_has_its_figures_under_the_table_not_in_the_cell() -> None:
    c = comparison_edges()
    out = comparison_html(c)
    doc = Doc(out)
    bad = c.result("fsdp").memory
    cell = re.search(r'<td data-reconciled="0">(.*?)</td>', out)
    assert cell and "no *" in cell.group(1)
    assert "leaves" not in re.sub(r'title="[^"]*"', "", cell.group(1))  # only on hover
    notes = doc.with_class("sv-cmp-reconnotes")
    assert len(notes) == 1
    block = out[out.index('class="sv-cmp-line sv-cmp-reconnotes"') :]
    block = block[: block.index("</div></div>")]
    assert f"leaves {bad.arguments_from_leaves:,} B" in block
    assert f"compiler {bad.arguments_from_compiler:,} B" in block
    assert 'data-strategy="fsdp"' in block and 'data-strategy="tp"' not in block
    assert "* reconciled:" in block
    assert not Doc(comparison_html(comparison())).with_class("sv-cmp-reconnotes")


def test_a_strategys_name_under_its_bars_is_cut_to_its_group_whole_on_hover() -> None:
    from shardviz.render.svg import text_width

    c = comparison_edges()
    long = "a-strategy-name-far-too-long-for-its-bars"
    r = dataclasses.replace(c.results[0], strategy=long)
    out = comparison_html(dataclasses.replace(c, results=(r, *c.results[1:])))
    for chart in re.findall(r'<svg class="sv-cmp-chart sv-cmp-movedchart".*?</svg>', out, re.S):
        labels = re.findall(
            r'<text class="sv-cmp-lab" x="([\d.]+)"[^>]*>([^<]*)(?:<title>([^<]*)</title>)?</text>',
            chart,
        )
        assert len(labels) == len(c.results)
        assert labels[0][2] == long and labels[0][1].endswith("…")
        # the names' boxes, centred under their groups, do not overlap
        spans = sorted(
            (float(x) - text_width(t, 12) / 2, float(x) + text_width(t, 12) / 2)
            for x, t, _ in labels
        )
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:], strict=False)), spans


def test_a_peak_label_starts_past_the_hbm_line_that_would_cross_it() -> None:
    from shardviz.render.svg import text_width

    from .compare_fixtures import on_target, small_hbm

    c = comparison()
    top = max(memory_total(r.memory) for r in c.results)
    # an HBM just past the biggest bar's end: its line would run through that bar's label
    hw = dataclasses.replace(small_hbm(), hbm_bytes=int(top * 1.04))
    out = comparison_html(
        dataclasses.replace(c, results=tuple(on_target(r, hw) for r in c.results))
    )
    rows = re.findall(r'<g class="sv-cmp-memrow".*?</g>', out, re.S)
    assert len(rows) == len(c.results)
    for row in rows:
        line = float(re.search(r'class="sv-cmp-hbm" data-hbm="\d+" d="M([\d.]+) ', row).group(1))
        x, text = re.search(
            r'<text class="sv-cmp-val" x="([\d.]+)"[^>]*>([^<]*peak)</text>', row
        ).groups()
        start = float(x)
        assert not (start - 2 <= line <= start + text_width(text, 11) + 2), (line, start, text)


def _text_boxes(svg: str) -> list[tuple[float, float, float, str]]:
    """Each ``<text>`` of a chart as (left, right, baseline, text), by the widths views use."""
    from shardviz.render.svg import text_width

    out = []
    for attrs, text in re.findall(r"<text ([^>]*)>([^<]*)", svg):
        x, y = (
            float(re.search(r'x="([\d.]+)"', attrs)[1]),
            float(re.search(r'y="([\d.]+)"', attrs)[1]),
        )
        w = text_width(text, 12 if "sv-cmp-lab" in attrs else 10)
        if "text-anchor:middle" in attrs or 'text-anchor="middle"' in attrs:
            x -= w / 2
        elif 'text-anchor="end"' in attrs:
            x -= w
        out.append((x, x + w, y, text))
    return out


def test_no_two_labels_on_a_transfer_chart_overlap() -> None:
    from .compare_fixtures import comparison_targets
    from .host_fixtures import comparison_two_hosts

    for c in (comparison(), comparison_edges(), comparison_targets(), comparison_two_hosts()):
        out = comparison_html(c)
        charts = re.findall(r'<svg class="sv-cmp-chart sv-cmp-movedchart".*?</svg>', out, re.S)
        assert len(charts) == 2
        for chart in charts:
            boxes = _text_boxes(chart)
            for i, a in enumerate(boxes):
                for b in boxes[i + 1 :]:
                    apart = a[1] <= b[0] + 0.5 or b[1] <= a[0] + 0.5 or abs(a[2] - b[2]) >= 10
                    assert apart, f"{a} overlaps {b}"


def test_value_labels_of_neighbouring_bars_of_one_height_are_not_drawn_over_each_other() -> None:
    c = comparison()
    fsdp = c.result("fsdp")
    # fsdp's three kinds move the same 768.5 KiB: each label is a little wider than its bar
    same = tuple(dataclasses.replace(x, moved_bytes=786_944) for x in fsdp.collectives)
    fsdp = dataclasses.replace(fsdp, collectives=same)
    c = dataclasses.replace(
        c, results=tuple(fsdp if r.strategy == "fsdp" else r for r in c.results)
    )
    chart = re.search(
        r'<svg class="sv-cmp-chart sv-cmp-movedchart".*?</svg>', comparison_html(c), re.S
    )
    assert chart is not None
    labels = [b for b in _text_boxes(chart.group(0)) if b[3] == "768.5 KiB"]
    assert len(labels) == 2, labels  # the first and the third: the second would overlap both
    assert labels[0][1] <= labels[1][0]
