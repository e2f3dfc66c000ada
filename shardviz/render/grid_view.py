"""A mesh or an array laid out as a page: the view object the static HTML and the widgets draw.

:mod:`shardviz.render.geometry` decides which cells go where (rows, columns, panels, elided
runs); this module turns that into plain data with every word and size spelled out: band
ticks and the hover text of elided bands, each cell's place and hover text, the pixel size of
every band, the panels' captions, the summary line and one note per elided band. The HTML
(:mod:`shardviz.render.html`) prints its words from these views and the widgets sync their
JSON (``MeshView``'s ``grids``, the Explorer's mesh and tiles), so a word changed here changes
in both.

Cells and bands are tuples rather than objects: a mesh of thousands of devices is sent as
compact arrays (``[row, col, device, coordinate, hover text]``).
"""

from __future__ import annotations

from dataclasses import dataclass

from shardviz.model._codec import JsonMixin
from shardviz.model.array import ArrayLayout
from shardviz.model.mesh import MeshLayout
from shardviz.model.units import format_bytes
from shardviz.render.geometry import (
    ArrayGrid,
    MeshGrid,
    PageAxis,
    PanelGap,
    array_band_sizes,
    array_facts,
    array_grid,
    devices_label,
    format_shape,
    gap_notes,
    gap_tip,
    mesh_band_sizes,
    mesh_cell_tip,
    mesh_grid,
    mesh_panels_text,
    page_summary,
)
from shardviz.render.report.view import value_str
from shardviz.render.svg import text_width

__all__ = [
    "ARRAY_SLOTS",
    "MESH_SLOTS",
    "ArrayGridView",
    "ArrayPanelView",
    "AxisView",
    "MeshGridView",
    "MeshPanelView",
    "TiledArrayView",
    "TileView",
    "array_grid_view",
    "mesh_cell_width",
    "mesh_grid_view",
    "tiled_array_view",
    "tiles_of",
]

#: What one slot of a page axis is, in the words of the elided bands' hover text.
ARRAY_SLOTS, MESH_SLOTS = "intervals", "indices"

#: A band: start, stop, tick label, slots hidden (0 for a drawn band), hover text ("" when drawn).
Band = tuple[int, int, str, int, str]
#: A device's place: row band, column band, device id, coordinate text, hover text.
MeshCell = tuple[int, int, int, str, str]
#: A tile's place: row band, column band, position in the tiles (-1: no device holds it).
ArrayCell = tuple[int, int, int]


def mesh_cell_width(mesh: MeshLayout) -> float:
    """The width (px) of a device cell: room for the largest id, coordinate and process."""
    coord = "(" + ", ".join(str(s - 1) for s in mesh.axis_sizes) + ")"
    ident = f"d{max(mesh.device_ids, default=0)}"
    extra = 2 * text_width("p0", 9) + 4 if mesh.num_processes > 1 else 0.0
    return max(52.0, text_width(coord, 9) + 12, text_width(ident, 11) + 22 + extra)


@dataclass(frozen=True)
class AxisView(JsonMixin):
    """One page axis: whether it is used, its title and its bands."""

    used: bool
    title: str
    bands: tuple[Band, ...]


@dataclass(frozen=True)
class MeshPanelView(JsonMixin):
    """A small multiple of the mesh (``label`` its caption), or, with ``gap`` set, the words
    for the panels left out (no cells)."""

    label: str
    cells: tuple[MeshCell, ...]
    gap: str = ""


@dataclass(frozen=True)
class ArrayPanelView(JsonMixin):
    """A small multiple of an array, or the words for the panels left out (``gap``)."""

    label: str
    cells: tuple[ArrayCell, ...]
    gap: str = ""


@dataclass(frozen=True)
class MeshGridView(JsonMixin):
    """A mesh laid out: its axes, band sizes (px), panels, summary and notes."""

    rows: AxisView
    cols: AxisView
    col_sizes: tuple[float, ...]
    row_sizes: tuple[float, ...]
    panels: tuple[MeshPanelView, ...]
    #: ``one panel per …``, or ``""`` without panels.
    summary: str
    #: One line per elided band.
    notes: tuple[str, ...]


@dataclass(frozen=True)
class ArrayGridView(JsonMixin):
    """An array laid out: as :class:`MeshGridView`, a cell pointing at a tile; ``summary``
    says which dims are where."""

    rows: AxisView
    cols: AxisView
    col_sizes: tuple[float, ...]
    row_sizes: tuple[float, ...]
    panels: tuple[ArrayPanelView, ...]
    summary: str
    notes: tuple[str, ...]


@dataclass(frozen=True)
class TileView(JsonMixin):
    """A distinct tile: its index (``[start, stop]`` per dim), shape, bytes per holder, its
    holders (replica 0's first), their label and its shard's words (a position in
    :attr:`TiledArrayView.shards`)."""

    index: tuple[tuple[int, int], ...]
    shape: tuple[int, ...]
    nbytes: int
    devices: tuple[int, ...]
    label: str
    shard: int


@dataclass(frozen=True)
class TiledArrayView(JsonMixin):
    """An array as a widget draws it: the header's words, its distinct tiles, each shard's
    words (``(4, 8) · 128 B``, once each) and its grid."""

    name: str
    value: str
    spec_str: str
    kind: str
    tiles: tuple[TileView, ...]
    shards: tuple[str, ...]
    grid: ArrayGridView


def _axis(axis: PageAxis, what: str) -> AxisView:
    return AxisView(
        axis.used,
        axis.title,
        tuple(
            (b.start, b.stop, b.label, b.hidden, gap_tip(axis, b, what) if b.elided else "")
            for b in axis.bands
        ),
    )


def _px(sizes: list[float]) -> tuple[float, ...]:
    return tuple(round(x, 1) for x in sizes)


def mesh_grid_view(mesh: MeshLayout, grid: MeshGrid | None = None) -> MeshGridView:
    """``mesh`` laid out as :func:`~shardviz.render.geometry.mesh_grid` places it (``grid``
    when already laid out)."""
    grid = grid if grid is not None else mesh_grid(mesh)
    col_sizes, row_sizes = mesh_band_sizes(grid, mesh_cell_width(mesh))
    panels = tuple(
        MeshPanelView("", (), p.text)
        if isinstance(p, PanelGap)
        else MeshPanelView(
            p.label,
            tuple(
                (c.row, c.col, c.device.id, c.coord_text, mesh_cell_tip(mesh, c)) for c in p.cells
            ),
        )
        for p in grid.panels
    )
    return MeshGridView(
        _axis(grid.rows, MESH_SLOTS),
        _axis(grid.cols, MESH_SLOTS),
        _px(col_sizes),
        _px(row_sizes),
        panels,
        mesh_panels_text(mesh, grid),
        (
            *gap_notes(grid.rows, MESH_SLOTS, "indices"),
            *gap_notes(grid.cols, MESH_SLOTS, "indices"),
        ),
    )


def array_grid_view(layout: ArrayLayout, grid: ArrayGrid | None = None) -> ArrayGridView:
    """Where each distinct tile of ``layout`` goes (a cell's tile is its position in
    :func:`tiles_of`'s tiles, ``-1`` for a place no device holds)."""
    grid = grid if grid is not None else array_grid(layout)
    where = {group[0].key: i for i, group in enumerate(layout.distinct_tiles)}
    col_sizes, row_sizes = array_band_sizes(grid)
    panels = tuple(
        ArrayPanelView("", (), p.text)
        if isinstance(p, PanelGap)
        else ArrayPanelView(p.label, tuple((c.row, c.col, where.get(c.key, -1)) for c in p.cells))
        for p in grid.panels
    )
    return ArrayGridView(
        _axis(grid.rows, ARRAY_SLOTS),
        _axis(grid.cols, ARRAY_SLOTS),
        _px(col_sizes),
        _px(row_sizes),
        panels,
        page_summary(grid),
        (
            *gap_notes(grid.rows, ARRAY_SLOTS, "elements"),
            *gap_notes(grid.cols, ARRAY_SLOTS, "elements"),
        ),
    )


def tiles_of(layout: ArrayLayout) -> tuple[tuple[TileView, ...], tuple[str, ...]]:
    """The distinct tiles, and the words for their shards (shape and exact bytes, each text
    once: most tiles of an array share one)."""
    shards: dict[str, int] = {}
    tiles = []
    for group in layout.distinct_tiles:
        first = group[0]
        ids = tuple(t.device_id for t in group)
        shard = f"{format_shape(first.shape)} · {format_bytes(first.nbytes, exact=True)}"
        tiles.append(
            TileView(
                tuple((start, stop) for start, stop in first.key),
                tuple(first.shape),
                first.nbytes,
                ids,
                devices_label(ids),
                shards.setdefault(shard, len(shards)),
            )
        )
    return tuple(tiles), tuple(shards)


def tiled_array_view(layout: ArrayLayout) -> TiledArrayView:
    """``layout`` as ``MeshView`` draws it: header words, tiles and grid."""
    facts = array_facts(layout)
    tiles, shards = tiles_of(layout)
    return TiledArrayView(
        layout.name,
        value_str(facts.dtype, facts.shape),
        facts.spec,
        facts.kind,
        tiles,
        shards,
        array_grid_view(layout),
    )
