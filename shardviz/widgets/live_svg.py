"""The live training view's charts as static SVG: loss, step times, memory per device.

The same pictures live.js draws (the chart geometry below is shared with it), for saved
notebooks and files. Every user-visible string is escaped here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from shardviz.render.geometry import format_bytes
from shardviz.render.svg import esc, svg_num

from .live_format import format_loss, format_ms, median_step_ms

Json = dict[str, Any]

#: Devices drawn in the memory panel before the rest are summarised.
MAX_MEMORY_BARS = 64

# Chart geometry, shared with live.js (px).
LOSS_W, LOSS_H = 380, 180
TIME_W, TIME_H = 240, 120
PAD_L, PAD_R, PAD_T, PAD_B = 56, 10, 10, 22
MEM_ROW, MEM_LABEL, MEM_BAR, MEM_VALUE = 18, 52, 150, 78


def _x_of(i: int, count: int, width: int) -> float:
    """x of the ``i``-th step (0-based) when the axis spans ``count`` steps."""
    plot = width - PAD_L - PAD_R
    return PAD_L + (plot / 2 if count <= 1 else i / (count - 1) * plot)


def _span(values: Sequence[float]) -> tuple[float, float]:
    """The y range drawn for some finite values: their range, padded a little."""
    if not values:
        return 0.0, 1.0
    lo, hi = min(values), max(values)
    if hi == lo:
        pad = abs(hi) * 0.05 or 1.0
        return lo - pad, hi + pad
    pad = (hi - lo) * 0.04
    return lo - pad, hi + pad


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


def loss_svg(losses: Sequence[float | None], total_steps: int = 0) -> str:
    """The loss curve: a path through the finite losses and one point per loss.

    A non-finite loss (``None`` in synced state) is a red point on the top edge, and the path
    breaks there.
    """
    count = max(total_steps, len(losses))
    finite = [v for v in losses if v is not None and math.isfinite(v)]
    lo, hi = _span(finite)
    pts: list[tuple[float, float] | None] = []
    dots = []
    for i, v in enumerate(losses):
        x = _x_of(i, count, LOSS_W)
        good = v is not None and math.isfinite(v)
        y = _y_of(v, lo, hi, LOSS_H) if v is not None and good else PAD_T
        pts.append((x, y) if good else None)
        cls = "sv-l-pt" if good else "sv-l-pt sv-l-bad"
        dots.append(
            f'<circle class="{cls}" cx="{svg_num(x)}" cy="{svg_num(y)}" r="{_radius(len(losses))}">'
            f"<title>step {i + 1}: loss {esc(format_loss(v))}</title></circle>"
        )
    ticks = _x_ticks(count, LOSS_W, LOSS_H)
    if finite:
        top, bottom = max(finite), min(finite)
        ticks += _tick(PAD_L - 4, _y_of(top, lo, hi, LOSS_H) + 3, format_loss(top), "end")
        if bottom != top:
            ticks += _tick(PAD_L - 4, _y_of(bottom, lo, hi, LOSS_H) + 3, format_loss(bottom), "end")
    return (
        f'<svg class="sv-l-chart sv-l-loss" width="{LOSS_W}" height="{LOSS_H}" '
        f'viewBox="0 0 {LOSS_W} {LOSS_H}" role="img" aria-label="loss by step">'
        f'{_axes(LOSS_W, LOSS_H)}{ticks}<path class="sv-l-line" d="{_path(pts)}"/>'
        f'<g class="sv-l-pts">{"".join(dots)}</g></svg>'
    )


def _radius(n: int) -> str:
    return "2.5" if n <= 200 else "1.5"


def time_svg(step_ms: Sequence[float], total_steps: int = 0) -> str:
    """Step times after the first (compile) step, with their median as a dashed line."""
    count = max(total_steps, len(step_ms))
    rest = list(step_ms[1:])
    top = max(rest) * 1.1 if rest else 1.0
    pts = [
        (_x_of(i, count, TIME_W), _y_of(v, 0.0, top, TIME_H)) for i, v in enumerate(rest, start=1)
    ]
    ticks = _x_ticks(count, TIME_W, TIME_H)
    median = ""
    med = median_step_ms(step_ms)
    labels = [(0.0, "0")]
    if med is not None:
        labels += [(med, format_ms(med)), (max(rest), format_ms(max(rest)))]
    ticks += "".join(
        _tick(PAD_L - 4, _y_of(v, 0.0, top, TIME_H) + 3, text, "end")
        for v, text in _spaced(labels, top)
    )
    if med is not None:
        y = _y_of(med, 0.0, top, TIME_H)
        median = (
            f'<line class="sv-l-median" x1="{PAD_L}" y1="{svg_num(y)}" x2="{TIME_W - PAD_R}" '
            f'y2="{svg_num(y)}"><title>median {format_ms(med)} ms</title></line>'
        )
    return (
        f'<svg class="sv-l-chart sv-l-time" width="{TIME_W}" height="{TIME_H}" '
        f'viewBox="0 0 {TIME_W} {TIME_H}" role="img" aria-label="step time by step">'
        f'{_axes(TIME_W, TIME_H)}{ticks}{median}<path class="sv-l-line" d="{_path(pts)}"/></svg>'
    )


def _spaced(labels: Sequence[tuple[float, str]], top: float) -> list[tuple[float, str]]:
    """Tick labels, in order of importance, keeping only those 10 px clear of the ones kept."""
    plot = TIME_H - PAD_T - PAD_B
    kept: list[tuple[float, str]] = []
    for v, text in labels:
        if all(abs(v - k) / top * plot >= 10 for k, _ in kept):
            kept.append((v, text))
    return kept


def memory_svg(memory: Sequence[Json]) -> str:
    """One bar per device (in the device's colour), scaled to the limit when every one has it."""
    shown = list(memory[:MAX_MEMORY_BARS])
    scale = _memory_scale(memory)
    rows = []
    for r, entry in enumerate(shown):
        rows.append(_memory_row(r, entry, scale))
    more = len(memory) - len(shown)
    height = MEM_ROW * (len(shown) + (1 if more else 0))
    if more:
        rows.append(_tick(0, height - 5, f"… {more} more devices", "start"))
    width = MEM_LABEL + MEM_BAR + MEM_VALUE
    return (
        f'<svg class="sv-l-mem" width="{width}" height="{max(height, 1)}" '
        f'viewBox="0 0 {width} {max(height, 1)}" role="img" aria-label="memory per device">'
        f"{''.join(rows)}</svg>"
    )


def _memory_scale(memory: Sequence[Json]) -> float:
    limits = [e.get("limit") or 0 for e in memory]
    if memory and all(limits):
        return float(max(limits))
    sizes = [max(e.get("bytes") or 0, e.get("peak") or 0) for e in memory]
    return float(max(sizes, default=0)) or 1.0


def _memory_row(r: int, entry: Json, scale: float) -> str:
    y = r * MEM_ROW
    used = int(entry.get("bytes") or 0)
    w = max(1.0, used / scale * MEM_BAR)
    hover = f"device {entry['device']}: {format_bytes(used, exact=True)}"
    peak = ""
    if entry.get("peak"):
        px = MEM_LABEL + entry["peak"] / scale * MEM_BAR
        peak = (
            f'<line class="sv-l-peak" x1="{svg_num(px)}" y1="{y + 2}" x2="{svg_num(px)}" '
            f'y2="{y + MEM_ROW - 3}"/>'
        )
        hover += f", peak {format_bytes(int(entry['peak']))}"
    if entry.get("limit"):
        hover += f" of {format_bytes(int(entry['limit']))}"
    return (
        f'<g class="sv-l-bar" data-device="{esc(entry["device"])}"><title>{esc(hover)}</title>'
        f'<text class="sv-l-dev" x="0" y="{y + 12}">dev {esc(entry["device"])}</text>'
        f'<rect x="{MEM_LABEL}" y="{y + 3}" width="{svg_num(w)}" height="{MEM_ROW - 6}" '
        f'fill="{esc(entry.get("color") or "#eaeef2")}"/>{peak}'
        f'<text x="{svg_num(MEM_LABEL + w + 4)}" y="{y + 12}">{esc(format_bytes(used))}</text></g>'
    )
