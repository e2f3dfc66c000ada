"""A per-device timeline of one profiled step: a lane of bars per device (compute in grey,
each collective kind in its colour), a time axis, a legend with each kind's total, and a label
that says whether the times are illustrative (CPU) or real.

The lanes come from :func:`shardviz.model.timeline.timeline_of`; :func:`timeline_view` places
them once and spells every word (the heading, each kind's total, each bar's hover text, the
ticks) into a :class:`TimelineView`, which the text and the HTML print and the Explorer syncs
as JSON, so the three show the same bars and words.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from shardviz.model._codec import JsonMixin
from shardviz.model.program import Report
from shardviz.model.timeline import COMPUTE, Timeline, realness_label, timeline_of
from shardviz.model.units import format_seconds
from shardviz.render.colors import COMPUTE_COLOR, KIND_COLORS, OTHER_KIND
from shardviz.render.svg import esc, svg_num, svg_text

#: Width in px of the time axis, of the lane labels left of it, and of one lane.
PLOT_WIDTH = 640.0
LABEL_WIDTH = 64.0
LANE_HEIGHT = 14.0
LANE_GAP = 4.0
#: The narrowest bar drawn, so a very short op still shows.
MIN_BAR = 0.6

CSS = (
    "<style>.sv-timeline .sv-tl-lab{font:11px monospace;fill:#57606a}"
    ".sv-timeline .sv-tl-tick{font:10px monospace;fill:#57606a}"
    ".sv-timeline .sv-tl-legend span{display:inline-block;margin-right:12px}"
    ".sv-timeline .sv-tl-swatch{display:inline-block;width:10px;height:10px;"
    "margin-right:4px;vertical-align:middle}</style>"
)


def kind_color(kind: str) -> str:
    """The fill of a bar of ``kind``: grey for compute, the ledger's colour for a collective."""
    if kind == COMPUTE:
        return COMPUTE_COLOR
    return KIND_COLORS.get(kind, OTHER_KIND)[0]


@dataclass(frozen=True)
class PlacedBar:
    """A bar placed on its lane: ``x`` and ``w`` in px from the axis start."""

    x: float
    w: float
    name: str
    kind: str
    start: float
    seconds: float


def layout(t: Timeline, width: float = PLOT_WIDTH) -> list[tuple[int, list[PlacedBar]]]:
    """Each lane's bars placed on a time axis ``width`` px long: ``(device, bars)``."""
    scale = width / t.span if t.span > 0 else 0.0
    return [
        (
            lane.device,
            [
                PlacedBar(
                    x=b.start * scale,
                    w=max(MIN_BAR, b.seconds * scale),
                    name=b.name,
                    kind=b.kind,
                    start=b.start,
                    seconds=b.seconds,
                )
                for b in lane.bars
            ],
        )
        for lane in t.lanes
    ]


def ticks(span: float, target: int = 5) -> list[float]:
    """Round times from 0 to ``span`` (1, 2 or 5 times a power of ten apart)."""
    if span <= 0:
        return [0.0]
    raw = span / target
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    return [i * step for i in range(int(span / step + 1e-9) + 1)]


def legend(t: Timeline) -> list[tuple[str, str, float]]:
    """``(kind, colour, total seconds)`` of each kind shown."""
    return [(k, kind_color(k), t.totals[k]) for k in t.kinds]


#: A bar as drawn: x and width (px from the axis start), position in the kinds, hover text.
DrawnBar = tuple[float, float, int, str]


@dataclass(frozen=True)
class LaneView(JsonMixin):
    """One device's lane: its bars, in time order."""

    device: int
    bars: tuple[DrawnBar, ...]


@dataclass(frozen=True)
class TimelineView(JsonMixin):
    """A profiled step as every view shows it (:func:`timeline_view`)."""

    #: Whether the times are real or illustrative, in words.
    label: str
    illustrative: bool
    #: ``Timeline · one profiled step · 8 devices · 24 ops · 1.2 ms``.
    heading: str
    devices: int
    ops: int
    #: The step's span, in words.
    span: str
    #: Px of the time axis.
    width: float
    #: ``(kind, colour, total in words)``, compute first.
    kinds: tuple[tuple[str, str, str], ...]
    lanes: tuple[LaneView, ...]
    #: ``(x, text)`` of each tick of the time axis.
    ticks: tuple[tuple[float, str], ...]


def bar_tip(b: PlacedBar) -> str:
    """A bar's hover text: ``dot.1 · compute · 1.2 ms at 0 s``."""
    return f"{b.name} · {b.kind} · {format_seconds(b.seconds)} at {format_seconds(b.start)}"


def timeline_view(t: Timeline) -> TimelineView:
    """``t`` laid out on a :data:`PLOT_WIDTH` px axis, with its words."""
    kinds = legend(t)
    position = {k: i for i, (k, _, _) in enumerate(kinds)}
    scale = PLOT_WIDTH / t.span if t.span > 0 else 0.0
    span = format_seconds(t.span)
    return TimelineView(
        label=realness_label(t),
        illustrative=t.illustrative,
        heading=f"Timeline · one profiled step · {len(t.lanes)} devices · {t.bars} ops · {span}",
        devices=len(t.lanes),
        ops=t.bars,
        span=span,
        width=PLOT_WIDTH,
        kinds=tuple((k, c, format_seconds(total)) for k, c, total in kinds),
        lanes=tuple(
            LaneView(
                device,
                tuple((round(b.x, 2), round(b.w, 2), position[b.kind], bar_tip(b)) for b in bars),
            )
            for device, bars in layout(t)
        ),
        ticks=tuple((round(s * scale, 2), format_seconds(s)) for s in ticks(t.span)),
    )


def timeline_svg(t: Timeline, view: TimelineView | None = None) -> str:
    """The lanes and time axis as one ``<svg>``; every op's name is in its bar's tooltip."""
    view = view if view is not None else timeline_view(t)
    rows = layout(t)
    axis_y = len(rows) * (LANE_HEIGHT + LANE_GAP) + 2
    height = axis_y + 18
    width = LABEL_WIDTH + PLOT_WIDTH + 40
    out = [
        f'<svg class="sv-tl-svg" width="{svg_num(width)}" height="{svg_num(height)}" '
        f'viewBox="0 0 {svg_num(width)} {svg_num(height)}" role="img" '
        'aria-label="timeline of one profiled step, one lane per device">'
    ]
    for i, ((device, bars), lane) in enumerate(zip(rows, view.lanes, strict=True)):
        y = i * (LANE_HEIGHT + LANE_GAP)
        out.append(f'<g class="sv-tl-lane" data-device="{device}">')
        out.append(svg_text(0, y + LANE_HEIGHT - 3, f"dev {device}", "sv-tl-lab"))
        for b, (*_, tip) in zip(bars, lane.bars, strict=True):
            out.append(
                f'<rect class="sv-tl-bar" data-kind="{esc(b.kind)}" fill="{kind_color(b.kind)}" '
                f'x="{svg_num(LABEL_WIDTH + b.x)}" y="{svg_num(y)}" width="{svg_num(b.w)}" '
                f'height="{svg_num(LANE_HEIGHT)}"><title>{esc(tip)}</title></rect>'
            )
        out.append("</g>")
    scale = PLOT_WIDTH / t.span if t.span > 0 else 0.0
    out.append(
        f'<line x1="{svg_num(LABEL_WIDTH)}" y1="{svg_num(axis_y)}" '
        f'x2="{svg_num(LABEL_WIDTH + PLOT_WIDTH)}" y2="{svg_num(axis_y)}" stroke="#8c959f"/>'
    )
    for s, (_, text) in zip(ticks(t.span), view.ticks, strict=True):
        x = LABEL_WIDTH + s * scale
        out.append(
            f'<line x1="{svg_num(x)}" y1="{svg_num(axis_y)}" x2="{svg_num(x)}" '
            f'y2="{svg_num(axis_y + 3)}" stroke="#8c959f"/>'
        )
        out.append(svg_text(x, axis_y + 14, text, "sv-tl-tick", ' text-anchor="middle"'))
    out.append("</svg>")
    return "".join(out)


def timeline_html(report: Report) -> str:
    """The report's timeline section, or ``""`` when the report has no timeline."""
    t = timeline_of(report)
    if t is None:
        return ""
    view = timeline_view(t)
    label_cls = "sv-illus sv-illustrative" if view.illustrative else "sv-real"
    keys = "".join(
        f'<span data-kind="{esc(k)}"><i class="sv-tl-swatch" style="background:{c}"></i>'
        f"{esc(k)} {esc(total)}</span>"
        for k, c, total in view.kinds
    )
    return (
        f'<div class="sv-timeline">{CSS}<h4>Timeline<span class="sv-dim">one profiled step, '
        f"{view.devices} device{'s' if view.devices != 1 else ''}, {view.ops} ops, "
        f"{esc(view.span)}</span></h4>"
        f'<div class="{label_cls} sv-tl-label">{esc(view.label)}</div>'
        f"{timeline_svg(t, view)}"
        f'<div class="sv-tl-legend">{keys}'
        '<span class="sv-dim">totals summed over devices</span></div></div>'
    )


def timeline_lines(report: Report) -> list[str]:
    """The text summary: the label, then one line per kind with its total time."""
    t = timeline_of(report)
    if t is None:
        return []
    view = timeline_view(t)
    width = max(len(k) for k, _, _ in view.kinds)
    return [f"{view.heading} · {view.label}"] + [
        f"  {k.ljust(width)}  {total.rjust(9)} (summed over devices)" for k, _, total in view.kinds
    ]
