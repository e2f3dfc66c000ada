"""The views of :class:`~shardviz.model.physical.PhysicalLayout` (``sv.physical(report)``):
the mesh on the physical chips, each axis's rings drawn on the links, the load per link.

:func:`physical_facts` computes what both views show, once: each axis's line (its shape,
the hops of its first ring), the busiest links, the totals. The text view prints them with
the chips as a grid of device ids (one panel per z); the HTML view draws the chips (TPU:
one SVG panel per z, x across, y down, wraparound links as arcs round the edge; GPU: one box
per host with its GPUs in a row), every link coloured and thickened by its load on a grey
ramp of its own (:func:`~.colors.load_color`, apart from the axes' hues) with its scale drawn
under the chips, and each axis's rings as coloured strokes (dashed where a step is several
hops). A chip's label sits on a plate in its top-left corner, drawn last; the rings run below
and right of it and the links in the gaps between chips, so no line crosses a label.

Testable hooks: ``<div class="sv-root sv-physical" data-target="…">``; each panel ``<svg
class="sv-chips" data-z="…">`` (GPU: ``data-host``); each chip ``<g class="sv-chip"
data-device="…" data-chip="x,y[,z]">``; each link ``<line|path class="sv-link" data-kind=
"ici|wrap|nvlink|network" data-bytes="…" data-link="a|b">``; each ring step ``<path
class="sv-ring" data-axis="…">``; each chip's label ``<g class="sv-chipname">`` (its plate's
``<rect>``, then its ``<text>``); the load's scale ``<div class="sv-loadscale" data-min="…"
data-max="…">`` (bytes of the least and the most loaded link) with a ``<rect
class="sv-loadstep" data-load="…">`` per step; the busiest links ``<table
class="sv-busiest">``; each axis ``<li class="sv-axis" data-axis="…" data-shape="…">``.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

from shardviz.model.physical import LINK_RULE, AxisRings, LinkLoad, PhysicalLayout
from shardviz.model.units import format_bytes, format_seconds
from shardviz.render.colors import IDLE_LINK, load_color
from shardviz.render.html import CSS, SANS, page
from shardviz.render.svg import esc, svg_num, svg_rect, svg_text, text_width
from shardviz.render.table import aligned_table

#: One colour per mesh axis, in mesh order (then repeat).
AXIS_COLORS = ("#0969da", "#cf222e", "#1a7f37", "#8250df", "#bf8700", "#1b7c83")
#: Busiest links listed.
BUSIEST = 8
#: Rings drawn per axis at most (the rest said in words).
MAX_RINGS = 64
#: Chip cell size and the gap between chips, px.
CELL = 46.0
GAP = 30.0
WIDTH = 96
#: Chip labels: font size (px), and their plate's inset from the chip's top-left corner.
LABEL_PX = 10
LABEL_INSET = 3.0
LABEL_H = 13.0
#: Rings of neighbouring axes sit this far apart (px).
RING_SPREAD = 5.0
#: Link widths: idle, and the least to the most loaded.
IDLE_W, LOAD_W0, LOAD_W1 = 1.5, 2.0, 8.0
#: Steps drawn in the load scale.
SCALE_STEPS = 5

_CSS = (
    f".sv-physical .sv-chips{{margin:6px 12px 6px 0;font:11px {SANS}}}"
    ".sv-physical svg.sv-chips{max-width:100%;height:auto}"
    ".sv-physical .sv-chip rect{fill:#fff;stroke:#8c959f}"
    ".sv-physical .sv-chip text{fill:#1b1f24;text-anchor:middle}"
    ".sv-physical .sv-chipname rect{fill:#fff;stroke:none}"
    f".sv-physical .sv-chipname text{{font-size:{LABEL_PX}px;fill:#1b1f24}}"
    ".sv-physical .sv-loadscale{display:flex;flex-wrap:wrap;align-items:center;gap:4px 14px;"
    "margin:4px 0 8px;font-size:12px;color:#424a53;max-width:720px}"
    ".sv-physical .sv-loadscale svg{flex:none}"
    ".sv-physical .sv-loadscale .sv-scalelab{font-size:10px;fill:#424a53}"
    ".sv-physical .sv-loadwords{flex:1 1 320px}"
    ".sv-physical .sv-link{fill:none;stroke-linecap:round}"
    ".sv-physical .sv-ring{fill:none;stroke-width:2;opacity:.85}"
    ".sv-physical .sv-host>rect{fill:#f6f8fa;stroke:#57606a}"
    ".sv-physical .sv-panels{display:flex;flex-wrap:wrap}"
    ".sv-physical table{border-collapse:collapse;font-size:12px}"
    ".sv-physical td,.sv-physical th{padding:1px 8px;text-align:left}"
    ".sv-physical .sv-swatch{display:inline-block;width:14px;height:4px;margin-right:6px;"
    "vertical-align:middle}"
    ".sv-physical .sv-rule{color:#57606a;max-width:720px;font-size:12px}"
)


@dataclass(frozen=True)
class AxisLine:
    """One mesh axis as the views say it."""

    axis: str
    size: int
    shape: str
    words: str
    color: str
    first_ring: str
    ledger_bytes: int
    link_bytes: int
    wraps: bool


@dataclass(frozen=True)
class PhysicalFacts:
    """What both views show, computed once."""

    title: str
    axes: tuple[AxisLine, ...]
    busiest: tuple[LinkLoad, ...]
    totals: tuple[str, ...]


def axis_color(i: int) -> str:
    return AXIS_COLORS[i % len(AXIS_COLORS)]


def _ring_text(a: AxisRings) -> str:
    if not a.rings:
        return ""
    r = a.rings[0]
    steps = " ".join(f"d{d} →{h}" for d, h in zip(r.devices, r.hops, strict=True))
    return f"{steps} d{r.devices[0]}  (→n: n hops)"


def physical_facts(p: PhysicalLayout) -> PhysicalFacts:
    """The figures and words both views show."""
    colors = {name: axis_color(i) for i, name in enumerate(p.mesh.axis_names)}
    axes = tuple(
        AxisLine(
            a.axis,
            a.size,
            a.shape,
            a.words,
            colors.get(a.axis, "#57606a"),
            _ring_text(a),
            a.ledger_bytes,
            a.link_bytes,
            a.wraps,
        )  # fmt: skip
        for a in p.axes
    )
    totals = [
        f"links carry {format_bytes(p.link_bytes)} per step; the ledger moves "
        f"{format_bytes(p.ledger_bytes)} (summed over devices): "
        + (
            f"{p.link_bytes / p.ledger_bytes:.2f} hops per byte"
            if p.ledger_bytes
            else "nothing moves"
        ),
        f"crossing hosts: {format_bytes(p.cross_host_bytes)}; on the network/DCN: "
        f"{format_bytes(p.network_bytes)}",
    ]
    if p.collective_seconds is not None:
        totals.append(f"estimated communication: {format_seconds(p.collective_seconds)} per step")
    where = f" of {p.function}" if p.function else ""
    return PhysicalFacts(
        title=f"Mesh on the chips{where} · {p.target.label}",
        axes=axes,
        busiest=p.busiest(BUSIEST),
        totals=tuple(totals),
    )


def _by_axis(link: LinkLoad) -> str:
    return ", ".join(f"{a} {format_bytes(b)}" for a, b in link.by_axis)


# ----- text -----


def _grid_text(p: PhysicalLayout) -> list[str]:
    """The chips as grids of device ids: x across, y down, one block per z (TPU); one line
    per host (GPU)."""
    lines: list[str] = []
    if p.target.kind != "tpu":
        hosts: dict[tuple[int, int], list[tuple[int, int]]] = {}
        for c in p.chips:
            hosts.setdefault((c.slice, c.host), []).append((c.chip[0], c.device))
        for (sl, h), gpus in sorted(hosts.items()):
            ids = " ".join(f"d{d:<3}" for _, d in sorted(gpus))
            lines.append(f"  host {h}{f' (slice {sl})' if sl else ''}: {ids}")
        return lines
    shape = p.target.shape
    by_chip = {(c.slice, *c.chip): c.device for c in p.chips}
    slices = sorted({c.slice for c in p.chips})
    nz = shape[2] if len(shape) > 2 else 1
    for sl in slices:
        for z in range(nz):
            head = []
            if len(slices) > 1:
                head.append(f"slice {sl}")
            if len(shape) > 2:
                head.append(f"z={z}")
            if head:
                lines.append("  " + ", ".join(head))
            lines.append("       " + "".join(f"x={x:<4}" for x in range(shape[0])))
            for y in range(shape[1] if len(shape) > 1 else 1):
                row = []
                for x in range(shape[0]):
                    key = (sl, x, y, z)[: 1 + len(shape)]
                    d = by_chip.get(key)
                    row.append(f"d{d:<4}" if d is not None else "·    ")
                lines.append(f"  y={y:<3}" + " ".join(row))
    return lines


def physical_text(p: PhysicalLayout) -> str:
    """The layout in words: each axis's rings, the chips, the busiest links, the rule."""
    f = physical_facts(p)
    out = [f.title, ""]
    rows = [
        [
            repr(a.axis),
            str(a.size),
            a.shape + (" (wraps)" if a.wraps else ""),
            format_bytes(a.ledger_bytes),
            format_bytes(a.link_bytes),
        ]  # fmt: skip
        for a in f.axes
    ]
    if rows:
        out += aligned_table(["axis", "size", "rings", "ledger", "on links"], rows, {1, 3, 4}, "  ")
        for a in f.axes:
            out.append(f"  {a.axis!r}: {a.words}")
            out.append(f"    first ring: {a.first_ring}")
    else:
        out.append("  no mesh axis of 2 or more devices")
    out += ["", "Chips (device at each chip)"] + _grid_text(p)
    out += ["", "Busiest links"]
    if f.busiest:
        out += aligned_table(
            ["link", "kind", "bytes/step", "by axis"],
            [[x.label, x.kind, format_bytes(x.bytes), _by_axis(x)] for x in f.busiest],
            {2},
            "  ",
        )
    else:
        out.append("  none: no collective moves bytes between chips")
    out += ["", *f.totals, ""]
    out += textwrap.wrap("Rule: " + LINK_RULE, WIDTH)
    if p.notes:
        out += ["", "Notes"] + [f"  - {n}" for n in p.notes]
    return "\n".join(out)


# ----- HTML -----


def _load_style(nbytes: int, top: int) -> tuple[str, float]:
    """A link's colour and width by its share of the busiest link's bytes: the load ramp of
    :func:`~.colors.load_color` (greys, apart from the axes' hues), thicker when busier."""
    if nbytes <= 0 or top <= 0:
        return IDLE_LINK, IDLE_W
    share = nbytes / top
    return load_color(share), LOAD_W0 + (LOAD_W1 - LOAD_W0) * share


def _load_scale(p: PhysicalLayout) -> str:
    """The key to the links: the load ramp from the least to the most loaded link, with their
    bytes, and what the bars and the coloured lines mean."""
    loads = [x.bytes for x in p.links if x.bytes > 0]
    rings = (
        "Thin coloured lines: each axis's rings, in the axis's colour above (dotted where a "
        "step jumps several hops)."
    )
    if not loads:
        return (
            '<div class="sv-loadscale" data-min="0" data-max="0"><span class="sv-loadwords">'
            f"No link carries bytes. {esc(rings)}</span></div>"
        )
    low, top = min(loads), max(loads)
    step_w, h = 36.0, 14.0
    parts = []
    for k in range(SCALE_STEPS):
        nbytes = round(low + (top - low) * k / (SCALE_STEPS - 1))
        color, width = _load_style(nbytes, top)
        parts.append(
            svg_rect(
                k * step_w,
                h / 2 + 2 - width / 2,
                step_w - 2,
                width,
                f' class="sv-loadstep" fill="{color}" data-load="{nbytes}"',
            )
        )
    w = SCALE_STEPS * step_w
    parts.append(svg_text(0, h + 14, format_bytes(low), "sv-scalelab"))
    parts.append(svg_text(w - 2, h + 14, format_bytes(top), "sv-scalelab", ' text-anchor="end"'))
    svg = (
        f'<svg width="{svg_num(w)}" height="{svg_num(h + 18)}" '
        f'viewBox="0 0 {svg_num(w)} {svg_num(h + 18)}">{"".join(parts)}</svg>'
    )
    words = (
        "Grey bars between chips: the bytes each link carries per step, all axes together; "
        "darker and thicker is busier, pale is idle (hover a bar for its share by axis; the "
        f"busiest are listed below). {rings}"
    )
    return (
        f'<div class="sv-loadscale" data-min="{low}" data-max="{top}">{svg}'
        f'<span class="sv-loadwords">{esc(words)}</span></div>'
    )


@dataclass(frozen=True)
class ChipLabels:
    """Where a panel's chip labels and its rings sit inside each chip: the label on a plate
    in the top-left corner, the rings' ends below and right of every plate, so that no ring
    drawn chip to chip along a row or a column crosses a label."""

    ring_dx: float
    ring_dy: float

    @staticmethod
    def plate(cx: float, cy: float, label: str) -> tuple[float, float, float, float]:
        """The label's plate (x, y, width, height) on the chip centred at (cx, cy)."""
        w = text_width(label, LABEL_PX) + 4
        return cx - CELL / 2 + LABEL_INSET, cy - CELL / 2 + LABEL_INSET, w, LABEL_H

    @classmethod
    def fit(cls, labels: list[str], n_axes: int) -> ChipLabels:
        """Ring ends clear of the widest label's plate and of the busiest link's bar (drawn
        centre to centre), with room for ``n_axes`` rings side by side."""
        widest = max(labels, key=len, default="")
        x, y, w, h = cls.plate(0.0, 0.0, widest)
        bar = LOAD_W1 / 2 + 2
        spread = (n_axes - 1) / 2 * RING_SPREAD
        return cls(ring_dx=max(x + w + 2, bar) + spread, ring_dy=max(y + h + 2, bar) + spread)


def _chip_name(cx: float, cy: float, label: str) -> str:
    """A chip's label on a white plate (drawn after the rings, so nothing hides it)."""
    x, y, w, h = ChipLabels.plate(cx, cy, label)
    return (
        f'<g class="sv-chipname">{svg_rect(x, y, w, h)}'
        + svg_text(x + 2, y + h - 3, label, "sv-chiplabel")
        + "</g>"
    )


def _link_attrs(link: LinkLoad, top: int) -> str:
    color, width = _load_style(link.bytes, top)
    ends = ",".join(map(str, link.a)) + "|" + ",".join(map(str, link.b))
    title = f"{link.label} {link.kind}: {format_bytes(link.bytes)} per step"
    if link.by_axis:
        title += f" ({_by_axis(link)})"
    return (
        f' class="sv-link" data-kind="{esc(link.kind)}" data-bytes="{link.bytes}" '
        f'data-link="{esc(ends)}" stroke="{color}" stroke-width="{svg_num(width)}"'
        f"><title>{esc(title)}</title>"
    )


@dataclass(frozen=True)
class _Panel:
    """One TPU panel: a slice's chips at one ``z``, laid out ``margin`` in, ``pitch`` apart."""

    slice: int
    z: int
    margin: float
    pitch: float

    def has(self, e: tuple[int, ...]) -> bool:
        """Whether the chip ``(slice, x, y[, z])`` is on this panel."""
        return e[0] == self.slice and (len(e) < 4 or e[3] == self.z)

    def center(self, x: int, y: int) -> tuple[float, float]:
        return self.margin + x * self.pitch + CELL / 2, self.margin + y * self.pitch + CELL / 2

    def at(self, e: tuple[int, ...]) -> tuple[float, float]:
        """The centre of the chip ``(slice, x[, y[, z]])``."""
        return self.center(e[1], e[2] if len(e) > 2 else 0)


def _tpu_panels(p: PhysicalLayout) -> list[str]:
    """One SVG per slice and ``z`` plane: the chips, the ICI links between them (wraparounds
    as arcs outside the grid) and each mesh axis's rings over them."""
    shape = p.target.shape
    nx = shape[0]
    ny = shape[1] if len(shape) > 1 else 1
    nz = shape[2] if len(shape) > 2 else 1
    pitch = CELL + GAP
    margin = 24.0
    w, h = margin * 2 + nx * pitch - GAP, margin * 2 + ny * pitch - GAP
    slices = sorted({c.slice for c in p.chips})
    panels = []
    for sl in slices:
        for z in range(nz):
            panel = _Panel(sl, z, margin, pitch)
            chips, names = _chip_svgs(p, panel, shape, nx, ny)
            parts = _link_svgs(p, panel) + chips + _ring_svgs(p, panel) + names
            cap = []
            if len(slices) > 1:
                cap.append(f"slice {sl}")
            if nz > 1:
                cap.append(f"z = {z}")
            caption = svg_text(margin, 14, ", ".join(cap) or "x →, y ↓", "sv-cap")
            panels.append(
                f'<svg class="sv-chips" data-z="{z}" data-slice="{sl}" width="{svg_num(w)}" '
                f'height="{svg_num(h)}" viewBox="0 0 {svg_num(w)} {svg_num(h)}">'
                + caption
                + "".join(parts)
                + "</svg>"
            )
    return panels


def _link_svgs(p: PhysicalLayout, panel: _Panel) -> list[str]:
    """The panel's ICI links, edge to edge in the gap between two chips; a wraparound as an
    arc round the outside of the grid."""
    top = p.max_link_bytes
    parts = []
    for link in p.links:
        if link.kind not in ("ici", "wrap") or not (panel.has(link.a) and panel.has(link.b)):
            continue
        (ax, ay), (bx, by) = panel.at(link.a), panel.at(link.b)
        if link.kind == "wrap":
            if ay == by:
                path = (f"M{svg_num(ax)},{svg_num(ay - CELL / 2)} C{svg_num(ax)},"
                        f"{svg_num(ay - CELL)} {svg_num(bx)},{svg_num(by - CELL)} "
                        f"{svg_num(bx)},{svg_num(by - CELL / 2)}")  # fmt: skip
            else:
                path = (f"M{svg_num(ax - CELL / 2)},{svg_num(ay)} C{svg_num(ax - CELL)},"
                        f"{svg_num(ay)} {svg_num(bx - CELL)},{svg_num(by)} "
                        f"{svg_num(bx - CELL / 2)},{svg_num(by)}")  # fmt: skip
            parts.append(f'<path d="{path}" stroke-dasharray="5 3"{_link_attrs(link, top)}</path>')
        else:
            length = max(abs(bx - ax) + abs(by - ay), 1.0)
            ux, uy = (bx - ax) / length * CELL / 2, (by - ay) / length * CELL / 2
            parts.append(
                f'<line x1="{svg_num(ax + ux)}" y1="{svg_num(ay + uy)}" '
                f'x2="{svg_num(bx - ux)}" y2="{svg_num(by - uy)}"{_link_attrs(link, top)}'
                "</line>"
            )
    return parts


def _chip_svgs(
    p: PhysicalLayout, panel: _Panel, shape: tuple[int, ...], nx: int, ny: int
) -> tuple[list[str], list[str]]:
    """The panel's chips (each with its device, ``·`` where none) and their labels, drawn
    last so that links and rings stay under them."""
    by_chip = {(c.slice, *c.chip): c.device for c in p.chips}
    chips, names = [], []
    for y in range(ny):
        for x in range(nx):
            key = (panel.slice, x, y, panel.z)[: 1 + len(shape)]
            d = by_chip.get(key)
            cx, cy = panel.center(x, y)
            chip = ",".join(map(str, key[1:]))
            label = f"d{d}" if d is not None else "·"
            chips.append(
                f'<g class="sv-chip" data-device="{"" if d is None else d}" '
                f'data-chip="{chip}"><title>chip ({esc(chip)}): {esc(label)}</title>'
                f'<rect x="{svg_num(cx - CELL / 2)}" y="{svg_num(cy - CELL / 2)}" '
                f'width="{svg_num(CELL)}" height="{svg_num(CELL)}" rx="4"/></g>'
            )
            names.append(_chip_name(cx, cy, label))
    return chips, names


def _ring_svgs(p: PhysicalLayout, panel: _Panel) -> list[str]:
    """Each mesh axis's rings on the panel, offset a little per axis so they do not hide each
    other, and below and right of the chips' labels; a ring step of more than one hop
    dashed, a wraparound as a curve."""
    colors = {name: axis_color(i) for i, name in enumerate(p.mesh.axis_names)}
    site = {c.device: (c.slice, *c.chip) for c in p.chips}
    fit = ChipLabels.fit([f"d{c.device}" for c in p.chips], len(p.axes))
    parts = []
    for i, a in enumerate(p.axes):
        off = (i - (len(p.axes) - 1) / 2) * RING_SPREAD
        for ring in a.rings[:MAX_RINGS]:
            n = len(ring.devices)
            for k in range(n):
                s, t = site[ring.devices[k]], site[ring.devices[(k + 1) % n]]
                if not (panel.has(s) and panel.has(t)) or (n == 2 and k == 1):
                    continue
                (sx, sy), (tx, ty) = panel.at(s), panel.at(t)
                dash = ' stroke-dasharray="2 3"' if ring.hops[k] > 1 else ""
                dx, dy = fit.ring_dx + off, fit.ring_dy + off
                sx, sy, tx, ty = sx + dx, sy + dy, tx + dx, ty + dy
                step = f"L{svg_num(tx)},{svg_num(ty)}"
                if ring.hops[k] == 1 and abs(sx - tx) > panel.pitch * 1.5:  # x wraparound
                    lift = min(sy, ty) - CELL * 0.9
                    step = (f"C{svg_num(sx)},{svg_num(lift)} {svg_num(tx)},"
                            f"{svg_num(lift)} {svg_num(tx)},{svg_num(ty)}")  # fmt: skip
                elif ring.hops[k] == 1 and abs(sy - ty) > panel.pitch * 1.5:  # y wraparound
                    side = min(sx, tx) - CELL * 0.9
                    step = (f"C{svg_num(side)},{svg_num(sy)} {svg_num(side)},"
                            f"{svg_num(ty)} {svg_num(tx)},{svg_num(ty)}")  # fmt: skip
                parts.append(
                    f'<path class="sv-ring" data-axis="{esc(a.axis)}" '
                    f'd="M{svg_num(sx)},{svg_num(sy)} {step}" '
                    f'stroke="{colors.get(a.axis, "#57606a")}"{dash}>'
                    f"<title>{esc(a.axis)}: {ring.hops[k]} hop(s)</title></path>"
                )
    return parts


def _gpu_panels(p: PhysicalLayout) -> list[str]:
    hosts: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for c in p.chips:
        hosts.setdefault((c.slice, c.host), []).append((c.chip[0], c.device))
    keys = sorted(hosts)
    per = max(len(v) for v in hosts.values())
    pitch, box_h, gap = CELL + 10, CELL + 70, 40.0
    w = 20 + per * pitch + 20
    h = len(keys) * (box_h + gap)
    top = p.max_link_bytes
    colors = {name: axis_color(i) for i, name in enumerate(p.mesh.axis_names)}
    pos: dict[int, tuple[float, float]] = {}
    parts = []
    for r, key in enumerate(keys):
        y0 = r * (box_h + gap)
        parts.append(
            f'<g class="sv-host" data-host="{key[1]}"><rect x="4" y="{svg_num(y0 + 4)}" '
            f'width="{svg_num(w - 8)}" height="{svg_num(box_h)}" rx="6"/>'
            + svg_text(12, y0 + 18, f"host {key[1]}", "sv-cap")
            + "</g>"
        )
        for local, d in sorted(hosts[key]):
            cx, cy = 20 + local * pitch + CELL / 2, y0 + box_h - CELL / 2 - 6
            pos[d] = (cx, cy)
            parts.append(
                f'<g class="sv-chip" data-device="{d}" data-chip="{local}">'
                f'<rect x="{svg_num(cx - CELL / 2)}" y="{svg_num(cy - CELL / 2)}" '
                f'width="{svg_num(CELL)}" height="{svg_num(CELL)}" rx="4"/>'
                + svg_text(cx, cy + 4, f"d{d}", "sv-chiplabel")
                + "</g>"
            )
    gpu_of = {(c.slice, c.host, *c.chip): c.device for c in p.chips}
    host_row = {k: i for i, k in enumerate(keys)}
    for link in p.links:
        if link.kind == "nvlink":
            ga, gb = gpu_of.get(link.a), gpu_of.get(link.b)
            if ga is None or gb is None:
                continue
            (ax, ay), (bx, by) = pos[ga], pos[gb]
            lift = 10 + abs(bx - ax) / 6
            arc = (f"M{svg_num(ax)},{svg_num(ay - CELL / 2)} Q{svg_num((ax + bx) / 2)},"
                 f"{svg_num(ay - CELL / 2 - lift)} {svg_num(bx)},{svg_num(by - CELL / 2)}")  # fmt: skip
            parts.append(f'<path d="{arc}"{_link_attrs(link, top)}</path>')
        elif link.kind in ("network", "dcn") and len(link.a) == 2:
            ra, rb = host_row.get((link.a[0], link.a[1])), host_row.get((link.b[0], link.b[1]))
            if ra is None or rb is None:
                continue
            x = w - 14
            y1, y2 = ra * (box_h + gap) + box_h / 2, rb * (box_h + gap) + box_h / 2
            parts.append(
                f'<line x1="{svg_num(x)}" y1="{svg_num(y1)}" x2="{svg_num(x)}" '
                f'y2="{svg_num(y2)}"{_link_attrs(link, top)}</line>'
            )
    for i, ax_rings in enumerate(p.axes):
        off = (i - (len(p.axes) - 1) / 2) * 5.0
        for ring in ax_rings.rings[:MAX_RINGS]:
            n = len(ring.devices)
            for k in range(n):
                if n == 2 and k == 1:
                    continue
                (sx, sy), (tx, ty) = pos[ring.devices[k]], pos[ring.devices[(k + 1) % n]]
                dash = ' stroke-dasharray="2 3"' if abs(sy - ty) > 1 else ""
                parts.append(
                    f'<path class="sv-ring" data-axis="{esc(ax_rings.axis)}" '
                    f'd="M{svg_num(sx)},{svg_num(sy + CELL / 2 + 4 + off)} '
                    f'L{svg_num(tx)},{svg_num(ty + CELL / 2 + 4 + off)}" '
                    f'stroke="{colors.get(ax_rings.axis, "#57606a")}"{dash}>'
                    f"<title>{esc(ax_rings.axis)}</title></path>"
                )
    return [
        f'<svg class="sv-chips" data-host="all" width="{svg_num(w)}" height="{svg_num(h)}" '
        f'viewBox="0 0 {svg_num(w)} {svg_num(h)}">' + "".join(parts) + "</svg>"
    ]


def physical_html(p: PhysicalLayout) -> str:
    """The chips drawn, each axis's rings on the links, the busiest links, the rule."""
    f = physical_facts(p)
    axes = "".join(
        f'<li class="sv-axis" data-axis="{esc(a.axis)}" data-shape="{esc(a.shape)}">'
        f'<span class="sv-swatch" style="background:{a.color}"></span><b>{esc(repr(a.axis))}</b>'
        f" ({a.size}): {esc(a.words)}{' · over wraparound links' if a.wraps else ''} · "
        f"ledger {esc(format_bytes(a.ledger_bytes))}, on links "
        f"{esc(format_bytes(a.link_bytes))}</li>"
        for a in f.axes
    )
    panels = _tpu_panels(p) if p.target.kind == "tpu" else _gpu_panels(p)
    rows = "".join(
        f"<tr><td>{esc(x.label)}</td><td>{esc(x.kind)}</td><td>{esc(format_bytes(x.bytes))}"
        f"</td><td>{esc(_by_axis(x))}</td></tr>"
        for x in f.busiest
    )
    busiest = (
        '<table class="sv-busiest"><tr><th>busiest links</th><th>kind</th><th>bytes/step</th>'
        f"<th>by axis</th></tr>{rows}</table>"
        if rows
        else '<p class="sv-busiest">no collective moves bytes between chips</p>'
    )
    totals = "".join(f"<div>{esc(t)}</div>" for t in f.totals)
    if p.target.kind == "tpu" and len(p.target.shape) > 2:
        totals += "<div>links along z join the panels: listed above when busy, not drawn</div>"
    notes = "".join(f"<li>{esc(n)}</li>" for n in p.notes)
    return (
        f'<div class="sv-root sv-physical" data-target="{esc(p.target.name)}">'
        f"<style>{CSS.replace(chr(10), '')}{_CSS}</style>"
        f'<div class="sv-head"><b>{esc(f.title)}</b></div>'
        f'<ul class="sv-axes">{axes}</ul>'
        f'<div class="sv-panels">{"".join(panels)}</div>{_load_scale(p)}'
        f"{busiest}<div class='sv-totals'>{totals}</div>"
        f'<p class="sv-rule">Rule: {esc(LINK_RULE)}</p>'
        + (f'<ul class="sv-notes">{notes}</ul>' if notes else "")
        + "</div>"
    )


def physical_page(p: PhysicalLayout) -> str:
    """The layout as one self-contained offline HTML document."""
    return page(f"shardviz: {p.function} on {p.target.label}", [physical_html(p)])
