"""The grid views (a mesh or an array laid out) are the static view's geometry, cell for cell;
they round-trip through JSON, and the HTML and the widgets show their words (issue 43)."""

from __future__ import annotations

import json

import pytest

import shardviz.render.grid_view as gv
from shardviz.model._codec import to_data
from shardviz.render.geometry import (
    ArrayPanel,
    MeshPanel,
    PanelGap,
    array_band_sizes,
    array_grid,
    devices_label,
    mesh_band_sizes,
    mesh_cell_tip,
    mesh_grid,
)
from shardviz.render.grid_view import (
    ArrayGridView,
    MeshGridView,
    TiledArrayView,
    array_grid_view,
    mesh_cell_width,
    mesh_grid_view,
    tiled_array_view,
    tiles_of,
)
from shardviz.render.html import array_html, mesh_html
from shardviz.render.svg import esc
from tests.render.fixtures import make_layout, make_mesh, mesh_2x4

MESHES = [
    (("x",), (8,)),
    (("x",), (40,)),
    (("data", "model"), (2, 4)),
    (("data", "model"), (2, 64)),
    (("a", "b", "c"), (2, 2, 2)),
    (("a", "b", "c"), (20, 2, 2)),
    (("a", "b", "c", "d"), (2, 2, 2, 2)),
]

ARRAYS = [
    ((), ()),
    ((16,), ("model",)),
    ((8, 16), ("data", "model")),
    ((8, 16), (None, "model")),
    ((4, 6, 8), ("data", None, "model")),
    ((2, 4, 6, 8), ("data", "model", None, None)),
]


@pytest.mark.parametrize(("names", "sizes"), MESHES)
def test_mesh_cells_bands_and_panels_are_the_static_views(names, sizes):
    mesh = make_mesh(names, sizes)
    grid = mesh_grid(mesh)
    v = mesh_grid_view(mesh)
    for axis, sent in ((grid.rows, v.rows), (grid.cols, v.cols)):
        assert sent.used == axis.used and sent.title == axis.title
        assert [b[:4] for b in sent.bands] == [
            (b.start, b.stop, b.label, b.hidden) for b in axis.bands
        ]
        assert all(bool(b[4]) == (b[3] > 0) for b in sent.bands), "gaps carry a tip"
    cols, rows = mesh_band_sizes(grid, mesh_cell_width(mesh))
    assert v.col_sizes == tuple(cols) and v.row_sizes == tuple(rows)
    assert len(v.panels) == len(grid.panels)
    for sent, panel in zip(v.panels, grid.panels, strict=True):
        if isinstance(panel, PanelGap):
            assert (sent.gap, sent.label, sent.cells) == (panel.text, "", ())
            continue
        assert isinstance(panel, MeshPanel) and sent.label == panel.label and sent.gap == ""
        assert sent.cells == tuple(
            (c.row, c.col, c.device.id, c.coord_text, mesh_cell_tip(mesh, c)) for c in panel.cells
        )
    assert MeshGridView.from_json(v.to_json()) == v


def test_elided_mesh_sends_few_cells_and_says_what_it_left_out():
    mesh = make_mesh(("a", "b", "c"), (20, 2, 40))
    v = mesh_grid_view(mesh)
    cells = [c for panel in v.panels for c in panel.cells]
    assert len(cells) == 10 * 2 * 10, "10 panels of 2 rows by 10 columns"
    assert sum(bool(panel.gap) for panel in v.panels) == 1
    assert v.summary == "one panel per a"
    assert v.notes == ("… 30 more indices of c (40) not shown (indices 5:35)",)
    assert v.cols.bands[5][4] == "30 more indices of c (40) not shown (5:35)"


@pytest.mark.parametrize(("shape", "spec"), ARRAYS)
def test_array_cells_point_at_their_tiles(shape, spec):
    layout = make_layout("x", shape, spec, make_mesh(("data", "model"), (2, 4)))
    grid = array_grid(layout)
    v = array_grid_view(layout)
    tiles, _ = tiles_of(layout)
    cols, rows = array_band_sizes(grid)
    assert v.col_sizes == tuple(round(x, 1) for x in cols)
    assert v.row_sizes == tuple(round(x, 1) for x in rows)
    drawn = []
    for sent, panel in zip(v.panels, grid.panels, strict=True):
        assert isinstance(panel, ArrayPanel) and sent.label == panel.label
        for (row, col, at), cell in zip(sent.cells, panel.cells, strict=True):
            assert (row, col) == (cell.row, cell.col)
            assert tiles[at].devices == tuple(cell.device_ids)
            assert tiles[at].label == devices_label(cell.device_ids)
            drawn.append(at)
    assert sorted(drawn) == list(range(layout.num_distinct_tiles)), "each tile drawn once"
    assert ArrayGridView.from_json(v.to_json()) == v


def test_array_view_has_the_words_of_the_static_header():
    layout = make_layout("w", (8, 16), ("data", "model"), mesh_2x4())
    v = tiled_array_view(layout)
    assert (v.name, v.value, v.spec_str) == ("w", "float32[8, 16]", "P('data', 'model')")
    assert v.kind == layout.kind and len(v.tiles) == 8
    assert v.grid == array_grid_view(layout)
    assert v.shards == ("(4, 4) · 64 B",)
    assert TiledArrayView.from_json(v.to_json()) == v
    data = to_data(v)
    assert data["tiles"][0]["index"] == [[0, 4], [0, 4]], "tiles are plain JSON arrays"
    json.dumps(data)


def test_the_html_prints_the_views_words():
    """The static HTML takes its summary, notes, captions, gaps and hover texts from the view
    object the widgets sync: a word changed in the view changes in the HTML."""
    mesh = make_mesh(("a", "b", "c"), (20, 2, 40))
    view = mesh_grid_view(mesh)
    html = mesh_html(mesh)
    words = [view.summary, *view.notes, *(p.gap or p.label for p in view.panels)]
    words += [cell[4] for p in view.panels for cell in p.cells]
    for word in words:
        assert esc(word) in html, word


def test_a_word_changed_in_the_view_changes_in_the_html_and_the_widget(monkeypatch):
    """The view is where the grid's words are spelled: reword them there (the summary and the
    notes of elided runs) and the static HTML and ``MeshView``'s synced state both change."""
    from shardviz.widgets.mesh_view import grids_json

    layout = make_layout("w", (64, 16), ("data", None), make_mesh(("data", "model"), (40, 2)))
    plain = array_grid_view(layout)
    assert plain.notes and plain.summary, "an elided array has a summary and notes to change"
    spelled_summary, spelled_notes = gv.page_summary, gv.gap_notes
    monkeypatch.setattr(gv, "page_summary", lambda grid: "ZZ " + spelled_summary(grid))
    monkeypatch.setattr(gv, "gap_notes", lambda *a: [n.upper() for n in spelled_notes(*a)])
    html = array_html(layout)
    grids = json.loads(grids_json(layout.mesh, layout))
    for note in plain.notes:
        assert esc(note.upper()) in html and esc(note) not in html
        assert note.upper() in grids["array"]["grid"]["notes"]
    assert esc("ZZ " + plain.summary) in html
    assert grids["array"]["grid"]["summary"] == "ZZ " + plain.summary
