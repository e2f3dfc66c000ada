"""The laid-out grids the widgets are sent are the static view's geometry, cell for cell."""

from __future__ import annotations

import json

import pytest

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
from shardviz.render.html import mesh_cell_width
from shardviz.widgets.grid_payload import (
    array_grid_payload,
    array_view_payload,
    mesh_grid_payload,
    tiles_payload,
)
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
    p = mesh_grid_payload(mesh)
    for side, axis in (("rows", grid.rows), ("cols", grid.cols)):
        assert p[side]["used"] == axis.used and p[side]["title"] == axis.title
        assert [b[:4] for b in p[side]["bands"]] == [
            [b.start, b.stop, b.label, b.hidden] for b in axis.bands
        ]
        assert all(bool(b[4]) == (b[3] > 0) for b in p[side]["bands"]), "gaps carry a tip"
    cols, rows = mesh_band_sizes(grid, mesh_cell_width(mesh))
    assert p["col_sizes"] == cols and p["row_sizes"] == rows
    assert len(p["panels"]) == len(grid.panels)
    for sent, panel in zip(p["panels"], grid.panels, strict=True):
        if isinstance(panel, PanelGap):
            assert sent == {"gap": panel.text}
            continue
        assert isinstance(panel, MeshPanel) and sent["label"] == panel.label
        assert sent["cells"] == [
            [c.row, c.col, c.device.id, c.coord_text, mesh_cell_tip(mesh, c)] for c in panel.cells
        ]


def test_elided_mesh_sends_few_cells_and_says_what_it_left_out():
    mesh = make_mesh(("a", "b", "c"), (20, 2, 40))
    p = mesh_grid_payload(mesh)
    cells = [c for panel in p["panels"] if "cells" in panel for c in panel["cells"]]
    assert len(cells) == 10 * 2 * 10, "10 panels of 2 rows by 10 columns"
    assert sum("gap" in panel for panel in p["panels"]) == 1
    assert p["summary"] == "one panel per a"
    assert p["notes"] == ["… 30 more indices of c (40) not shown (indices 5:35)"]
    assert p["cols"]["bands"][5][4] == "30 more indices of c (40) not shown (5:35)"


@pytest.mark.parametrize(("shape", "spec"), ARRAYS)
def test_array_cells_point_at_their_tiles(shape, spec):
    layout = make_layout("x", shape, spec, make_mesh(("data", "model"), (2, 4)))
    grid = array_grid(layout)
    p = array_grid_payload(layout)
    tiles, _ = tiles_payload(layout)
    cols, rows = array_band_sizes(grid)
    assert p["col_sizes"] == [round(x, 1) for x in cols]
    assert p["row_sizes"] == [round(x, 1) for x in rows]
    drawn = []
    for sent, panel in zip(p["panels"], grid.panels, strict=True):
        assert isinstance(panel, ArrayPanel) and sent["label"] == panel.label
        for (row, col, at), cell in zip(sent["cells"], panel.cells, strict=True):
            assert (row, col) == (cell.row, cell.col)
            assert tiles[at]["devices"] == list(cell.device_ids)
            assert tiles[at]["label"] == devices_label(cell.device_ids)
            drawn.append(at)
    assert sorted(drawn) == list(range(layout.num_distinct_tiles)), "each tile drawn once"


def test_array_view_has_the_words_of_the_static_header():
    layout = make_layout("w", (8, 16), ("data", "model"), mesh_2x4())
    v = array_view_payload(layout)
    assert (v["name"], v["value"], v["spec_str"]) == ("w", "float32[8, 16]", "P('data', 'model')")
    assert v["kind"] == layout.kind and len(v["tiles"]) == 8
    assert v["grid"] == array_grid_payload(layout)
    assert v["shards"] == ["(4, 4) · 64 B"]
    json.dumps(v)  # plain JSON
