"""A pipeline :class:`~shardviz.model.schedule.Schedule` as a self-contained HTML fragment.

The same chart as :mod:`.text`, from the same :func:`~.view.schedule_view`, in inline SVG:
one row per stage, one column per time unit, one rectangle per slot; when the run was
profiled, a second chart draws the slots as measured, on a seconds axis (illustrative on CPU,
real on other devices). A microbatch keeps one hue on every stage (its forward light, its
backward the same hue dark), idle units are pale grey. Wide schedules are scaled, not elided:
the chart shrinks to :data:`MAX_BODY` px and labels are dropped from slots too narrow for
them (every slot keeps its hover text). Scoped ``<style>``, no script, no URL.

Testable hooks: the root is ``<div class="sv-root sv-schedule">`` with ``data-kind``,
``data-stages``, ``data-microbatches``, ``data-length``, ``data-bubble``, ``data-theory`` and
``data-measured`` (absent when not profiled), ``data-form`` (``gspmd`` / ``shard_map``),
``data-checkpoint`` (``1`` / ``0``) and ``data-residual-bytes`` (absent when not known); each
stage is ``<g class="sv-stage" data-stage="s" data-in-flight="n">`` (plus
``data-activation-bytes`` when known); each slot ``<rect class="sv-slot sv-F|sv-B"
data-mb="m" data-t="t">``, each idle unit ``<rect class="sv-idle">``; slot labels are
``<text class="sv-slbl">``; the form line is ``<div class="sv-how">``, the bubble line
``<div class="sv-bubble">``, the in-flight line ``<div class="sv-inflight">``, the activation
memory ``<div class="sv-activation">`` (one ``<div class="sv-act" data-stage="s"
data-bytes="…">`` per stage shown). Measured: ``<svg class="sv-sched-measured"
data-platform="cpu">`` with one ``<rect class="sv-mslot sv-F|sv-B" data-stage="s" data-mb="m"
data-start="…" data-seconds="…">`` per timed slot, and ``<div class="sv-realness">``.
"""

from __future__ import annotations

from shardviz.model.schedule import Schedule
from shardviz.model.units import format_seconds
from shardviz.render.colors import LIGHT_TEXT, text_color_for
from shardviz.render.html import CSS, page
from shardviz.render.schedule.view import (
    ACTIVATION_TITLE,
    DARKEN,
    IDLE_FILL,
    IN_FLIGHT_TITLE,
    MeasuredSlotView,
    ScheduleView,
    SlotView,
    darken,
    schedule_view,
    seconds_ticks,
    slot_fill,
)
from shardviz.render.stylesheets import stylesheet
from shardviz.render.svg import esc, svg_num, svg_rect, svg_text, text_width

#: The HTML view, its geometry, and the colour helpers that lived here before :mod:`.view`
#: (their importers keep working).
__all__ = [
    "CELL_W",
    "DARKEN",
    "IDLE_FILL",
    "MAX_BODY",
    "MIN_CELL",
    "ROW_H",
    "SCHEDULE_CSS",
    "STYLE",
    "cell_width",
    "darken",
    "schedule_html",
    "schedule_page",
    "slot_fill",
    "tick_step",
]

#: Widest (px) a time unit is drawn; narrowest before the chart overflows and scrolls.
CELL_W = 26.0
MIN_CELL = 3.0
#: Height (px) of a stage's row.
ROW_H = 22.0
#: Widest (px) the time axis is drawn before it is scaled down.
MAX_BODY = 900.0
#: What the legend adds when some slots are too narrow for their label.
UNLABELLED = " · too narrow for labels: hover a slot for its stage, time and microbatch"

SCHEDULE_CSS = stylesheet("schedule.css")

STYLE = "<style>" + (CSS + "\n" + SCHEDULE_CSS).replace("\n", "") + "</style>"


def cell_width(length: int) -> float:
    """The width (px) of one time unit: :data:`CELL_W`, scaled down so ``length`` units fit
    :data:`MAX_BODY`, never below :data:`MIN_CELL`."""
    return max(MIN_CELL, min(CELL_W, MAX_BODY / max(length, 1)))


def tick_step(length: int, cell_w: float) -> int:
    """Every how many time units a tick label fits (1, 2, 5, 10, 20, 50, ...)."""
    need = text_width(str(max(length - 1, 0)), 10) + 6
    step = 1
    while step * cell_w < need:
        for k in (2, 5, 10):
            if step * k * cell_w >= need or k == 10:
                step *= k
                break
    return step


def _slot_svg(slot: SlotView, x: float, y: float, w: float) -> list[str]:
    out = [
        svg_rect(
            x,
            y,
            w,
            ROW_H - 2,
            f' class="sv-slot sv-{slot.phase}" data-mb="{slot.microbatch}" '
            f'data-t="{slot.time}" fill="{slot.fill}"',
        ).removesuffix("/>")
        + f"><title>{esc(slot.tip)}</title></rect>"
    ]
    if text_width(slot.label, 10) + 2 <= w:
        cls = "sv-slbl sv-on-dark" if text_color_for(slot.fill) == LIGHT_TEXT else "sv-slbl"
        out.append(svg_text(x + w / 2, y + (ROW_H - 2) / 2, slot.label, cls))
    return out


def _row_title(left: float, y: float, name: str) -> str:
    """A stage's name, right-aligned left of its row."""
    return svg_text(left - 6, y + (ROW_H - 2) / 2, name, "sv-tick",
                    ' text-anchor="end" dominant-baseline="central"')  # fmt: skip


def _chart(view: ScheduleView) -> tuple[str, bool]:
    """The SVG chart, and whether every slot has its label."""
    length = view.length
    cell_w = cell_width(length)
    left = max(text_width(r.name, 10) for r in view.rows) + 12
    top = 34.0
    body_w = cell_w * length
    right = max(text_width(r.holds, 10) for r in view.rows) + 10
    width = left + body_w + right
    height = top + ROW_H * view.stages + 4
    w, h = svg_num(width), svg_num(height)
    out = [
        '<div class="sv-sched-scroll">'
        f'<svg class="sv-sched" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img">'
    ]
    out.append(svg_text(left, 12, "time (one unit = one stage's forward or backward) →", "sv-axis"))
    step = tick_step(length, cell_w)
    for t in range(0, length, step):
        x = left + t * cell_w
        out.append(svg_text(x + cell_w / 2, top - 6, str(t), "sv-tick", ' text-anchor="middle"'))
    labelled = True
    for row in view.rows:
        y = top + row.stage * ROW_H
        act = row.activation_bytes
        act_attr = "" if act is None else f' data-activation-bytes="{act}"'
        out.append(
            f'<g class="sv-stage" data-stage="{row.stage}" data-in-flight="{row.in_flight}"'
            f"{act_attr}>"
        )
        out.append(_row_title(left, y, row.name))
        for t, slot in enumerate(row.cells):
            x = left + t * cell_w
            if slot is None:
                out.append(svg_rect(x, y, cell_w, ROW_H - 2, ' class="sv-idle"'))
                continue
            parts = _slot_svg(slot, x, y, cell_w)
            labelled = labelled and len(parts) == 2
            out.extend(parts)
        out.append(
            svg_text(
                left + body_w + 6,
                y + (ROW_H - 2) / 2,
                row.holds,
                "sv-tick",
                ' dominant-baseline="central"',
            )
        )
        out.append("</g>")
    out.append("</svg></div>")
    return "".join(out), labelled


def _measured_chart(view: ScheduleView, body_w: float) -> str:
    """The measured slots on a seconds axis, one row per stage, ``body_w`` px wide."""
    ticks = seconds_ticks(view.measured_seconds)
    top_s = ticks[-1] or 1.0
    left = max(text_width(r.name, 10) for r in view.rows) + 12
    top = 34.0
    width = left + body_w + 24
    height = top + ROW_H * view.stages + 4
    w, h = svg_num(width), svg_num(height)
    out = [
        '<div class="sv-sched-scroll">'
        f'<svg class="sv-sched-measured" data-platform="{esc(view.platform)}" '
        f'width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img">',
        svg_text(left, 12, "seconds since the step's first measured slot →", "sv-axis"),
    ]
    for v in ticks:
        x = left + body_w * v / top_s
        out.append(svg_text(x, top - 6, format_seconds(v), "sv-tick", ' text-anchor="middle"'))
    for row in view.rows:
        y = top + row.stage * ROW_H
        out.append(svg_rect(left, y, body_w, ROW_H - 2, ' class="sv-idle"'))
        out.append(_row_title(left, y, row.name))
    for m in sorted(view.measured_slots, key=lambda m: (m.stage, m.start)):
        out.append(_measured_slot_svg(m, left + body_w * m.offset / top_s,
                                      top + m.stage * ROW_H, body_w / top_s))  # fmt: skip
    out.append("</svg></div>")
    return "".join(out)


def _measured_slot_svg(m: MeasuredSlotView, x: float, y: float, px_per_s: float) -> str:
    return (
        svg_rect(
            x,
            y,
            max(m.seconds * px_per_s, 0.5),
            ROW_H - 2,
            f' class="sv-mslot sv-{m.phase}" data-stage="{m.stage}" data-mb="{m.microbatch}" '
            f'data-start="{m.start!r}" data-seconds="{m.seconds!r}" fill="{m.fill}"',
        ).removesuffix("/>")
        + f"><title>{esc(m.tip)}</title></rect>"
    )


def _measured(view: ScheduleView) -> list[str]:
    """The measured chart under its realness label, or nothing when not profiled."""
    if not view.measured_slots:
        return []
    cls = "sv-realness sv-illustrative" if view.illustrative else "sv-realness"
    real = view.realness
    text = f"<b>{esc(view.measured)}</b>" + (f" · {esc(real)}" if real else "")
    body_w = cell_width(view.length) * view.length
    return [f'<div class="{cls}">{text}</div>', _measured_chart(view, body_w)]


def _activation(view: ScheduleView) -> list[str]:
    """Each stage's activation memory, or nothing when the bytes per microbatch are unknown."""
    if not view.activation:
        return []
    rows = [
        f"<div>{esc(line)}</div>"
        if s is None
        else f'<div class="sv-act" data-stage="{s}" data-bytes="{view.rows[s].activation_bytes}">'
        f"{esc(line)}</div>"
        for s, line in view.activation
    ]
    return [
        f'<div class="sv-note sv-activation"><b>{esc(ACTIVATION_TITLE)}</b>' + "".join(rows)
        + "</div>"
    ]  # fmt: skip


def _legend(view: ScheduleView, labelled: bool) -> str:
    out = "".join(
        f'<span class="sv-swatch" style="background:{w.fill}"></span>{esc(w.words)}'
        for w in view.swatches
    )
    if not labelled:
        out += UNLABELLED
    return f'<div class="sv-note sv-legend">{out}</div>'


def _attrs(view: ScheduleView) -> str:
    """The root's ``data-*`` attributes: the sizes, the bubble fractions and the form."""
    measured, kept = view.measured_fraction, view.residual_bytes
    return (
        f'data-kind="{esc(view.kind)}" data-stages="{view.stages}" '
        f'data-microbatches="{view.microbatches}" data-length="{view.length}" '
        f'data-bubble="{view.bubble_fraction!r}" '
        f'data-theory="{view.theory_fraction!r}"'
        + (f' data-measured="{measured!r}"' if measured is not None else "")
        + f' data-form="{esc(view.form)}" data-checkpoint="{int(view.checkpoint)}"'
        + (f' data-residual-bytes="{kept}"' if kept is not None else "")
    )


def schedule_html(schedule: Schedule | ScheduleView) -> str:
    """A schedule as a self-contained HTML fragment.

    Args:
        schedule: the schedule (built by hand or from a pipelined run), or its view.

    Returns:
        One ``<div class="sv-root sv-schedule">`` with its own ``<style>``: the title, how the
        pipeline is written, the bubble line, the stages x time chart, the in-flight line,
        each stage's activation memory (when known), the measured chart (when profiled) and a
        legend.
    """
    view = schedule if isinstance(schedule, ScheduleView) else schedule_view(schedule)
    chart, labelled = _chart(view)
    bubble = " · ".join(f"<b>{esc(label)}</b> {esc(value)}" for label, value in view.bubble)
    flight = " · ".join(view.in_flight)
    body = [
        f'<div class="sv-head">Pipeline schedule <span class="sv-dim">· {esc(view.title)}</span>'
        "</div>",
        f'<div class="sv-note sv-how">{esc(view.how)}</div>',
        f'<div class="sv-facts sv-bubble">{bubble}</div>',
        chart,
        f'<div class="sv-note sv-inflight"><b>{esc(IN_FLIGHT_TITLE)}</b>: {esc(flight)}</div>',
        *_activation(view),
        *_measured(view),
        _legend(view, labelled),
    ]
    return f'<div class="sv-root sv-schedule" {_attrs(view)}>{STYLE}' + "".join(body) + "</div>"


def schedule_page(schedule: Schedule | ScheduleView) -> str:
    """The schedule as one self-contained offline HTML document."""
    view = schedule if isinstance(schedule, ScheduleView) else schedule_view(schedule)
    title = (
        f"shardviz: {view.kind} pipeline schedule, {view.stages} stages × "
        f"{view.microbatches} microbatches"
    )
    return page(title, [schedule_html(view)])
