"""Trees side by side on one scale (``sv.on_one_scale``): the model, its text view (pinned by
tests/golden/side_by_side.txt) and its HTML view (bar heights in proportion, labels, escaping)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import shardviz as sv
from shardviz.errors import LeafError, ShardvizError
from shardviz.model import TreeLayout, TreesOnOneScale, on_one_scale
from shardviz.model.units import format_bytes
from shardviz.render.side_by_side import side_by_side_html, side_by_side_page, side_by_side_text

from .fixtures import make_layout, make_mesh, mesh_2x4, tree_uneven
from .test_html import Doc, assert_offline

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "side_by_side.txt"
UPDATE = os.environ.get("SHARDVIZ_UPDATE_GOLDEN") == "1"


def _state(spec: tuple) -> TreeLayout:
    """A weight and a bias on the 2 x 4 mesh, both placed with ``spec`` on their first dim."""
    mesh = mesh_2x4()
    return TreeLayout(
        (
            make_layout("params/w", (8, 16), (spec, None), mesh),
            make_layout("params/b", (16,), (spec,), mesh),
        )
    )


def replicated() -> TreeLayout:
    return _state(())


def cut_eight_ways() -> TreeLayout:
    return _state(("data", "model"))


def picture() -> TreesOnOneScale:
    return on_one_scale(
        replicated(), cut_eight_ways(), tree_uneven(), titles=["replicated", "FSDP", "uneven"]
    )


# --------------------------------------------------------------------------------------------
# The model


def test_the_scale_is_the_largest_device_of_all_the_trees() -> None:
    p = picture()
    assert p.largest == (576, 72, 44)
    assert p.scale == 576
    assert p.fractions == (1.0, 0.125, 44 / 576)
    assert list(p) == list(zip(("replicated", "FSDP", "uneven"), p.trees, strict=True))
    assert len(p) == 3


def test_sv_exports_it_and_arrays_count_as_trees_of_one_leaf() -> None:
    assert sv.on_one_scale is on_one_scale and sv.TreesOnOneScale is TreesOnOneScale
    w = make_layout("w", (8, 16), ("data", "model"), mesh_2x4())
    p = on_one_scale(replicated(), w)
    assert p.titles == ("tree 1", "w")
    assert p.trees[1].leaves == (w,)


def test_it_round_trips_through_json() -> None:
    p = picture()
    back = TreesOnOneScale.from_json(p.to_json())
    assert back.titles == p.titles and back.trees == p.trees
    assert str(back) == str(p)


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "match"),
    [
        ((), {}, ShardvizError, "no trees were given"),
        (({"w": 1},), {}, LeafError, "argument 1 is a dict.*sv.layout_tree"),
        ((replicated(), cut_eight_ways()), {"titles": ["one"]}, ShardvizError, "one title per"),
        ((replicated(),), {"titles": "one"}, ShardvizError, "is one string"),
    ],
    ids=["empty", "not-laid-out", "titles-count", "titles-string"],
)
def test_mistakes_say_how_to_fix_them(args, kwargs, error, match) -> None:
    with pytest.raises(error, match=match):
        on_one_scale(*args, **kwargs)


def test_the_dataclass_checks_one_title_per_tree() -> None:
    with pytest.raises(ShardvizError, match="1 tree.*2 title"):
        TreesOnOneScale((replicated(),), ("a", "b"))


def test_print_notebook_html_and_save_html_use_the_registered_views(tmp_path: Path) -> None:
    p = picture()
    assert str(p) == side_by_side_text(p)
    assert p._repr_html_() == side_by_side_html(p)
    path = p.save_html(str(tmp_path / "scale.html"))
    assert Path(path).read_text(encoding="utf-8") == side_by_side_page(p)
    assert "<title>shardviz: replicated · FSDP · uneven</title>" in side_by_side_page(p)


# --------------------------------------------------------------------------------------------
# Text


def test_text_view_matches_the_golden_file() -> None:
    out = side_by_side_text(picture())
    if UPDATE:
        GOLDEN.write_text(out + "\n", encoding="utf-8")
    assert out + "\n" == GOLDEN.read_text(encoding="utf-8")


def test_text_bars_share_one_full_length() -> None:
    lines = side_by_side_text(on_one_scale(replicated(), cut_eight_ways())).splitlines()
    assert lines[0] == "2 trees on one scale: a full bar is 576 B per device"
    bars = [line for line in lines if line.startswith("  d0-d7")]
    assert bars == [
        "  d0-d7  " + "█" * 32 + "  576 B",
        "  d0-d7  " + "█" * 4 + "░" * 28 + "  72 B",
    ]
    assert "  tallest bar 12.5% of the scale · all devices together 576 B · counted once 576 B" in (
        lines
    )
    assert all(len(line) < 100 for line in lines)


def test_text_of_many_different_devices_gives_min_median_max() -> None:
    # On a 16 x 2 mesh, 3 columns cut over 'b' leave the even devices 2 and the odd ones 1.
    mesh = make_mesh(("a", "b"), (16, 2))
    alternating = TreeLayout((make_layout("u", (4, 3), (None, "b"), mesh),))
    lines = side_by_side_text(on_one_scale(alternating, titles=["many"])).splitlines()
    assert lines[3:6] == [
        "  min     " + "█" * 16 + "░" * 16 + "  16 B",
        "  median  " + "█" * 32 + "  32 B",
        "  max     " + "█" * 32 + "  32 B",
    ]


# --------------------------------------------------------------------------------------------
# HTML


def _bars_by_panel(out: str) -> dict[str, dict[int, float]]:
    """Panel title -> device -> bar height, read in document order."""
    heights: dict[str, dict[int, float]] = {}
    title = ""
    for tag, attrs in Doc(out).elements:
        if tag == "figure" and "sv-side-panel" in (attrs.get("class") or ""):
            title = attrs["data-title"] or ""
            heights[title] = {}
        if tag == "rect" and "sv-bar" in (attrs.get("class") or "").split():
            heights[title][int(attrs["data-device"] or -1)] = float(attrs["height"] or 0)
    return heights


def test_html_bars_are_in_proportion_across_panels() -> None:
    bars = _bars_by_panel(side_by_side_html(picture()))
    assert list(bars) == ["replicated", "FSDP", "uneven"]
    tall, short, uneven = bars["replicated"], bars["FSDP"], bars["uneven"]
    assert sorted(tall) == sorted(short) == list(range(8))
    assert len(set(tall.values())) == 1
    for d in tall:
        assert short[d] * 8 == pytest.approx(tall[d])
        # heights are written to 0.1 px
        assert uneven[d] == pytest.approx(
            tall[d] * tree_uneven().bytes_per_device[d] / 576, abs=0.06
        )


def test_html_labels_the_scale_each_panel_and_its_leaves() -> None:
    out = side_by_side_html(picture())
    doc = Doc(out)
    text = doc.all_text
    assert "3 trees on one scale" in text and "a full bar is 576 B per device" in text
    captions = [data for data in doc.text if data in ("replicated", "FSDP", "uneven")]
    assert captions == ["replicated", "FSDP", "uneven"]
    assert "tallest bar 72 B, 12.5% of the scale" in text
    assert text.count(format_bytes(576)) >= 3  # every chart's axis tops out at the scale
    assert [a.get("class") for t, a in doc.elements if t == "details"] == [None] * 3
    assert "params/w" in text and "P(('data', 'model'), None)" in text
    assert "Mesh ('data': 2, 'model': 4)" in text  # all on one mesh: said once
    assert_offline(out)


def test_html_escapes_titles_and_leaf_names() -> None:
    mesh = mesh_2x4()
    nasty = TreeLayout((make_layout("<img src=x>", (8,), (), mesh),))
    out = side_by_side_html(on_one_scale(nasty, titles=['<script>alert("t")</script>']))
    assert "<script>alert" not in out and "<img src" not in out
    assert "&lt;script&gt;" in out and "&lt;img src=x&gt;" in out
    assert_offline(out)


def test_an_empty_tree_draws_no_bars() -> None:
    out = side_by_side_html(on_one_scale(TreeLayout(()), titles=["nothing"]))
    assert not Doc(out).with_class("sv-bar")
    assert "0 leaves" in Doc(out).all_text
    assert side_by_side_text(on_one_scale(TreeLayout(()))).splitlines()[2:4] == [
        "tree 1 · 0 leaves · no leaves",
        "  no devices",
    ]
