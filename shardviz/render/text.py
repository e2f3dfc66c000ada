"""Plain-text views for terminals, ``print`` and golden tests.

Deterministic Unicode box drawing, no colour codes. Every view reads the shared geometry in
:mod:`shardviz.render.geometry`.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from typing import Any

from shardviz.model.array import ArrayLayout, TreeLayout
from shardviz.model.mesh import MeshLayout
from shardviz.model.units import format_bytes
from shardviz.render.geometry import (
    ArrayPanel,
    MeshPanel,
    PageAxis,
    PanelGap,
    array_facts,
    array_grid,
    devices_label,
    format_shape,
    memory_split_str,
    mesh_grid,
    mesh_shape_str,
    mesh_summary,
    page_summary,
    process_runs,
)
from shardviz.render.leaf_rows import leaf_rows
from shardviz.render.table import aligned_table

ROW_GAP = "⋮"
COL_GAP = "…"


def _center(text: str, width: int) -> str:
    """``text`` centred in ``width``, the odd space going right (str.center is not consistent)."""
    pad = max(0, width - len(text))
    return " " * (pad // 2) + text + " " * (pad - pad // 2)


def column_widths(col_labels: Sequence[str], grids: Sequence[Sequence[Sequence[str]]]) -> list[int]:
    """Box widths fitting the labels and the cells of every grid (so panels line up)."""
    return [
        max([len(lab), *(len(row[j]) for cells in grids for row in cells)]) + 2
        for j, lab in enumerate(col_labels)
    ]


def box_grid(
    corner: str,
    row_labels: Sequence[str] | None,
    col_labels: Sequence[str],
    cells: Sequence[Sequence[str]],
    widths: Sequence[int] | None = None,
    left: int = 0,
    indent: str = "  ",
) -> list[str]:
    """A table of cells in box-drawing characters, with labels above and to the left.

    Args:
        corner: text over the row labels (e.g. ``dim 0 \\ dim 1``).
        row_labels: one per row, or ``None`` for a single unlabelled row.
        col_labels: one per column.
        cells: ``cells[row][col]`` text, centred in its box.
        widths: box widths; by default they fit the labels and cells.
        left: least width of the row-label column.
        indent: prefix of every line.

    Returns:
        The lines, without trailing spaces or newlines.
    """
    nrows = len(cells)
    rl = list(row_labels) if row_labels is not None else [""] * nrows
    left = max([left, len(corner), *(len(x) for x in rl)])
    widths = list(widths) if widths is not None else column_widths(col_labels, [cells])

    def rule(lft: str, mid: str, rgt: str) -> str:
        return indent + " " * left + " " + lft + mid.join("─" * w for w in widths) + rgt

    lines = []
    header = " ".join(_center(lab, w) for lab, w in zip(col_labels, widths, strict=True))
    if corner or header.strip():
        lines.append(indent + corner.ljust(left) + "  " + header)
    lines.append(rule("┌", "┬", "┐"))
    for i in range(nrows):
        body = "│".join(_center(cells[i][j], w) for j, w in enumerate(widths))
        lines.append(indent + rl[i].ljust(left) + " │" + body + "│")
        lines.append(rule("├", "┼", "┤") if i < nrows - 1 else rule("└", "┴", "┘"))
    return [line.rstrip() for line in lines]


def _gap_notes(axis: PageAxis, what: str, span: str) -> list[str]:
    return [
        f"  {COL_GAP} {b.hidden} more {what} not shown ({span} {b.start}:{b.stop})"
        for b in axis.bands
        if b.elided
    ]


def _corner(rows: PageAxis, cols: PageAxis, short_rows: str, short_cols: str) -> str:
    if rows.used and cols.used:
        return f"{short_rows} \\ {short_cols}"
    return short_cols if cols.used else ""


def _panel_grids(
    rows: PageAxis,
    cols: PageAxis,
    panels: Sequence[ArrayPanel | MeshPanel | PanelGap],
    corner: str,
    cell_text: Callable[[Any, int, int], str],
) -> list[str]:
    """Box grids for every panel (gaps as a one-line note), with columns lined up across panels."""
    col_labels = [b.label if not b.elided else COL_GAP for b in cols.bands]
    row_labels = [b.label if not b.elided else ROW_GAP for b in rows.bands] if rows.used else None
    grids: list[list[list[str]] | None] = []
    for panel in panels:
        if isinstance(panel, PanelGap):
            grids.append(None)
            continue
        cells: list[list[str]] = []
        for r, rb in enumerate(rows.bands):
            row = []
            for c, cb in enumerate(cols.bands):
                if rb.elided:
                    row.append(ROW_GAP)
                elif cb.elided:
                    row.append(COL_GAP)
                else:
                    row.append(cell_text(panel, r, c))
            cells.append(row)
        grids.append(cells)
    widths = column_widths(col_labels, [g for g in grids if g is not None])
    lines = []
    for panel, grid in zip(panels, grids, strict=True):
        if isinstance(panel, PanelGap):
            lines.append(f"  {panel.text}")
        elif grid is not None:
            if panel.label:
                lines.append(f"  [{panel.label}]")
            lines.extend(box_grid(corner, row_labels, col_labels, grid, widths))
    return lines


# --------------------------------------------------------------------------------------------


def mesh_text(mesh: MeshLayout) -> str:
    """A mesh as text: a summary line, then the device grid with axis names and indices.

    With several host processes, each cell also names its process (``d0@p0``) and a legend
    lists the devices of each process.
    """
    grid = mesh_grid(mesh)
    rows, cols = grid.rows, grid.cols
    multi = mesh.num_processes > 1
    lines = [mesh_summary(mesh)]
    if cols.used:
        sides = []
        if grid.panel_axes:
            sides.append("panels: " + ", ".join(mesh.axis_names[a] for a in grid.panel_axes))
        if rows.used:
            sides.append(f"rows: {rows.title}")
        sides.append(f"cols: {cols.title}")
        lines.append(" | ".join(sides))

    def cell_text(panel: MeshPanel, r: int, c: int) -> str:
        cell = panel.cell(r, c)
        if cell is None:
            return "—"
        text = f"d{cell.device.id}"
        return text + f"@p{cell.device.process_index}" if multi else text

    row_name = rows.names[0] if rows.used else ""
    col_name = cols.names[0] if cols.used else ""
    corner = _corner(rows, cols, row_name, col_name)
    lines.extend(_panel_grids(rows, cols, grid.panels, corner, cell_text))
    lines.extend(_gap_notes(rows, f"indices of {row_name}", "indices"))
    lines.extend(_gap_notes(cols, f"indices of {col_name}", "indices"))
    if multi:
        lines.append("processes: " + " · ".join(f"p{p} = {ids}" for p, ids in process_runs(mesh)))
    return "\n".join(lines)


def array_text(layout: ArrayLayout) -> str:
    """An array as text: header facts, which dims are where, then a box grid per panel.

    Each cell lists the devices holding that tile (``d0``, ``d0-d3``, ``d0,d4``,
    ``d0…d12 (4)``); elided runs show as ``…`` (columns) and ``⋮`` (rows) with a note.
    """
    facts = array_facts(layout)
    grid = array_grid(layout)
    rows, cols = grid.rows, grid.cols
    lines = [
        f"{facts.title} · {facts.spec} · {facts.kind}",
        f"  on Mesh {facts.mesh} · shard {format_shape(facts.shard_shape)} · {facts.tiles_str}",
        f"  {facts.bytes_str}",
        f"  {page_summary(grid)}",
    ]

    def cell_text(panel: ArrayPanel, r: int, c: int) -> str:
        cell = panel.cell(r, c)
        return devices_label(cell.device_ids) if cell else "—"

    corner = _corner(rows, cols, f"dim {rows.dim}", f"dim {cols.dim}")
    lines.extend(_panel_grids(rows, cols, grid.panels, corner, cell_text))
    lines.extend(_gap_notes(rows, f"intervals of dim {rows.dim}", "elements"))
    lines.extend(_gap_notes(cols, f"intervals of dim {cols.dim}", "elements"))
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------


def _bar(value: int, top: int, width: int = 20) -> str:
    filled = round(width * value / top) if top else 0
    return "█" * filled + "░" * (width - filled)


def tree_text(tree: TreeLayout) -> str:
    """A pytree of arrays as a table (one row per leaf), then bytes per device and totals."""
    mesh = tree.mesh
    n_leaves = len(tree)
    head = f"Tree · {n_leaves} lea{'ves' if n_leaves != 1 else 'f'}"
    if mesh is not None:
        head += f" · Mesh {mesh_shape_str(mesh)} · {mesh.size} devices"
    elif n_leaves:
        head += " · leaves on different meshes"
    lines = [head]
    if not n_leaves:
        return "\n".join(lines)
    rows = []
    uneven = False
    for row in leaf_rows(tree):
        leaf = row.leaf
        facts = array_facts(leaf)
        per = format_bytes(facts.max_bytes) + (" each" if row.count > 1 else "")
        if facts.uneven:
            per += " *"
            uneven = True
        rows.append(
            [
                row.label,
                format_shape(leaf.shape),
                leaf.dtype,
                facts.spec,
                format_shape(facts.shard_shape),
                per,
                facts.kind if leaf.memory_kind == "device" else f"{facts.kind}, {leaf.memory_kind}",
            ]
        )
    header = ["leaf", "shape", "dtype", "spec", "shard", "bytes/device", "kind"]
    lines.extend(aligned_table(header, rows, right={5}))
    if uneven:
        lines.append("* uneven: the largest tile is shown")
    lines.append("")
    lines.extend(_per_device_lines(tree.bytes_per_device))
    split = memory_split_str(tree)
    if split:
        lines.append(split)
    lines.append(
        f"total: {format_bytes(tree.global_bytes, exact=True)} global (each element once) · "
        f"{format_bytes(tree.total_bytes, exact=True)} on all devices"
    )
    return "\n".join(lines)


def _per_device_lines(per_device: dict[int, int]) -> list[str]:
    if not per_device:
        return ["per device: no devices"]
    values = list(per_device.values())
    n = len(values)
    if len(set(values)) == 1:
        return [f"per device: {format_bytes(values[0], exact=True)} on each of {n} devices"]
    if n > 16:
        lo = min(per_device, key=lambda d: (per_device[d], d))
        hi = max(per_device, key=lambda d: (per_device[d], -d))
        med = int(statistics.median(values))
        return [
            f"per device ({n} devices): min {format_bytes(per_device[lo])} (d{lo}) · "
            f"median {format_bytes(med)} · max {format_bytes(per_device[hi])} (d{hi})"
        ]
    top = max(values)
    width = max(len(f"d{d}") for d in per_device)
    out = ["per device:"]
    for d, v in sorted(per_device.items()):
        out.append(f"  {f'd{d}'.ljust(width)}  {_bar(v, top)}  {format_bytes(v, exact=True)}")
    return out
