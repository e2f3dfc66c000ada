"""The shared geometry: page/panel choice, elision, band sizes, labels, colours."""

from __future__ import annotations

import math
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shardviz.model import ArrayLayout, Tile
from shardviz.model.units import format_bytes
from shardviz.render.colors import DARK_TEXT, _luminance, device_color, text_color_for
from shardviz.render.geometry import (
    GAP_PX,
    MESH_CELL_H,
    MESH_GAP,
    ArrayPanel,
    Band,
    MeshPanel,
    PanelGap,
    array_band_sizes,
    array_grid,
    band_sizes,
    devices_label,
    elide,
    gap_notes,
    gap_tip,
    mesh_band_sizes,
    mesh_cell_tip,
    mesh_grid,
    mesh_panels_text,
    offsets,
    page_dims,
)

from .fixtures import make_layout, make_mesh, mesh_2x4, mesh_2x64, mesh_2x1024, mesh_3axis

NO_ELISION = 10**9


def slots(n: int, limit: int = 12, keep: int = 5) -> list[int | tuple[int, int]]:
    """:func:`elide` with the slot numbers shown and the gap as its ``(first, stop)``."""
    return elide(n, lambda i: i, lambda first, stop: (first, stop), limit, keep)


def test_elide_keeps_both_ends_around_one_gap() -> None:
    assert slots(0) == []
    assert slots(12) == list(range(12))
    assert slots(13) == [0, 1, 2, 3, 4, (5, 8), 8, 9, 10, 11, 12]
    assert slots(2048) == [0, 1, 2, 3, 4, (5, 2043), 2043, 2044, 2045, 2046, 2047]
    assert slots(7, limit=6, keep=2) == [0, 1, (2, 5), 5, 6]


def test_every_elided_run_uses_the_one_rule() -> None:
    """Page axes and panels of arrays and meshes hide the same slots, and each gap stands for
    exactly the slots it hides."""
    mesh = make_mesh(("x", "data", "model"), (16, 2, 64))
    layout = make_layout("stack", (32, 4, 128), ("x", "data", "model"), mesh)
    cases = [
        (mesh_grid(mesh), ["4", "+54", "59"], (5, 59), ("x=5", "x=10")),
        (array_grid(layout), ["8:10", "+54", "118:120"], (10, 118),
         ("dim 0 = 10:12", "dim 0 = 20:22")),
    ]  # fmt: skip
    for grid, labels, span, ends in cases:
        assert [b.label for b in grid.cols.bands][4:7] == labels
        gap = grid.cols.bands[5]
        assert (gap.start, gap.stop, gap.hidden, grid.cols.hidden) == (*span, 54, 54)
        shown = [p.index for p in grid.panels if not isinstance(p, PanelGap)]
        assert shown == [0, 1, 2, 3, 4, 11, 12, 13, 14, 15]
        gaps = [p for p in grid.panels if isinstance(p, PanelGap)]
        assert [(g.hidden, g.after, g.first, g.last) for g in gaps] == [(6, 4, *ends)]


@pytest.mark.parametrize(
    ("ndim", "sharded", "page"),
    [
        (0, [], ()),
        (1, [], (0,)),
        (1, [0], (0,)),
        (2, [], (0, 1)),
        (2, [1], (0, 1)),
        (3, [], (1, 2)),
        (3, [0], (0, 2)),
        (3, [2], (1, 2)),
        (3, [0, 1], (0, 1)),
        (4, [0, 1, 3], (1, 3)),
        (4, [0, 2], (0, 2)),
    ],
)
def test_page_dims(ndim: int, sharded: list[int], page: tuple[int, ...]) -> None:
    assert page_dims(ndim, sharded) == page


def test_array_grid_2d() -> None:
    grid = array_grid(make_layout("w", (8, 16), ("data", "model"), mesh_2x4()))
    assert (grid.rows.dim, grid.cols.dim) == (0, 1)
    assert [b.label for b in grid.cols.bands] == ["0:4", "4:8", "8:12", "12:16"]
    assert grid.rows.title == "dim 0 (8) · 'data'"
    assert grid.panel_count == 1 and grid.panel_dims == ()
    panel = grid.panels[0]
    assert isinstance(panel, ArrayPanel)
    assert panel.cell(1, 2).device_ids == (6,)
    assert panel.cell(1, 2).index_str == "[4:8, 8:12]"


def test_array_grid_replicas_first() -> None:
    grid = array_grid(make_layout("x", (8, 16), ("data", None), mesh_2x4()))
    cells = list(grid.cells())
    assert [c.device_ids for c in cells] == [(0, 1, 2, 3), (4, 5, 6, 7)]
    assert all(c.tiles[0].replica_id == 0 for c in cells)


def test_array_grid_0d_and_1d() -> None:
    g0 = array_grid(make_layout("s", (), (), mesh_2x4()))
    assert not g0.rows.used and not g0.cols.used
    assert [c.device_ids for c in g0.cells()] == [tuple(range(8))]
    g1 = array_grid(make_layout("b", (16,), ("model",), mesh_2x4()))
    assert not g1.rows.used and g1.cols.dim == 0
    assert len(list(g1.cells())) == 4


def test_array_grid_panels_for_nd() -> None:
    grid = array_grid(make_layout("a", (4, 8, 16), ("pipe", "data", "model"), mesh_3axis()))
    assert grid.page_dims == (1, 2) and grid.panel_dims == (0,)
    labels = [p.label for p in grid.panels if isinstance(p, ArrayPanel)]
    assert labels == ["dim 0 = 0:2", "dim 0 = 2:4"]
    unsplit = array_grid(make_layout("h", (4, 8, 16), (None, "data", None), mesh_2x4()))
    assert [p.label for p in unsplit.panels] == ["dim 0 = :"]


def test_elided_grid_is_small() -> None:
    grid = array_grid(make_layout("big", (8, 512), ("data", "model"), mesh_2x64()))
    assert grid.elided
    assert len(grid.cols.bands) == 11 and grid.cols.hidden == 54
    gap = grid.cols.bands[5]
    assert gap.elided and (gap.start, gap.stop) == (40, 472)
    assert len(list(grid.cells())) == 2 * 10


def test_elided_panels() -> None:
    mesh = make_mesh(("x", "data", "model"), (16, 2, 2))
    grid = array_grid(make_layout("s", (32, 4, 8), ("x", "data", "model"), mesh))
    gaps = [p for p in grid.panels if isinstance(p, PanelGap)]
    assert grid.panel_count == 16 and grid.shown_panels == 10
    assert len(gaps) == 1 and gaps[0].hidden == 6
    assert gaps[0].first == "dim 0 = 10:12" and gaps[0].last == "dim 0 = 20:22"


def test_non_grid_tiles_are_each_drawn_once() -> None:
    """Tiles that do not form a product grid still land in exactly one cell each."""
    mesh = make_mesh(("x",), (3,))
    tiles = (
        Tile(0, (slice(0, 4), slice(0, 8)), (4, 8), 128),
        Tile(1, (slice(4, 8), slice(0, 4)), (4, 4), 64),
        Tile(2, (slice(4, 8), slice(4, 8)), (4, 4), 64),
    )
    layout = ArrayLayout("odd", (8, 8), "float32", 4, None, mesh, tiles)
    grid = array_grid(layout)
    held = [c for c in grid.cells() if c.tiles]
    assert sorted(c.device_ids for c in held) == [(0,), (1,), (2,)]


def test_mesh_grid_shapes() -> None:
    assert len(list(mesh_grid(make_mesh((), ())).cells())) == 1
    g1 = mesh_grid(make_mesh(("x",), (4,)))
    assert not g1.rows.used and g1.cols.title == "x (4)"
    g3 = mesh_grid(mesh_3axis())
    assert g3.panel_axes == (0,) and [p.label for p in g3.panels] == ["pipe=0", "pipe=1"]
    panel = g3.panels[1]
    assert isinstance(panel, MeshPanel)
    cell = panel.cell(1, 2)
    assert cell.device.id == 14 and cell.coords == (1, 1, 2)


def test_mesh_grid_elided() -> None:
    grid = mesh_grid(make_mesh(("data", "model"), (2, 1024)))
    assert len(grid.cols.bands) == 11
    ids = [c.device.id for c in grid.cells()]
    assert ids[:5] == [0, 1, 2, 3, 4] and ids[-1] == 2047 and len(ids) == 20


def test_mesh_cell_words() -> None:
    mesh = make_mesh(("pipe", "data", "model"), (2, 2, 4), platform="tpu", kind="TPU v4")
    grid = mesh_grid(mesh)
    panel = grid.panels[1]
    assert isinstance(panel, MeshPanel)
    cell = panel.cell(1, 2)
    assert cell is not None and cell.coord_text == "(1, 1, 2)"
    assert mesh_cell_tip(mesh, cell) == "d14 · pipe=1, data=1, model=2\nprocess 0 · tpu (TPU v4)"
    assert mesh_panels_text(mesh, grid) == "one panel per pipe"
    assert mesh_panels_text(mesh_2x4(), mesh_grid(mesh_2x4())) == ""
    lone = make_mesh((), ())
    (only,) = mesh_grid(lone).cells()
    assert only.coord_text == "" and mesh_cell_tip(lone, only) == "d0\nprocess 0 · cpu"


def test_elided_bands_in_words() -> None:
    grid = mesh_grid(make_mesh(("data", "model"), (2, 1024)))
    gap = grid.cols.bands[5]
    assert (
        gap_tip(grid.cols, gap, "indices") == "1014 more indices of model (1024) not shown (5:1019)"
    )
    assert gap_notes(grid.cols, "indices", "indices") == [
        "… 1014 more indices of model (1024) not shown (indices 5:1019)"
    ]
    assert gap_notes(grid.rows, "indices", "indices") == []


def test_pixel_sizes_of_mesh_and_array_bands() -> None:
    grid = mesh_grid(make_mesh(("data", "model"), (40, 1024)))
    cols, rows = mesh_band_sizes(grid, 60.0)
    assert cols == [60.0] * 5 + [MESH_GAP] + [60.0] * 5
    assert rows == [MESH_CELL_H] * 5 + [MESH_GAP] + [MESH_CELL_H] * 5
    layout = make_layout("x", (64, 4096), (None, "model"), mesh_2x1024())
    cols, rows = array_band_sizes(array_grid(layout))
    assert len(cols) == 11 and cols[5] == GAP_PX and math.isclose(sum(cols), 520)
    assert rows == [130.0]  # one unsplit row: 64 x 4096 is drawn at the widest aspect, 1:4
    assert array_band_sizes(array_grid(make_layout("s", (), (), mesh_2x4()))) == ([140.0], [48.0])


@pytest.mark.parametrize(
    ("shape", "spec", "size"),
    [
        ((512, 128), ("model", None), (90.0, 360.0)),  # tall: 4:1 fills the box's height
        ((128, 512), (None, "model"), (520.0, 130.0)),  # wide: 1:4 fills its width
        ((256, 256), ("data", "model"), (360.0, 360.0)),  # square stays square
        ((8, 4096), ("data", "model"), (520.0, 130.0)),  # 1:512 is clamped to 1:4
        ((4096, 8), ("model", "data"), (90.0, 360.0)),  # 512:1 is clamped to 4:1
        ((64, 96), ("data", "model"), (520.0, 520.0 * 2 / 3)),  # 2:3 keeps 2:3, full width
    ],
)
def test_array_keeps_its_aspect_within_limits(shape, spec, size) -> None:
    cols, rows = array_band_sizes(array_grid(make_layout("w", shape, spec, mesh_2x4())))
    w, h = sum(cols), sum(rows)
    assert math.isclose(w, size[0]) and math.isclose(h, size[1]), (w, h)
    aspect = min(4.0, max(0.25, shape[0] / shape[1]))
    assert math.isclose(h / w, aspect), "height over width is the array's, within 1:4 .. 4:1"


def test_a_tall_array_split_many_ways_grows_to_its_least_row_height() -> None:
    # 16 row bands need 16 * 34 px; the width follows the aspect (up to the box's 520 px).
    mesh = make_mesh(("data", "model"), (4, 4))
    layout = make_layout("w", (1024, 1024), (("data", "model"), None), mesh)
    cols, rows = array_band_sizes(array_grid(layout))
    assert len(rows) >= 11 and min(r for r in rows if r != 22.0) >= 34.0 - 1e-9
    assert math.isclose(sum(cols), min(520.0, sum(rows)))


def test_band_sizes() -> None:
    bands = [Band(0, 1000, ""), Band(1000, 1001, ""), Band(1001, 2000, "")]
    sizes = band_sizes(bands, 300, 20, 26)
    assert math.isclose(sum(sizes), 300)
    assert sizes[1] == 20 and math.isclose(sizes[0], sizes[2], rel_tol=0.01)
    gap = [Band(0, 4, ""), Band(4, 100, "+24", hidden=24), Band(100, 104, "")]
    sizes = band_sizes(gap, 200, 10, 26)
    assert sizes == [87.0, 26, 87.0]
    assert offsets(sizes, 5) == [5, 92.0, 118.0]
    assert band_sizes([Band(0, 0, ""), Band(0, 0, "")], 100, 10, 20) == [50.0, 50.0]


@pytest.mark.parametrize(
    ("ids", "label"),
    [
        ([], "—"),
        ([3], "d3"),
        ([0, 1], "d0,d1"),
        ([0, 1, 2, 3], "d0-d3"),
        ([4, 0], "d4,d0"),  # replica order kept when short
        ([3, 2, 1, 0], "d0-d3"),
        ([0, 1, 2, 3, 8, 9, 10, 11], "d0-d3,d8-d11"),
        ([0, 4, 8, 12], "d0…d12 (4)"),
        (list(range(0, 2048, 2)), "d0…d2046 (1024)"),
    ],
)
def test_devices_label(ids: list[int], label: str) -> None:
    assert devices_label(ids) == label


@pytest.mark.parametrize(
    ("n", "text", "exact"),
    [
        (0, "0 B", "0 B"),
        (512, "512 B", "512 B"),
        (1024, "1 KiB", "1 KiB (1,024 B)"),
        (1536, "1.5 KiB", "1.5 KiB (1,536 B)"),
        (64 * 2**20, "64 MiB", "64 MiB (67,108,864 B)"),
        (3 * 2**40, "3 TiB", "3 TiB (3,298,534,883,328 B)"),
    ],
)
def test_format_bytes(n: int, text: str, exact: str) -> None:
    assert format_bytes(n) == text
    assert format_bytes(n, exact=True) == exact


def test_device_colors() -> None:
    colors = [device_color(i) for i in range(2048)]
    assert colors == [device_color(i) for i in range(2048)]  # deterministic
    assert all(len(c) == 7 and c.startswith("#") for c in colors)
    for start in range(0, 2048 - 32):  # devices close in id never share a colour
        assert len(set(colors[start : start + 32])) == 32
    dark = _luminance(DARK_TEXT)
    for c in colors:
        assert text_color_for(c) == DARK_TEXT
        assert (_luminance(c) + 0.05) / (dark + 0.05) >= 4.5  # WCAG AA for dark labels
    assert text_color_for("#000000") == "#ffffff"


# --------------------------------------------------------------------------------------------
# Property: every distinct tile is drawn exactly once when nothing is elided.


@st.composite
def even_layouts(draw: st.DrawFn) -> ArrayLayout:
    naxes = draw(st.integers(1, 3))
    sizes = draw(st.lists(st.integers(1, 4), min_size=naxes, max_size=naxes))
    names = [f"ax{i}" for i in range(naxes)]
    mesh = make_mesh(names, sizes)
    rank = draw(st.integers(0, 4))
    free = list(names)
    spec = []
    shape = []
    for _ in range(rank):
        k = draw(st.integers(0, min(2, len(free))))
        entry = tuple(draw(st.permutations(free))[:k]) if k else ()
        free = [a for a in free if a not in entry]
        spec.append(entry)
        split = math.prod(mesh.axis_size(a) for a in entry)
        shape.append(split * draw(st.integers(1, 3)))
    return make_layout("p", shape, spec, mesh)


@settings(max_examples=200, deadline=None)
@given(even_layouts())
def test_cells_cover_every_tile_once(layout: ArrayLayout) -> None:
    grid = array_grid(layout, limit=NO_ELISION)
    assert not grid.elided
    keys = Counter(c.key for c in grid.cells())
    distinct = {g[0].key: g for g in layout.distinct_tiles}
    assert set(keys) == set(distinct)
    assert all(n == 1 for n in keys.values())
    for cell in grid.cells():
        assert cell.tiles == distinct[cell.key]
    # The default elision leaves small layouts alone, and then covers them the same way.
    small = array_grid(layout)
    if not small.elided:
        assert Counter(c.key for c in small.cells()) == keys


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(1, 5), min_size=0, max_size=5))
def test_mesh_cells_cover_every_device_once(sizes: list[int]) -> None:
    mesh = make_mesh([f"a{i}" for i in range(len(sizes))], sizes)
    grid = mesh_grid(mesh, limit=NO_ELISION)
    ids = [c.device.id for c in grid.cells()]
    assert sorted(ids) == sorted(mesh.device_ids)
    for cell in grid.cells():
        assert mesh.coords(cell.device.id) == cell.coords
