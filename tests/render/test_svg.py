"""The markup primitives the HTML views share: escaping, numbers, elements, the panel frame."""

from __future__ import annotations

from shardviz.render.geometry import mesh_grid
from shardviz.render.svg import (
    Frame,
    esc,
    svg_num,
    svg_rect,
    svg_text,
    text_width,
    tick_labels,
)

from .fixtures import make_mesh, mesh_2x64


def test_numbers_are_short() -> None:
    assert [svg_num(x) for x in (12, 12.0, 12.5, 12.04, 0.06)] == ["12", "12", "12.5", "12", "0.1"]


def test_elements_escape_the_text_but_not_the_extra_attributes() -> None:
    assert svg_rect(1, 2.5, 3, 4, ' fill="#fff"') == (
        '<rect x="1" y="2.5" width="3" height="4" fill="#fff"/>'
    )
    assert svg_text(0, 1, "<b>&\"'", "sv-lbl", ' text-anchor="end"') == (
        '<text class="sv-lbl" x="0" y="1" text-anchor="end">&lt;b&gt;&amp;&quot;&#x27;</text>'
    )
    assert esc(3) == "3"


def test_text_width_by_font_size() -> None:
    assert text_width("abcd", 10) == 4 * 6.1
    assert text_width("abcd") == 4 * 6.7  # 11 px by default
    assert text_width("ab", 20) == 2 * 20 * 0.61  # sizes without a measured advance


def test_tick_labels_and_an_unused_side() -> None:
    grid = mesh_grid(mesh_2x64())
    assert tick_labels(grid.rows) == ["0", "1"]
    assert tick_labels(grid.cols)[4:7] == ["4", "+54", "59"]
    assert tick_labels(mesh_grid(make_mesh(("data",), (8,))).rows) == [""]


def test_frame_places_bands_after_the_row_labels_and_marks_gaps() -> None:
    grid = mesh_grid(mesh_2x64())
    cols = [24.0 if b.elided else 40.0 for b in grid.cols.bands]
    frame = Frame(grid.rows, grid.cols, cols, [40.0, 40.0], tick_labels(grid.rows))
    assert frame.rotate  # "data (2)" fits along the 80 px of rows: written sideways
    assert frame.top == 34.0 and frame.col_x[0] == frame.left
    assert frame.col_x[1] == frame.left + 40.0
    assert frame.width == frame.left + sum(cols) + 4 and frame.height == 34 + 80 + 4
    gaps = frame.gaps("indices")
    assert len(gaps) == 1 and "54 more indices of model (64) not shown (5:59)" in gaps[0]
    axes = "".join(frame.axes(tick_labels(grid.cols), tick_labels(grid.rows)))
    assert "model (64) →" in axes and 'transform="rotate(-90' in axes


def test_frame_without_rows_or_columns() -> None:
    grid = mesh_grid(make_mesh((), ()))
    frame = Frame(grid.rows, grid.cols, [52.0], [40.0], [])
    assert (frame.left, frame.top) == (4.0, 4.0)
    assert frame.axes([""], [""]) == [] and frame.gaps("indices") == []
