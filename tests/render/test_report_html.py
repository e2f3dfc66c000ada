"""The report's HTML view: ledger rows and their group maps, reshard links, memory bars, the
check badge, escaping, no network, and size on a big ledger."""

from __future__ import annotations

import dataclasses
import re
from collections import defaultdict

import pytest

from shardviz.render.html import array_html, page
from shardviz.render.report.html import report_html
from shardviz.render.report.view import MAX_RESHARD_TILES

from .fixtures import make_mesh
from .report_fixtures import (
    NASTY,
    REPORTS,
    coll,
    compile_only_report,
    dp_report,
    fsdp_report,
    large_report,
    megatron_report,
    nasty_report,
    shard_map_report,
)
from .test_html import Doc


def assert_offline(text: str) -> None:
    """No URL, no script, no import; the only links are ``#fragment`` anchors."""
    low = text.lower()
    assert "http://" not in low and "https://" not in low
    assert "@import" not in low and "<script" not in low
    assert not re.search(r"url\(\s*['\"]?(?!#)", low)
    for tag, attrs in Doc(text).elements:
        assert tag not in ("script", "link", "iframe", "img", "object", "embed")
        for name in ("src", "xlink:href", "srcset", "action"):
            assert name not in attrs, f"<{tag} {name}=...>"
        href = attrs.get("href")
        if href is not None:
            assert href.startswith("#") and not href.startswith("//"), href


def groups_on_map(out: str, index: int) -> dict[int, set[int]]:
    """Device ids by data-group on the group map of ledger row ``index``."""
    row = re.search(
        rf'<details class="sv-collective" id="sv[0-9a-f]+-c{index}".*?</details>', out, re.S
    )
    assert row, f"no ledger row {index}"
    groups: dict[int, set[int]] = defaultdict(set)
    for tag, attrs in Doc(row.group(0)).elements:
        cls = (attrs.get("class") or "").split()
        if tag == "g" and "sv-gdev" in cls and attrs.get("data-group") is not None:
            groups[int(attrs["data-group"])].add(int(attrs["data-device"]))
    return dict(groups)


@pytest.mark.parametrize("name", sorted(REPORTS))
def test_one_row_per_collective_with_kind_and_axes(name: str) -> None:
    report = REPORTS[name]()
    out = report_html(report)
    doc = Doc(out)
    rows = doc.with_class("sv-collective")
    assert len(rows) == len(report.collectives)
    got = sorted((r["data-kind"], r["data-axes"]) for r in rows)
    want = sorted((c.kind, ",".join(c.axes)) for c in report.collectives)
    assert got == want
    assert all(
        tag == "details" for tag, a in doc.elements if "sv-collective" in (a.get("class") or "")
    )
    inter = doc.with_class("sv-intermediate")
    assert len(inter) == len(report.intermediates)
    assert sum(r.get("data-reshard") == "1" for r in inter) == len(report.reshards)
    assert_offline(out)
    assert report._repr_html_() == out == report_html(REPORTS[name]())


def test_ledger_grouped_by_axes_in_order() -> None:
    out = report_html(shard_map_report())
    text = Doc(out).all_text
    model = text.index("over ('model',)")
    data = text.index("over ('data',)")
    assert model < data
    assert "3 collectives · in 48 KiB · moved 52 KiB per device" in text
    ledgers = Doc(out).with_class("sv-ledger")
    assert [x["data-axes"] for x in ledgers] == ["model", "data"]


def test_data_all_reduce_groups_columns_of_the_mesh() -> None:
    out = report_html(dp_report())
    groups = groups_on_map(out, 2)
    assert sorted(map(sorted, groups.values())) == [[0, 4], [1, 5], [2, 6], [3, 7]]
    g0 = next(g for g, ids in groups.items() if 0 in ids)
    assert groups[g0] == {0, 4}


def test_model_all_reduce_groups_rows_of_the_mesh() -> None:
    out = report_html(megatron_report())
    groups = groups_on_map(out, 1)
    assert sorted(map(sorted, groups.values())) == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert "over <code>(&#x27;model&#x27;,)</code>" in out


def test_devices_outside_every_group_are_dim() -> None:
    report = dp_report()
    partial = dataclasses.replace(report.collectives[0], groups=((0, 4),))
    out = report_html(dataclasses.replace(report, collectives=(partial,)))
    doc = Doc(out)
    dim = [a for a in doc.with_class("sv-gdev") if "sv-out" in a["class"].split()]
    assert sorted(int(a["data-device"]) for a in dim) == [1, 2, 3, 5, 6, 7]
    assert all("data-group" not in a for a in dim)


def test_permute_pairs_are_arrows_and_listed() -> None:
    out = report_html(shard_map_report())
    row = re.search(r'<details class="sv-collective"[^>]*-c2".*?</details>', out, re.S).group(0)
    assert 'data-kind="collective-permute"' in row
    assert row.count('class="sv-arrowhead"') == 8
    text = Doc(row).all_text
    assert "8 pairs: d0→d1 d1→d2 d2→d3 d3→d0 d4→d5 d5→d6 d6→d7 d7→d4" in text
    assert "sends to d1 · receives from d3" in text  # d0's hover text
    groups = groups_on_map(out, 2)
    assert sorted(map(sorted, groups.values())) == [[0, 1, 2, 3], [4, 5, 6, 7]]


def test_open_row_draws_who_sends_to_whom() -> None:
    out = report_html(shard_map_report())
    rows = re.findall(r'<details class="sv-collective".*?</details>', out, re.S)
    want = {"all-reduce": ("ring", 8), "collective-permute": ("pairs", 8)}
    want |= {"all-to-all": ("all-pairs", 2 * 4 * 3), "all-gather": ("ring", 4 * 2)}
    for row in rows:
        doc = Doc(row)
        (fig,) = doc.with_class("sv-traffic")
        kind = re.search(r'data-kind="([^"]+)"', row).group(1)
        pattern, arrows = want[kind]
        assert fig["data-pattern"] == pattern, kind
        assert len(doc.with_class("sv-tarrow")) == arrows, kind
        assert "who sends to whom" in doc.all_text


def test_big_ledger_says_who_sends_to_whom_in_words() -> None:
    doc = Doc(report_html(large_report()))
    assert not doc.with_class("sv-traffic")  # no picture per row on a page this big
    assert len(doc.with_class("sv-twords")) == 200


def test_reshards_link_both_ways() -> None:
    out = report_html(dp_report())
    doc = Doc(out)
    rows = {a["id"]: a for a in doc.with_class("sv-intermediate")}
    reshard_ids = sorted(i for i, a in rows.items() if a.get("data-reshard") == "1")
    assert [i.rsplit("-", 1)[1] for i in reshard_ids] == ["i5", "i7", "i9"]
    ids = {a.get("id") for _, a in doc.elements if a.get("id")}
    hrefs = [a["href"] for t, a in doc.elements if t == "a"]
    assert hrefs and all(h[1:] in ids for h in hrefs)  # every link lands
    prefix = reshard_ids[0].rsplit("-", 1)[0]
    assert f"#{prefix}-i9" in hrefs and f"#{prefix}-c3" in hrefs
    assert '<span class="sv-pill sv-rs">reshard</span>' in out


def test_memory_bars_carry_the_numbers() -> None:
    report = dp_report()
    m = report.memory
    out = report_html(report)
    doc = Doc(out)
    segs = {a["data-part"]: int(a["data-bytes"]) for a in doc.with_class("sv-seg")}
    assert segs["argument"] == m.argument_bytes
    assert segs["output"] == m.output_bytes - m.alias_bytes
    assert segs["temp"] == m.temp_bytes
    assert segs["role:param"] == 3 * 1024 * 1024 and segs["role:batch"] == 96 * 1024
    parts = {a["data-part"]: int(a["data-bytes"]) for a in doc.with_class("sv-mempart")}
    assert parts["alias"] == m.alias_bytes and parts["peak"] == m.peak_bytes
    text = doc.all_text
    assert f"{m.peak_bytes:,} B" in text and "6.3 MiB" in text
    assert "outputs written into donated argument buffers" in text
    assert len(doc.with_class("sv-leafrow")) == len(m.by_leaf)


def test_check_badges() -> None:
    ok = Doc(report_html(dp_report()))
    bad = Doc(report_html(shard_map_report()))
    none = Doc(report_html(compile_only_report()))
    assert {a["class"] for a in ok.with_class("sv-check")} == {"sv-badge sv-check sv-ok"}
    assert {a["class"] for a in bad.with_class("sv-check")} == {"sv-badge sv-check sv-bad"}
    assert "MISMATCH" in bad.all_text and "OK" in ok.all_text
    assert {a["class"] for a in none.with_class("sv-check")} == {"sv-badge sv-check sv-none"}


def test_compile_only_notes_are_prominent() -> None:
    out = report_html(compile_only_report())
    doc = Doc(out)
    assert doc.with_class("sv-notes") and doc.with_class("sv-compile")
    notes = out[out.index('class="sv-notes"') :]
    assert "compiled for a TPU v5 lite topology and not run" in notes
    assert out.index('class="sv-notes"') < out.index("<h4>Collectives")
    assert "not measured (compile-only)" in doc.all_text
    assert not doc.with_class("sv-illustrative")


def test_profile_is_labelled_illustrative() -> None:
    doc = Doc(report_html(REPORTS["profile"]()))
    assert doc.with_class("sv-illustrative")
    assert len(doc.with_class("sv-op")) == 6
    assert "31.9%" in doc.all_text


def test_every_model_string_is_escaped() -> None:
    out = report_html(nasty_report())
    low = out.lower()
    assert "<script" not in low and "<b>cpu" not in out and "k&<i>" not in out
    assert 'a"b' not in out and "c&d" not in out and "<f4" not in out and "x&y" not in out
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in out
    assert "a&quot;b&#x27;c&amp;d" in out
    # attributes too: the axes and the kind are escaped inside data-* values
    assert 'data-axes="&lt;script&gt;alert(1)&lt;/script&gt;"' in out
    assert 'data-kind="weird-&lt;script&gt;' in out
    doc = Doc(out)  # still balanced
    assert NASTY in doc.all_text  # and a reader sees the original string
    assert_offline(out)
    assert_offline(page(nasty_report().function, [out]))


def test_large_ledger_stays_small() -> None:
    report = large_report()
    out = report_html(report)
    assert len(out.encode()) < 1_000_000
    assert len(out.encode()) < 700_000  # today ~550 kB
    doc = Doc(out)
    assert len(doc.with_class("sv-collective")) == 200
    assert len(doc.with_class("sv-gdev")) <= 6 * 100  # one map per distinct set of groups
    assert "same device groups as" in doc.all_text
    assert doc.with_class("sv-gap")  # intermediates without a reshard folded
    assert_offline(out)


def test_saved_page(tmp_path) -> None:
    path = dp_report().save_html(str(tmp_path / "r.html"))
    with open(path, encoding="utf-8") as f:
        text = f.read()
    assert text.startswith("<!doctype html>") and "sv-report" in text
    assert_offline(text)


def test_three_axis_mesh_draws_one_panel_per_leading_index() -> None:
    mesh = make_mesh(("pipe", "data", "model"), (2, 2, 2))
    c = coll("all-reduce.1", "all-reduce", (8,), (8,), ((0, 2), (1, 3), (4, 6), (5, 7)), ("data",))
    report = dataclasses.replace(dp_report(), mesh=mesh, collectives=(c,), intermediates=())
    out = report_html(report)
    doc = Doc(out)
    assert len(doc.with_class("sv-gdev")) == 8
    assert "pipe=0" in doc.all_text and "pipe=1" in doc.all_text
    assert sorted(map(sorted, groups_on_map(out, 1).values())) == [[0, 2], [1, 3], [4, 6], [5, 7]]


def test_sparse_reports_render() -> None:
    """No mesh, no collectives, no intermediates, nothing optional: both views still render."""
    base = compile_only_report()
    bare = dataclasses.replace(
        base, mesh=None, collectives=(), intermediates=(), cost=None, profile=(), notes=()
    )
    out = report_html(bare)
    text = Doc(out).all_text
    assert "none: every value stays where the specs put it" in text
    assert "not available from this backend" in text
    assert_offline(out)
    no_mesh = dataclasses.replace(base, mesh=None)
    assert "no mesh to draw the groups on" in Doc(report_html(no_mesh)).all_text
    assert "no mesh (one device)" in str(no_mesh)
    assert "Collectives · 0" in str(bare) and "Profile · 0 ops" in str(bare)


# --------------------------------------------------------------------------------------------
# Estimates on a target


@pytest.mark.parametrize("name", ["dp_v5e", "fsdp_h100", "deviceless_v5e"])
def test_estimate_section_labels_and_ledger_cells(name: str) -> None:
    report = REPORTS[name]()
    e, target = report.estimate, report.target
    assert e is not None and target is not None
    out = report_html(report)
    doc = Doc(out)
    [section] = doc.with_class("sv-estimate")
    assert section["data-target"] == target.label
    assert section["data-bound"] == e.bound
    assert section["data-fits"] == ("1" if e.fits else "0")
    parts = [r["data-part"] for r in doc.with_class("sv-est-row")]
    assert parts == ["step", "compute", "memory", "communication", "mfu", "hfu", "hbm"]
    assert "a lower bound, not a measurement" in out
    assert f"Estimate on {target.label}" in out
    [bar] = doc.with_class("sv-hbm")
    assert int(bar["data-hbm"]) == e.hbm_bytes == target.hardware.hbm_bytes
    assert int(bar["data-peak"]) == e.peak_bytes
    cells = doc.with_class("sv-est-cell")
    assert [float(c["data-seconds"]) for c in cells] == [
        c.estimated_seconds for c in report.collectives
    ]
    assert all("sv-est" in (a.get("class") or "") for a in doc.with_class("sv-ledger"))
    assert_offline(out)


def test_cpu_report_says_it_is_estimated_as_the_target() -> None:
    from .report_fixtures import dp_v5e_report

    report = dp_v5e_report()
    out = report_html(report)
    assert len(Doc(out).with_class("sv-target")) == 1
    assert report.target is not None
    assert f"estimated as if this mesh were {report.target.label}" in out


def test_no_estimate_no_estimate_markup() -> None:
    for name in ("dp", "compile_only"):
        out = report_html(REPORTS[name]())
        assert "sv-estimate" not in out and "sv-est-cell" not in out and "sv-hbm" not in out
        assert "sv-ledger sv-est" not in out


def test_estimate_strings_are_escaped() -> None:
    from .report_fixtures import QUOTES, nasty_estimate_report

    out = report_html(nasty_estimate_report())
    assert NASTY not in out
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in out
    assert "placed &lt;script&gt;" in out  # the placement note
    assert "f &lt;script&gt;" in out  # a collective's formula
    assert QUOTES not in out
    assert_offline(out)
    Doc(out)  # parses


# --------------------------------------------------------------------------------------------
# The tiles of reshard points


def tile_grids(out: str) -> list[tuple[str, int]]:
    """``(data-name, tiles drawn)`` per reshard point's tiles, in page order."""
    doc = Doc(out)
    grids: list[tuple[str, int]] = []
    for tag, attrs in doc.elements:
        cls = (attrs.get("class") or "").split()
        if tag == "details" and "sv-itiles" in cls:
            grids.append((attrs["data-name"] or "", 0))
        elif tag == "g" and "sv-tile" in cls and grids:
            name, n = grids[-1]
            grids[-1] = (name, n + 1)
    return grids


@pytest.mark.parametrize("name", sorted(REPORTS))
def test_one_collapsed_tile_grid_per_reshard_point_with_a_spec(name: str) -> None:
    report = REPORTS[name]()
    out = report_html(report)
    with_spec = [s for s in report.reshards if s.spec is not None]
    want = with_spec[:MAX_RESHARD_TILES]
    assert [n for n, _ in tile_grids(out)] == [s.name for s in want]
    assert out.count('<div class="sv-root sv-array">') == len(want)
    assert len(Doc(out).with_class("sv-tiles-row")) == len(want)
    assert all("open" not in a for a in Doc(out).with_class("sv-itiles"))  # collapsed
    for s in want:  # each is the array view of the value, right under the value's row
        layout = report.intermediate_layout(s.name)
        row = re.search(rf'<tr class="sv-intermediate" id="sv[0-9a-f]+-i\d+" data-reshard="1">'
                        rf"(?:(?!</tr>).)*<code>{re.escape(s.name)}</code>.*?</tr>(<tr.*?</tr>)",
                        out, re.S)  # fmt: skip
        assert row and array_html(layout) in row.group(1), s.name
    if want:
        assert "print(report.intermediate_layout(name))" in out


def test_small_reshard_points_draw_their_hand_computed_tiles() -> None:
    """dp: reduce.5 (a scalar) and dot.7, dot.9 (replicated) are each one tile on all 8
    devices; fsdp's dot.9 is (1024, 256) over ('data', 'model'): 8 tiles of 128 rows."""
    assert tile_grids(report_html(dp_report())) == [("reduce.5", 1), ("dot.7", 1), ("dot.9", 1)]
    out = report_html(dataclasses.replace(fsdp_report(), intermediates=fsdp_report().reshards[4:]))
    assert tile_grids(out) == [("dot.9", 8), ("dot.11", 8)]
    doc = Doc(out)
    holders = [a["data-devices"] for a in doc.with_class("sv-tile")][:8]
    assert holders == [str(d) for d in range(8)]  # one device per tile: d0 holds rows 0:128
    assert "[0:128, 0:256]" in doc.all_text and "[896:1024, 0:256]" in doc.all_text


def test_tile_grids_are_capped_and_said_so() -> None:
    report = fsdp_report()
    assert len(report.reshards) > MAX_RESHARD_TILES
    out = report_html(report)
    assert len(tile_grids(out)) == MAX_RESHARD_TILES
    r = len(report.reshards)
    assert f"(drawn for {MAX_RESHARD_TILES} of the {r})" in Doc(out).all_text
    big = report_html(large_report())
    assert len(tile_grids(big)) == MAX_RESHARD_TILES == big.count("sv-root sv-array")


def test_no_spec_no_mesh_no_tiles() -> None:
    dp = dp_report()
    for report in (
        dataclasses.replace(dp, mesh=None),
        dataclasses.replace(dp, intermediates=tuple(
            dataclasses.replace(s, spec=None) for s in dp.intermediates
        )),
    ):  # fmt: skip
        out = report_html(report)
        assert tile_grids(out) == [] and "sv-array" not in out
        assert "intermediate_layout" not in out


def test_tile_grids_escape_every_string() -> None:
    """The nasty report's reshard point, with a dtype whose size is known, gets drawn."""
    nasty = nasty_report()
    value = dataclasses.replace(nasty.intermediates[0], dtype="float32")
    report = dataclasses.replace(nasty, intermediates=(value, *nasty.intermediates[1:]))
    out = report_html(report)
    grids = tile_grids(out)
    assert [n for n, _ in grids] == [f"v{NASTY}"] and grids[0][1] == 2
    assert NASTY not in out and "<script" not in out.lower()
    assert f"tiles of v{NASTY}" in Doc(out).all_text
    assert_offline(out)


def test_a_cut_line_in_the_ledger_keeps_its_whole_text_on_hover() -> None:
    """What the ledger cuts with an ellipsis to fit a 790 px output (a call chain, a source
    line, a memory segment's label) carries its whole text in a title (issue 40)."""
    from shardviz.render.report.html import REPORT_CSS, _seg, _source_cell

    cell = _source_cell(None)
    assert re.search(r'<span class="sv-chain" title="[^"]+">', cell), cell
    seg = _seg("params", 1234, 10_000, "#fff", "params (4)")
    assert 'title="params (4) 1.2 KiB (1,234 B)"' in seg
    assert "text-overflow:ellipsis" in REPORT_CSS.split(".sv-report .sv-seg{")[1].split("}")[0]
