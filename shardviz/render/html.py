"""Self-contained HTML views: inline SVG and a scoped ``<style>``, no script, no network.

Every fragment is one ``<div class="sv-root ...">`` carrying its own CSS (all classes start with
``sv-``), so it renders the same in a notebook, a saved notebook, or a file opened offline.
Hover text uses SVG ``<title>``, which needs no JavaScript. Every string that comes from the
model is escaped where it enters the markup.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from shardviz.errors import ShardvizError, problem
from shardviz.model.array import ArrayLayout, Tile, TreeLayout
from shardviz.model.mesh import MeshLayout
from shardviz.model.units import format_bytes
from shardviz.render.colors import DARK_TEXT, device_color, text_color_for
from shardviz.render.geometry import (
    MESH_CELL_H,
    ArrayGrid,
    ArrayPanel,
    MeshGrid,
    MeshPanel,
    array_band_sizes,
    array_facts,
    array_grid,
    devices_label,
    format_shape,
    holder_lines,
    memory_split_str,
    mesh_band_sizes,
    mesh_grid,
    mesh_summary,
    process_runs,
)
from shardviz.render.grid_view import (
    ArrayGridView,
    MeshGridView,
    MeshPanelView,
    array_grid_view,
    mesh_cell_width,
    mesh_grid_view,
)
from shardviz.render.leaf_rows import leaf_rows
from shardviz.render.stylesheets import stylesheet
from shardviz.render.svg import (
    Frame,
    esc,
    svg_num,
    svg_rect,
    svg_text,
    text_width,
    tick_labels,
)

MONO = 'ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono","Liberation Mono",monospace'
SANS = 'system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans","Liberation Sans",sans-serif'

CSS = stylesheet("base.css", SANS=SANS, MONO=MONO)

STYLE = "<style>" + CSS.replace("\n", "") + "</style>"

#: Chips drawn per tile before the rest is summarised as ``+N``.
MAX_CHIPS = 8
#: Holders listed in a tile's hover text before ``… N more``.
MAX_HOLDERS = 16
#: Above this many devices, a tree's per-device bars are binned.
MAX_BARS = 256


def _root(kind: str, body: Sequence[str]) -> str:
    return f'<div class="sv-root sv-{kind}">{STYLE}' + "".join(body) + "</div>"


def _notes(view: MeshGridView | ArrayGridView) -> list[str]:
    return [esc(note) for note in view.notes]


def _panel_gap(text: str) -> str:
    return f'<div class="sv-elided">{esc(text)}</div>'


def _caption(label: str) -> str:
    return f"<figcaption>{esc(label)}</figcaption>" if label else ""


# --------------------------------------------------------------------------------------------
# Arrays


def _tile_svg(
    layout: ArrayLayout,
    cell_tiles: Sequence[Tile],
    key_str: str,
    x: float,
    y: float,
    w: float,
    h: float,
) -> str:
    ids = [t.device_id for t in cell_tiles]
    if not ids:
        tip = f"{layout.name}{key_str}\nheld by no device"
        return (
            f'<g class="sv-tile" data-devices=""><title>{esc(tip)}</title>'
            + svg_rect(x, y, w, h, ' fill="#ffffff" stroke-dasharray="2 2"')
            + "</g>"
        )
    first = cell_tiles[0]
    fill = device_color(ids[0])
    tip_lines = [
        f"{layout.name}{key_str}",
        f"shard {format_shape(first.shape)} · {format_bytes(first.nbytes, exact=True)}",
        f"held by {len(ids)} device{'s' * (len(ids) != 1)}:",
        *("  " + line for line in holder_lines(layout, cell_tiles, MAX_HOLDERS)),
    ]
    tip = "\n".join(tip_lines)
    parts = [
        f'<g class="sv-tile" data-devices="{" ".join(map(str, ids))}"><title>{esc(tip)}</title>',
        svg_rect(x, y, w, h, f' fill="{fill}"'),
    ]
    chips = len(ids) > 1 and h >= 30 and w >= 26
    label = devices_label(ids)
    if text_width(label) > w - 4:
        label = f"d{ids[0]}+{len(ids) - 1}" if len(ids) > 1 else f"d{ids[0]}"
    if text_width(label) <= w - 4 and h >= 13:
        color = text_color_for(fill)
        extra = "" if color == DARK_TEXT else f' style="fill:{color}"'
        parts.append(svg_text(x + w / 2, y + h / 2 - (5 if chips else 0), label, "sv-lbl", extra))
    if chips:
        fit = max(1, int((w - 8 - 20) // 9))
        n_chips = min(len(ids), MAX_CHIPS, fit)
        if n_chips == len(ids) - 1 and len(ids) <= MAX_CHIPS:  # a chip is no wider than "+1"
            n_chips = min(len(ids), int((w - 8) // 9))
        cx = x + 4
        cy = y + h - 11
        for d in ids[:n_chips]:
            parts.append(svg_rect(cx, cy, 7, 7, f' class="sv-chip" fill="{device_color(d)}"'))
            cx += 9
        if n_chips < len(ids):
            parts.append(svg_text(cx + 1, cy + 6, f"+{len(ids) - n_chips}", "sv-tick"))
    parts.append("</g>")
    return "".join(parts)


def _array_panel(
    layout: ArrayLayout,
    grid: ArrayGrid,
    panel: ArrayPanel,
    sizes: tuple[list[float], list[float]],
    label: str,
) -> str:
    col_sizes, row_sizes = sizes
    col_ticks, row_ticks = tick_labels(grid.cols), tick_labels(grid.rows)
    frame = Frame(grid.rows, grid.cols, col_sizes, row_sizes, row_ticks if grid.rows.used else [])
    parts = [
        f'<svg class="sv-grid" width="{svg_num(frame.width)}" height="{svg_num(frame.height)}" '
        f'viewBox="0 0 {svg_num(frame.width)} {svg_num(frame.height)}" role="img">'
    ]
    parts.extend(frame.axes(col_ticks, row_ticks))
    for cell in panel.cells:
        x, w = frame.col_x[cell.col], col_sizes[cell.col]
        y, h = frame.row_y[cell.row], row_sizes[cell.row]
        parts.append(_tile_svg(layout, cell.tiles, cell.index_str, x, y, w, h))
    parts.extend(frame.gaps("intervals"))
    parts.append("</svg>")
    return f'<figure class="sv-panel">{_caption(label)}{"".join(parts)}</figure>'


def array_html(layout: ArrayLayout) -> str:
    """An array as an HTML fragment: header facts, then one SVG panel per off-page combination.

    Each distinct tile is a ``<g class="sv-tile" data-devices="0 4">`` filled with its first
    holder's colour, labelled with its holders, with a chip per holder and hover text giving
    the index, shard shape, bytes and each holder's mesh coordinate. Elided runs are
    ``sv-elided``.
    """
    facts = array_facts(layout)
    grid = array_grid(layout)
    view = array_grid_view(layout, grid)
    sizes = array_band_sizes(grid)
    body = [
        f'<div class="sv-head">{esc(facts.name)} <span class="sv-dim">· '
        f"{esc(facts.dtype)}[{', '.join(map(str, facts.shape))}]</span> "
        f'<code>{esc(facts.spec)}</code><span class="sv-kind">{esc(facts.kind)}</span></div>',
        f'<div class="sv-facts">on Mesh {esc(facts.mesh)} · shard {format_shape(facts.shard_shape)}'
        f" · {esc(facts.tiles_str)}<br>{esc(facts.bytes_str)}<br>{esc(view.summary)}</div>",
        '<div class="sv-panels">',
    ]
    for panel, said in zip(grid.panels, view.panels, strict=True):
        if isinstance(panel, ArrayPanel):
            body.append(_array_panel(layout, grid, panel, sizes, said.label))
        else:
            body.append(_panel_gap(said.gap))
    body.append("</div>")
    notes = _notes(view)
    if notes:
        body.append('<div class="sv-note">' + "<br>".join(notes) + "</div>")
    return _root("array", body)


# --------------------------------------------------------------------------------------------
# Meshes


def _outline(
    cells: dict[tuple[int, int], tuple[float, float, float, float, int]],
) -> dict[int, str]:
    """Per process, an SVG path tracing the border of its cells."""
    paths: dict[int, list[str]] = {}
    for (r, c), (x, y, w, h, p) in cells.items():
        segs = paths.setdefault(p, [])
        for (dr, dc), seg in (
            ((-1, 0), f"M{svg_num(x)} {svg_num(y)}h{svg_num(w)}"),
            ((1, 0), f"M{svg_num(x)} {svg_num(y + h)}h{svg_num(w)}"),
            ((0, -1), f"M{svg_num(x)} {svg_num(y)}v{svg_num(h)}"),
            ((0, 1), f"M{svg_num(x + w)} {svg_num(y)}v{svg_num(h)}"),
        ):
            other = cells.get((r + dr, c + dc))
            if other is None or other[4] != p:
                segs.append(seg)
    return {p: "".join(s) for p, s in paths.items()}


def _mesh_panel(
    mesh: MeshLayout, grid: MeshGrid, panel: MeshPanel, said: MeshPanelView, cell_w: float
) -> str:
    rows, cols = grid.rows, grid.cols
    col_sizes, row_sizes = mesh_band_sizes(grid, cell_w)
    row_ticks = tick_labels(rows)
    frame = Frame(rows, cols, col_sizes, row_sizes, row_ticks if rows.used else [])
    multi = mesh.num_processes > 1
    parts = [
        f'<svg class="sv-grid" width="{svg_num(frame.width)}" height="{svg_num(frame.height)}" '
        f'viewBox="0 0 {svg_num(frame.width)} {svg_num(frame.height)}" role="img">'
    ]
    parts.extend(frame.axes(tick_labels(cols), row_ticks))
    boxes = {}
    for cell, (*_, tip) in zip(panel.cells, said.cells, strict=True):
        x, y = frame.col_x[cell.col], frame.row_y[cell.row]
        dev = cell.device
        fill = device_color(dev.id)
        parts.append(
            f'<g class="sv-device" data-device="{dev.id}"><title>{esc(tip)}</title>'
            + svg_rect(x, y, cell_w, MESH_CELL_H, f' fill="{fill}"')
            + svg_text(
                x + cell_w / 2,
                y + (15 if cell.coords else MESH_CELL_H / 2),
                f"d{dev.id}",
                "sv-lbl",
                ' font-weight="600"',
            )
            + (
                svg_text(x + cell_w / 2, y + 29, cell.coord_text, "sv-sub", ' text-anchor="middle"')
                if cell.coords
                else ""
            )
            + (
                svg_text(
                    x + cell_w - 3, y + 7, f"p{dev.process_index}", "sv-sub", ' text-anchor="end"'
                )
                if multi
                else ""
            )
            + "</g>"
        )
        boxes[(cell.row, cell.col)] = (x, y, cell_w, MESH_CELL_H, dev.process_index)
    parts.extend(frame.gaps("indices"))
    if multi:
        for p, d in sorted(_outline(boxes).items()):
            parts.append(f'<path class="sv-proc" data-process="{p}" d="{d}"/>')
    parts.append("</svg>")
    return f'<figure class="sv-panel">{_caption(said.label)}{"".join(parts)}</figure>'


def mesh_html(mesh: MeshLayout) -> str:
    """A mesh as an HTML fragment: the device grid with axis names, sizes and indices.

    Each device is a ``<g class="sv-device" data-device="ID">`` filled with its colour and
    showing its id and mesh coordinate; with several processes, each process's devices are
    outlined and a legend lists them. Elided runs are ``sv-elided``.
    """
    grid = mesh_grid(mesh)
    view = mesh_grid_view(mesh, grid)
    cell_w = mesh_cell_width(mesh)
    body = [f'<div class="sv-head">{esc(mesh_summary(mesh))}</div>']
    if view.summary:
        body.append(f'<div class="sv-facts">{esc(view.summary)}</div>')
    body.append('<div class="sv-panels">')
    for panel, said in zip(grid.panels, view.panels, strict=True):
        if isinstance(panel, MeshPanel):
            body.append(_mesh_panel(mesh, grid, panel, said, cell_w))
        else:
            body.append(_panel_gap(said.gap))
    body.append("</div>")
    notes = _notes(view)
    if mesh.num_processes > 1:
        notes.append(
            "processes (outlined): "
            + " · ".join(f"p{p} = {esc(ids)}" for p, ids in process_runs(mesh))
        )
    if notes:
        body.append('<div class="sv-note">' + "<br>".join(notes) + "</div>")
    return _root("mesh", body)


# --------------------------------------------------------------------------------------------
# Trees

BARS_W = 560.0
BARS_H = 56.0


def bars_svg(per_device: dict[int, int], scale: int | None = None) -> str:
    ids = sorted(per_device)
    n = len(ids)
    if not n:
        return ""
    top = scale or max(per_device.values()) or 1
    if n <= MAX_BARS:
        groups = [[d] for d in ids]
    else:
        size = math.ceil(n / MAX_BARS)
        groups = [ids[i : i + size] for i in range(0, n, size)]
    bw = max(2.0, min(22.0, BARS_W / len(groups)))
    gap = 1.0 if bw >= 4 else 0.0
    left = text_width(format_bytes(top), 10) + 8
    height = BARS_H + 30
    width = left + bw * len(groups) + 4
    parts = [
        f'<svg class="sv-bars" width="{svg_num(width)}" height="{svg_num(height)}" '
        'shape-rendering="crispEdges" '
        f'viewBox="0 0 {svg_num(width)} {svg_num(height)}" role="img">',
        svg_text(left - 4, 8, format_bytes(top), "sv-tick", ' text-anchor="end"'),
        svg_text(left - 4, BARS_H + 4, "0", "sv-tick", ' text-anchor="end"'),
        f'<path d="M{svg_num(left)} {svg_num(BARS_H + 4)}h{svg_num(bw * len(groups))}" '
        'stroke="#afb8c1"/>',
    ]
    for i, group in enumerate(groups):
        values = [per_device[d] for d in group]
        v = max(values)
        h = BARS_H * v / top
        x = left + i * bw
        y = BARS_H + 4 - h
        if len(group) == 1:
            d = group[0]
            tip = f"d{d}: {format_bytes(v, exact=True)}"
            parts.append(
                f'<rect class="sv-bar" data-device="{d}" x="{svg_num(x)}" y="{svg_num(y)}" '
                f'width="{svg_num(bw - gap)}" height="{svg_num(h)}" fill="{device_color(d)}">'
                f"<title>{esc(tip)}</title></rect>"
            )
        else:
            tip = (
                f"d{group[0]}–d{group[-1]}: max {format_bytes(v)}, min {format_bytes(min(values))}"
            )
            parts.append(
                f'<rect class="sv-bar sv-bar-bin" data-devices="{group[0]}-{group[-1]}" '
                f'x="{svg_num(x)}" y="{svg_num(y)}" width="{svg_num(bw - gap)}" '
                f'height="{svg_num(h)}" '
                f'fill="#8c959f"><title>{esc(tip)}</title></rect>'
            )
    if len(groups) <= 32 and bw >= 12:
        for i, group in enumerate(groups):
            parts.append(
                svg_text(
                    left + i * bw + (bw - gap) / 2,
                    BARS_H + 16,
                    str(group[0]),
                    "sv-tick",
                    ' text-anchor="middle"',
                )
            )
    else:
        parts.append(svg_text(left, BARS_H + 16, f"d{ids[0]}", "sv-tick"))
        parts.append(
            svg_text(
                left + bw * len(groups), BARS_H + 16, f"d{ids[-1]}", "sv-tick", ' text-anchor="end"'
            )
        )
    parts.append(
        svg_text(
            left + bw * len(groups) / 2, BARS_H + 28, "device", "sv-axis", ' text-anchor="middle"'
        )
    )
    parts.append("</svg>")
    return "".join(parts)


def _check_scale(tree: TreeLayout, scale: int) -> None:
    largest = max(tree.bytes_per_device.values(), default=0)
    if isinstance(scale, bool) or not isinstance(scale, int) or scale < 1:
        raise ShardvizError(
            problem(
                "tree_html",
                f"scale={scale!r} is not a positive whole number of bytes",
                "pass the bytes the full bar height stands for, e.g. the largest "
                "bytes_per_device value of the trees you draw side by side",
            )
        )
    if scale < largest:
        raise ShardvizError(
            problem(
                "tree_html",
                f"scale={scale:,} B is below the {largest:,} B one device of this tree holds, "
                "so its bar would overflow the chart",
                f"pass a scale of at least {largest:,} B (the largest bytes_per_device value "
                "of all the trees drawn together)",
            )
        )


def leaf_table_html(tree: TreeLayout, kind: bool = True) -> str:
    """A tree's leaves as a table: path, shape, dtype, spec, shard, bytes per device and
    (with ``kind``) the placement's kind."""
    rows = []
    for row in leaf_rows(tree):
        leaf = row.leaf
        facts = array_facts(leaf)
        per = format_bytes(facts.max_bytes)
        title = f"{facts.max_bytes:,} B"
        if facts.uneven:
            per = "max " + per
            title += f" (uneven: min {facts.min_bytes:,} B)"
        if row.count > 1:
            per += " each"
        cells = [
            f"<td><code>{esc(row.label)}</code></td>",
            f"<td>{esc(format_shape(leaf.shape))}</td>",
            f"<td>{esc(leaf.dtype)}</td>",
            f"<td><code>{esc(facts.spec)}</code></td>",
            f"<td>{esc(format_shape(facts.shard_shape))}</td>",
            f'<td class="sv-num" title="{esc(title)}">{esc(per)}</td>',
        ]
        if kind:
            where = "" if leaf.memory_kind == "device" else f", {leaf.memory_kind}"
            cells.append(f"<td>{esc(facts.kind + where)}</td>")
        rows.append('<tr class="sv-leaf">' + "".join(cells) + "</tr>")
    return (
        '<table class="sv-table"><thead><tr><th>leaf</th><th>shape</th><th>dtype</th>'
        '<th>spec</th><th>shard</th><th class="sv-num">bytes/device</th>'
        + ("<th>kind</th>" if kind else "")
        + "</tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
    )


def tree_html(tree: TreeLayout, scale: int | None = None) -> str:
    """A pytree of arrays as an HTML fragment: a table (one row per leaf), then bytes per device
    as bars (``sv-bar``, one per device, coloured by device) and the totals.

    Args:
        tree: the laid-out pytree.
        scale: the bytes the full bar height stands for. By default the tree's own largest
            per-device figure; give two trees the same ``scale`` (e.g. the larger of their
            maxima) to draw them side by side on one scale.

    Raises:
        ShardvizError: ``scale`` is not a positive whole number of bytes, or is smaller than
            what some device holds (its bar would overflow the chart).
    """
    if scale is not None:
        _check_scale(tree, scale)
    mesh = tree.mesh
    n = len(tree)
    head = f"Tree · {n} lea{'ves' if n != 1 else 'f'}"
    if mesh is not None:
        head += " · " + mesh_summary(mesh)
    elif n:
        head += " · leaves on different meshes"
    body = [f'<div class="sv-head">{esc(head)}</div>']
    if n:
        body.append(leaf_table_html(tree))
        per_device = tree.bytes_per_device
        values = list(per_device.values())
        summary = (
            f"bytes per device: min {format_bytes(min(values))} · "
            f"median {format_bytes(int(statistics.median(values)))} · max {format_bytes(max(values))}"
            if values
            else "no devices"
        )
        body.append(f'<div class="sv-facts">{esc(summary)}</div>')
        split = memory_split_str(tree)
        if split:
            body.append(f'<div class="sv-facts sv-host-split">{esc(split)}</div>')
        body.append(bars_svg(per_device, scale))
    body.append(
        f'<div class="sv-note">total: {esc(format_bytes(tree.global_bytes, exact=True))} global '
        f"(each element once) · {esc(format_bytes(tree.total_bytes, exact=True))} on all devices</div>"
    )
    return _root("tree", body)


# --------------------------------------------------------------------------------------------


def page(title: str, sections: list[str]) -> str:
    """A complete standalone HTML document around fragments (opens offline in any browser).

    Args:
        title: the page title (escaped here).
        sections: HTML fragments from this module, each put in its own ``<section>``.

    Returns:
        The document, UTF-8, CSS inline, no external references.
    """
    body = "".join(f'<section class="sv-section">{s}</section>' for s in sections)
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>"
        f"body{{font:14px/1.5 {SANS};color:#1b1f24;background:#f6f8fa;margin:24px}}"
        "h1{font-size:20px;margin:0 0 16px}.sv-section{margin:0 0 20px}"
        f"</style></head><body><h1>{esc(title)}</h1>{body}</body></html>"
    )
