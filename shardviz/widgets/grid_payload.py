"""The laid-out grids the widgets draw: :mod:`shardviz.render.geometry`'s grids as JSON.

A mesh or an array is laid out once, in Python, by the functions the static HTML uses: which
cells go where (rows, columns and panels), which runs are elided, every label and hover text,
and the pixel size of every band. The front ends (``static/*.js``) only draw these grids and
highlight them, so a widget shows the same cells live as in its saved HTML.

Pure: no jax and no anywidget.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from shardviz.model.array import ArrayLayout
from shardviz.model.mesh import MeshLayout
from shardviz.model.units import format_bytes
from shardviz.render.geometry import (
    ArrayGrid,
    ArrayPanel,
    MeshGrid,
    MeshPanel,
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
from shardviz.render.html import mesh_cell_width

#: What one slot of a page axis is, in the words of the elided bands' hover text.
ARRAY_SLOTS, MESH_SLOTS = "intervals", "indices"


def axis_payload(axis: PageAxis, what: str) -> dict[str, Any]:
    """One page axis: ``used``, ``title`` and ``bands``.

    Each band is ``[start, stop, tick label, slots hidden, hover text]``; the hover text is
    ``""`` for a shown band and :func:`~shardviz.render.geometry.gap_tip` for an elided one.
    """
    return {
        "used": axis.used,
        "title": axis.title,
        "bands": [
            [b.start, b.stop, b.label, b.hidden, gap_tip(axis, b, what) if b.elided else ""]
            for b in axis.bands
        ],
    }


def _panels(
    panels: tuple[ArrayPanel | PanelGap, ...] | tuple[MeshPanel | PanelGap, ...],
    cells: Callable[[Any], list[list[Any]]],
) -> list[dict[str, Any]]:
    """``{"label", "cells"}`` per drawn panel (``cells(panel)`` lists them), ``{"gap": text}``
    where panels were elided."""
    return [
        {"gap": p.text} if isinstance(p, PanelGap) else {"label": p.label, "cells": cells(p)}
        for p in panels
    ]


def _sizes(col_sizes: list[float], row_sizes: list[float]) -> dict[str, list[float]]:
    return {
        "col_sizes": [round(x, 1) for x in col_sizes],
        "row_sizes": [round(x, 1) for x in row_sizes],
    }


def mesh_grid_payload(mesh: MeshLayout, grid: MeshGrid | None = None) -> dict[str, Any]:
    """A mesh laid out as the static view lays it out (:func:`~shardviz.render.geometry.mesh_grid`).

    Keys: ``rows`` and ``cols`` (:func:`axis_payload`), ``col_sizes`` and ``row_sizes`` (px),
    ``panels`` (cells are ``[row, col, device id, coordinate text, hover text]``), ``summary``
    (``one panel per …`` or ``""``) and ``notes`` (one line per elided band).
    """
    grid = grid if grid is not None else mesh_grid(mesh)

    def cells(panel: MeshPanel) -> list[list[Any]]:
        return [
            [c.row, c.col, c.device.id, c.coord_text, mesh_cell_tip(mesh, c)] for c in panel.cells
        ]

    return {
        "rows": axis_payload(grid.rows, MESH_SLOTS),
        "cols": axis_payload(grid.cols, MESH_SLOTS),
        **_sizes(*mesh_band_sizes(grid, mesh_cell_width(mesh))),
        "panels": _panels(grid.panels, cells),
        "summary": mesh_panels_text(mesh, grid),
        "notes": [
            *gap_notes(grid.rows, MESH_SLOTS, "indices"),
            *gap_notes(grid.cols, MESH_SLOTS, "indices"),
        ],
    }


def array_grid_payload(layout: ArrayLayout, grid: ArrayGrid | None = None) -> dict[str, Any]:
    """Where each distinct tile goes: the static view's rows, columns, panels and pixel sizes.

    Keys as :func:`mesh_grid_payload`'s, but a cell is ``[row, col, tile]`` (``tile`` indexes
    :func:`tiles_payload`'s list, ``-1`` for a place no device holds) and ``summary`` says
    which dims are where (:func:`~shardviz.render.geometry.page_summary`).
    """
    grid = grid if grid is not None else array_grid(layout)
    where = {group[0].key: i for i, group in enumerate(layout.distinct_tiles)}

    def cells(panel: ArrayPanel) -> list[list[int]]:
        return [[c.row, c.col, where.get(c.key, -1)] for c in panel.cells]

    return {
        "rows": axis_payload(grid.rows, ARRAY_SLOTS),
        "cols": axis_payload(grid.cols, ARRAY_SLOTS),
        **_sizes(*array_band_sizes(grid)),
        "panels": _panels(grid.panels, cells),
        "summary": page_summary(grid),
        "notes": [
            *gap_notes(grid.rows, ARRAY_SLOTS, "elements"),
            *gap_notes(grid.cols, ARRAY_SLOTS, "elements"),
        ],
    }


def tiles_payload(layout: ArrayLayout) -> tuple[list[dict[str, Any]], list[str]]:
    """The distinct tiles, replica 0's holder first, and the words for their shards.

    Each tile: ``index`` (``[start, stop]`` per dim), ``shape``, ``nbytes`` (per holder),
    ``devices``, ``label`` (its holders in few characters, :func:`devices_label`) and
    ``shard`` (a position in the second list: ``(4, 8) · 128 B``, shape and exact bytes,
    each text once since most tiles of an array share one).
    """
    shards: dict[str, int] = {}
    tiles = []
    for group in layout.distinct_tiles:
        first = group[0]
        ids = [t.device_id for t in group]
        shard = f"{format_shape(first.shape)} · {format_bytes(first.nbytes, exact=True)}"
        tiles.append(
            {
                "index": [list(k) for k in first.key],
                "shape": list(first.shape),
                "nbytes": first.nbytes,
                "devices": ids,
                "label": devices_label(ids),
                "shard": shards.setdefault(shard, len(shards)),
            }
        )
    return tiles, list(shards)


def array_view_payload(layout: ArrayLayout) -> dict[str, Any]:
    """An array as the MeshView draws it: its header words, tiles and laid-out grid.

    Keys: ``name``, ``value`` (``float32[8, 16]``), ``spec_str``, ``kind``, ``tiles`` and
    ``shards`` (:func:`tiles_payload`) and ``grid`` (:func:`array_grid_payload`).
    """
    facts = array_facts(layout)
    tiles, shards = tiles_payload(layout)
    return {
        "name": layout.name,
        "value": f"{facts.dtype}[{', '.join(map(str, facts.shape))}]",
        "spec_str": facts.spec,
        "kind": facts.kind,
        "tiles": tiles,
        "shards": shards,
        "grid": array_grid_payload(layout),
    }
