"""The live training view's charts as static SVG: loss, step times, memory per device.

The same pictures live.js draws, from the same view objects (:mod:`.view`: scales, tick
labels, tooltips) and chart geometry, for saved notebooks and files. Every user-visible string
is escaped here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from shardviz.render.live.view import (
    LOSS_H,
    LOSS_W,
    MAX_MEMORY_BARS,
    MEM_BAR,
    MEM_LABEL,
    MEM_ROW,
    MEM_VALUE,
    PAD_B,
    PAD_L,
    PAD_R,
    PAD_T,
    TIME_H,
    TIME_W,
    Json,
    LiveLossView,
    LiveTimeView,
    MemoryRow,
    loss_readout,
    memory_readout,
    time_readout,
)
from shardviz.render.svg import esc, svg_num

__all__ = [
    "LOSS_H",
    "LOSS_W",
    "MAX_MEMORY_BARS",
    "PAD_L",
    "PAD_T",
    "TIME_H",
    "TIME_W",
    "loss_svg",
    "memory_svg",
    "time_svg",
]


def _x_of(i: int, count: int, width: int) -> float:
    """x of the ``i``-th step (0-based) when the axis spans ``count`` steps."""
    plot = width - PAD_L - PAD_R
    return PAD_L + (plot / 2 if count <= 1 else i / (count - 1) * plot)


def _y_of(v: float, lo: float, hi: float, height: int) -> float:
    plot = height - PAD_T - PAD_B
    return PAD_T + (hi - v) / (hi - lo) * plot


def _path(points: Sequence[tuple[float, float] | None]) -> str:
    """An SVG path through the points, broken where a point is ``None``."""
    out, pen_down = [], False
    for p in points:
        if p is None:
            pen_down = False
            continue
        out.append(f"{'L' if pen_down else 'M'}{svg_num(p[0])} {svg_num(p[1])}")
        pen_down = True
    return "".join(out)


def _axes(width: int, height: int) -> str:
    x0, y1 = PAD_L, height - PAD_B
    return (
        f'<line class="sv-l-axis" x1="{x0}" y1="{PAD_T}" x2="{x0}" y2="{y1}"/>'
        f'<line class="sv-l-axis" x1="{x0}" y1="{y1}" x2="{width - PAD_R}" y2="{y1}"/>'
    )


def _tick(x: float, y: float, text: str, anchor: str) -> str:
    return f'<text x="{svg_num(x)}" y="{svg_num(y)}" text-anchor="{anchor}">{esc(text)}</text>'


def _x_ticks(count: int, width: int, height: int) -> str:
    y = height - PAD_B + 14
    last = max(count, 1)
    ticks = _tick(PAD_L, y, "1", "start")
    if last > 1:
        ticks += _tick(width - PAD_R, y, str(last), "end")
    return ticks


def _y_ticks(readout: LiveLossView | LiveTimeView, height: int) -> str:
    """The readout's tick labels, right-aligned left of the y axis."""
    lo, hi = readout.range
    return "".join(
        _tick(PAD_L - 4, _y_of(t.value, lo, hi, height) + 3, t.text, "end") for t in readout.ticks
    )


def loss_svg(losses: Sequence[float | None], total_steps: int = 0) -> str:
    """The loss curve: a path through the finite losses and one point per loss.

    A non-finite loss (``None`` in synced state) is a red point on the top edge, and the path
    breaks there.
    """
    count = max(total_steps, len(losses))
    readout = loss_readout(losses)
    lo, hi = readout.range
    pts: list[tuple[float, float] | None] = []
    dots = []
    for i, (v, title) in enumerate(zip(losses, readout.titles, strict=True)):
        x = _x_of(i, count, LOSS_W)
        good = v is not None and math.isfinite(v)
        y = _y_of(v, lo, hi, LOSS_H) if v is not None and good else PAD_T
        pts.append((x, y) if good else None)
        cls = "sv-l-pt" if good else "sv-l-pt sv-l-bad"
        dots.append(
            f'<circle class="{cls}" cx="{svg_num(x)}" cy="{svg_num(y)}" r="{_radius(len(losses))}">'
            f"<title>{esc(title)}</title></circle>"
        )
    ticks = _x_ticks(count, LOSS_W, LOSS_H) + _y_ticks(readout, LOSS_H)
    return (
        f'<svg class="sv-l-chart sv-l-loss" width="{LOSS_W}" height="{LOSS_H}" '
        f'viewBox="0 0 {LOSS_W} {LOSS_H}" role="img" aria-label="loss by step">'
        f'{_axes(LOSS_W, LOSS_H)}{ticks}<path class="sv-l-line" d="{_path(pts)}"/>'
        f'<g class="sv-l-pts">{"".join(dots)}</g></svg>'
    )


def _radius(n: int) -> str:
    return "2.5" if n <= 200 else "1.5"


def time_svg(step_ms: Sequence[float], total_steps: int = 0, hosts: Sequence[Json] = ()) -> str:
    """Step times after the first (compile) step, with their median as a dashed line; in a
    multi-process run, each process's own times as a thin line in its colour."""
    count = max(total_steps, len(step_ms))
    readout = time_readout(step_ms, hosts)
    lo, top = readout.range

    def points(ms: Sequence[float]) -> list[tuple[float, float] | None]:
        return [
            (_x_of(i, count, TIME_W), _y_of(v, lo, top, TIME_H))
            for i, v in enumerate(ms[1:], start=1)
        ]

    host_lines = "".join(
        f'<path class="sv-l-host" stroke="{esc(line.color)}" d="{_path(points(h["step_ms"]))}">'
        f"<title>{esc(line.title)}</title></path>"
        for h, line in zip(hosts, readout.hosts, strict=True)
    )
    ticks = _x_ticks(count, TIME_W, TIME_H) + _y_ticks(readout, TIME_H)
    median = ""
    if readout.median is not None:
        y = _y_of(readout.median.value, lo, top, TIME_H)
        median = (
            f'<line class="sv-l-median" x1="{PAD_L}" y1="{svg_num(y)}" x2="{TIME_W - PAD_R}" '
            f'y2="{svg_num(y)}"><title>{esc(readout.median.title)}</title></line>'
        )
    return (
        f'<svg class="sv-l-chart sv-l-time{" sv-l-hosts" if hosts else ""}" '
        f'width="{TIME_W}" height="{TIME_H}" '
        f'viewBox="0 0 {TIME_W} {TIME_H}" role="img" aria-label="step time by step">'
        f"{_axes(TIME_W, TIME_H)}{ticks}{median}"
        f'<path class="sv-l-line" d="{_path(points(step_ms))}"/>{host_lines}</svg>'
    )


def memory_svg(memory: Sequence[Json]) -> str:
    """One bar per device (in the device's colour), scaled to the limit when every one has it."""
    readout = memory_readout(memory, "")
    scale = readout.scale
    rows = [
        _memory_row(r, entry, words, scale)
        for r, (entry, words) in enumerate(zip(memory, readout.rows, strict=False))
    ]
    height = MEM_ROW * (len(readout.rows) + (1 if readout.more else 0))
    if readout.more:
        rows.append(_tick(0, height - 5, readout.more, "start"))
    width = MEM_LABEL + MEM_BAR + MEM_VALUE
    return (
        f'<svg class="sv-l-mem" width="{width}" height="{max(height, 1)}" '
        f'viewBox="0 0 {width} {max(height, 1)}" role="img" aria-label="memory per device">'
        f"{''.join(rows)}</svg>"
    )


def _memory_row(r: int, entry: Json, words: MemoryRow, scale: float) -> str:
    y = r * MEM_ROW
    used = int(entry.get("bytes") or 0)
    w = max(1.0, used / scale * MEM_BAR)
    peak = ""
    if entry.get("peak"):
        px = MEM_LABEL + entry["peak"] / scale * MEM_BAR
        peak = (
            f'<line class="sv-l-peak" x1="{svg_num(px)}" y1="{y + 2}" x2="{svg_num(px)}" '
            f'y2="{y + MEM_ROW - 3}"/>'
        )
    return (
        f'<g class="sv-l-bar" data-device="{esc(entry["device"])}"><title>{esc(words.title)}</title>'
        f'<text class="sv-l-dev" x="0" y="{y + 12}">{esc(words.label)}</text>'
        f'<rect x="{MEM_LABEL}" y="{y + 3}" width="{svg_num(w)}" height="{MEM_ROW - 6}" '
        f'fill="{esc(entry.get("color") or "#eaeef2")}"/>{peak}'
        f'<text x="{svg_num(MEM_LABEL + w + 4)}" y="{y + 12}">{esc(words.text)}</text></g>'
    )
