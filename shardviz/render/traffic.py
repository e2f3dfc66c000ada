"""Who talks to whom, drawn: one collective's links (:mod:`shardviz.analysis.traffic`) as arrows
on the mesh as :func:`~shardviz.render.geometry.mesh_grid` lays it out (the static report's
ledger details); the Explorer draws the same links from its state.

Testable hooks: the figure is ``<figure class="sv-traffic" data-pattern="ring|pairs|all-pairs|
none" data-step-bytes="…" data-steps="…" data-device-bytes="…">``; each arrow is ``<path
class="sv-tarrow" data-group="g" data-link="a b">`` (with its head, ``sv-tarrowhead``)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from shardviz.analysis.traffic import Link, Traffic, traffic_of
from shardviz.model.mesh import MeshLayout
from shardviz.model.program import Collective
from shardviz.render.geometry import MeshGrid, MeshPanel, PanelGap
from shardviz.render.svg import esc, mesh_panel_frame, svg_num, svg_rect, svg_text, text_width

#: Arrows drawn on one picture in all; later groups are then said in words, not drawn.
MAX_ARROWS = 240
#: Stroke colours of the groups' arrows (dark, so they read on the light cells), then repeat.
ARROW_COLORS = ("#0969da", "#bc4c00", "#1a7f37", "#8250df", "#cf222e", "#1b7c83", "#953800")
CELL_H = 44.0


def _control(x1: float, y1: float, x2: float, y2: float, cell: float) -> tuple[float, float]:
    """The control point of the curve from ``(x1, y1)`` to ``(x2, y2)``: neighbours get a
    shallow bend, longer jumps a deeper one (to the left of the direction of travel)."""
    dx, dy = x2 - x1, y2 - y1
    dist = math.hypot(dx, dy) or 1.0
    ux, uy = dx / dist, dy / dist
    bend = 0.22 * dist + 2 if dist <= 1.5 * cell else 0.36 * dist
    return (x1 + x2) / 2 - uy * bend, (y1 + y2) / 2 + ux * bend


def arrow_paths(
    x1: float, y1: float, x2: float, y2: float, inset: float, cell: float
) -> tuple[str, str]:
    """The path data of a curved arrow between two anchors, stopping ``inset`` short of each:
    ``(curve, head)``. Neighbours get a shallow bend; longer jumps bend further so they pass
    beside the cells in between, and the two directions of a pair bend to opposite sides."""
    cx, cy = _control(x1, y1, x2, y2, cell)

    def toward(x: float, y: float) -> tuple[float, float]:
        vx, vy = cx - x, cy - y
        d = math.hypot(vx, vy) or 1.0
        return x + vx / d * inset, y + vy / d * inset

    sx, sy = toward(x1, y1)
    ex, ey = toward(x2, y2)
    tx, ty = ex - cx, ey - cy
    td = math.hypot(tx, ty) or 1.0
    tx, ty = tx / td, ty / td
    head = 6.0
    bx, by = ex - tx * head, ey - ty * head
    p1 = (bx - ty * head * 0.5, by + tx * head * 0.5)
    p2 = (bx + ty * head * 0.5, by - tx * head * 0.5)
    curve = f"M{svg_num(sx)} {svg_num(sy)}Q{svg_num(cx)} {svg_num(cy)} {svg_num(bx)} {svg_num(by)}"
    tip = (
        f"M{svg_num(ex)} {svg_num(ey)}L{svg_num(p1[0])} {svg_num(p1[1])}"
        f"L{svg_num(p2[0])} {svg_num(p2[1])}Z"
    )
    return curve, tip


def traffic_css(scope: str) -> str:
    """The picture's style, each rule under ``scope`` (e.g. ``.sv-report``): cells, arrows,
    and one arrow colour per group class ``sv-tg<i>``."""
    rules = [
        ".sv-traffic{margin:8px 0 0}",
        ".sv-tdev>rect{fill:#fff;stroke:#d0d7de}",
        ".sv-tsend>rect{fill:#f6f8fa}",
        ".sv-tarrow{fill:none;stroke-width:1.4;opacity:.8}",
        ".sv-tarrowhead{opacity:.8}",
    ]
    for i, color in enumerate(ARROW_COLORS):
        rules.append(f".sv-tg{i} .sv-tarrow{{stroke:{color}}}")
        rules.append(f".sv-tg{i} .sv-tarrowhead{{fill:{color}}}")
    return "".join(f"{scope} {r}" for r in rules)


def _panel_svg(
    grid: MeshGrid, panel: MeshPanel, shown: Sequence[tuple[int, Link]], t: Traffic, cell_w: float
) -> tuple[str, int]:
    """One panel's cells and the arrows between cells it draws; returns ``(svg, drawn)``."""
    frame, out = mesh_panel_frame(grid.rows, grid.cols, cell_w, CELL_H, "sv-tmap")
    sends = {a for _, (a, _b) in shown} | {b for _, (_a, b) in shown}
    anchors: dict[int, tuple[float, float]] = {}
    for cell in panel.cells:
        x, y = frame.col_x[cell.col], frame.row_y[cell.row]
        d = cell.device.id
        cls = "sv-tdev sv-tsend" if d in sends else "sv-tdev"
        out.append(
            f'<g class="{cls}" data-device="{d}">'
            + svg_rect(x + 1, y + 1, cell_w - 2, CELL_H - 2)
            + svg_text(x + cell_w / 2, y + 13, f"d{d}", "sv-lbl")
            + "</g>"
        )
        anchors[d] = (x + cell_w / 2, y + CELL_H / 2 + 6)
    out.extend(frame.gaps("indices"))
    drawn = 0
    by_group: dict[int, list[str]] = {}
    left, right, low, high = 0.0, frame.width, 0.0, frame.height
    for g, (a, b) in shown:
        if a not in anchors or b not in anchors:
            continue
        (x1, y1), (x2, y2) = anchors[a], anchors[b]
        # The curve's farthest point, half-way to its control point: the picture grows to it.
        cx, cy = _control(x1, y1, x2, y2, cell_w)
        mid_x, mid_y = (x1 + x2) / 4 + cx / 2, (y1 + y2) / 4 + cy / 2
        left, right = min(left, mid_x - 4), max(right, mid_x + 4)
        low, high = min(low, mid_y - 4), max(high, mid_y + 4)
        curve, tip = arrow_paths(x1, y1, x2, y2, inset=8.0, cell=cell_w)
        by_group.setdefault(g, []).append(
            f'<path class="sv-tarrow" data-group="{g}" data-link="{a} {b}" d="{curve}"/>'
            f'<path class="sv-tarrowhead" d="{tip}"/>'
        )
        drawn += 1
    for g, paths in by_group.items():
        ids = " ".join(f"d{x}" for x in dict.fromkeys(x for link in t.links[g] for x in link))
        hover = f"group {g} ({ids}): each arrow {t.label}"
        out.append(
            f'<g class="sv-tg{g % len(ARROW_COLORS)}"><title>{esc(hover)}</title>'
            + "".join(paths)
            + "</g>"
        )
    out.append("</svg>")
    w, h = right - left, high - low
    out[0] = (
        f'<svg class="sv-tmap" width="{svg_num(w)}" height="{svg_num(h)}" '
        f'viewBox="{svg_num(left)} {svg_num(low)} {svg_num(w)} {svg_num(h)}" role="img">'
    )
    caption = f"<figcaption>{esc(panel.label)}</figcaption>" if panel.label else ""
    return f'<figure class="sv-panel">{caption}{"".join(out)}</figure>', drawn


def drawable_links(t: Traffic, grid: MeshGrid) -> tuple[tuple[Link, ...], ...]:
    """Per group, the links a picture of ``grid`` draws: both ends in one shown panel, and no
    more than :data:`MAX_ARROWS` in all (later groups get none)."""
    panel_of = {
        cell.device.id: i
        for i, panel in enumerate(grid.panels)
        if isinstance(panel, MeshPanel)
        for cell in panel.cells
    }
    out: list[tuple[Link, ...]] = []
    left = MAX_ARROWS
    for links in t.links:
        mine = tuple((a, b) for a, b in links if a in panel_of and panel_of[a] == panel_of.get(b))
        if len(mine) > left:
            mine = ()
        left -= len(mine)
        out.append(mine)
    return tuple(out)


def traffic_svg(mesh: MeshLayout, grid: MeshGrid, c: Collective) -> str:
    """The traffic picture of ``c``: its links as arrows on the laid-out mesh ``grid``.

    An arrow whose ends are in different panels or elided is not drawn (the figure counts
    them); past :data:`MAX_ARROWS`, later groups are left to the words.
    """
    t = traffic_of(c, mesh)
    shown = [(g, link) for g, links in enumerate(drawable_links(t, grid)) for link in links]
    cell_w = max(44.0, text_width(f"d{max(mesh.device_ids, default=0)}", 11) + 14)
    panels, drawn = [], 0
    for panel in grid.panels:
        if isinstance(panel, PanelGap):
            panels.append(f'<div class="sv-elided">{esc(panel.text)}</div>')
            continue
        ids = {cell.device.id for cell in panel.cells}
        mine = [(g, (a, b)) for g, (a, b) in shown if a in ids and b in ids]
        svg, n = _panel_svg(grid, panel, mine, t, cell_w)
        panels.append(svg)
        drawn += n
    notes = [t.words]
    if t.pattern != "none":
        notes.append(f"each arrow: {t.label}")
    if drawn < t.arrows:
        notes.append(
            f"{t.arrows - drawn} of {t.arrows} arrows not drawn (across panels, elided, or "
            "past the first groups)"
        )
    return (
        f'<figure class="sv-traffic" data-pattern="{t.pattern}" data-step-bytes="{t.step_bytes}"'
        f' data-steps="{t.steps}" data-device-bytes="{t.device_bytes}">'
        "<figcaption>who sends to whom (ring model)</figcaption>"
        f'<div class="sv-panels">{"".join(panels)}</div>'
        '<div class="sv-legend">'
        + "".join(f'<span class="sv-twords">{esc(n)}</span>' for n in notes)
        + "</div></figure>"
    )
