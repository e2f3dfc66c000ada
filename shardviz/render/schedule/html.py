"""A pipeline :class:`~shardviz.model.schedule.Schedule` as a self-contained HTML fragment.

The same chart as :mod:`.schedule_text`, in inline SVG: one row per stage, one column per
time unit, one rectangle per slot; when the run was profiled, a second chart draws the slots as
measured, on a seconds axis (illustrative on CPU, real on other devices). A microbatch keeps one hue on every stage (its forward
light, its backward the same hue dark), idle units are pale grey. Wide schedules are scaled,
not elided: the chart shrinks to :data:`MAX_BODY` px and labels are dropped from slots too
narrow for them (every slot keeps its hover text). Scoped ``<style>``, no script, no URL.

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

from shardviz.model.schedule import MeasuredSlot, Schedule, Slot
from shardviz.model.units import format_seconds
from shardviz.render.colors import LIGHT_TEXT, device_color, text_color_for
from shardviz.render.html import CSS, page
from shardviz.render.schedule.text import (
    ACTIVATION_TITLE,
    IN_FLIGHT_TITLE,
    PHASE_WORDS,
    activation_lines,
    bubble_parts,
    grid,
    how_str,
    in_flight_counts,
    measured_count_str,
    realness_str,
    seconds_ticks,
    slot_label,
    title_str,
)
from shardviz.render.stylesheets import stylesheet
from shardviz.render.svg import esc, svg_num, svg_rect, svg_text, text_width

#: Widest (px) a time unit is drawn; narrowest before the chart overflows and scrolls.
CELL_W = 26.0
MIN_CELL = 3.0
#: Height (px) of a stage's row.
ROW_H = 22.0
#: Widest (px) the time axis is drawn before it is scaled down.
MAX_BODY = 900.0
#: Share of black mixed into a microbatch's colour for its backward.
DARKEN = 0.55
IDLE_FILL = "#f6f8fa"

SCHEDULE_CSS = stylesheet("schedule.css")

STYLE = "<style>" + (CSS + "\n" + SCHEDULE_CSS).replace("\n", "") + "</style>"


def darken(color: str, share: float = DARKEN) -> str:
    """``color`` (``#rrggbb``) with ``share`` of black mixed in."""
    value = color.lstrip("#")
    rgb = [round(int(value[i : i + 2], 16) * (1 - share)) for i in (0, 2, 4)]
    return "#" + "".join(f"{c:02x}" for c in rgb)


def slot_fill(slot: Slot) -> str:
    """The microbatch's colour: light for its forward, dark for its backward."""
    base = device_color(slot.microbatch)
    return base if slot.phase == "F" else darken(base)


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


def _slot_svg(slot: Slot, x: float, y: float, w: float) -> list[str]:
    fill = slot_fill(slot)
    tip = (
        f"stage {slot.stage} · time {slot.time} · {PHASE_WORDS[slot.phase]} of microbatch "
        f"{slot.microbatch}"
    )
    out = [
        svg_rect(
            x,
            y,
            w,
            ROW_H - 2,
            f' class="sv-slot sv-{slot.phase}" data-mb="{slot.microbatch}" '
            f'data-t="{slot.time}" fill="{fill}"',
        ).removesuffix("/>")
        + f"><title>{esc(tip)}</title></rect>"
    ]
    label = slot_label(slot)
    if text_width(label, 10) + 2 <= w:
        cls = "sv-slbl sv-on-dark" if text_color_for(fill) == LIGHT_TEXT else "sv-slbl"
        out.append(svg_text(x + w / 2, y + (ROW_H - 2) / 2, label, cls))
    return out


def _chart(schedule: Schedule) -> tuple[str, bool]:
    """The SVG chart, and whether every slot has its label."""
    cells = grid(schedule)
    length = schedule.length
    cell_w = cell_width(length)
    counts = in_flight_counts(schedule)
    row_titles = [f"stage {s}" for s in range(schedule.stages)]
    left = max(text_width(t, 10) for t in row_titles) + 12
    top = 34.0
    body_w = cell_w * length
    right = max(text_width(f"holds {n}", 10) for n in counts) + 10
    width = left + body_w + right
    height = top + ROW_H * schedule.stages + 4
    w, h = svg_num(width), svg_num(height)
    out = [f'<svg class="sv-sched" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img">']
    out.append(svg_text(left, 12, "time (one unit = one stage's forward or backward) →", "sv-axis"))
    step = tick_step(length, cell_w)
    for t in range(0, length, step):
        x = left + t * cell_w
        out.append(svg_text(x + cell_w / 2, top - 6, str(t), "sv-tick", ' text-anchor="middle"'))
    labelled = True
    for s in range(schedule.stages):
        y = top + s * ROW_H
        act = schedule.activation_bytes(s)
        act_attr = "" if act is None else f' data-activation-bytes="{act}"'
        out.append(f'<g class="sv-stage" data-stage="{s}" data-in-flight="{counts[s]}"{act_attr}>')
        out.append(
            svg_text(
                left - 6,
                y + (ROW_H - 2) / 2,
                row_titles[s],
                "sv-tick",
                ' text-anchor="end" dominant-baseline="central"',
            )
        )
        for t in range(length):
            x = left + t * cell_w
            slot = cells.get((s, t))
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
                f"holds {counts[s]}",
                "sv-tick",
                ' dominant-baseline="central"',
            )
        )
        out.append("</g>")
    out.append("</svg>")
    return "".join(out), labelled


def _measured_chart(schedule: Schedule, body_w: float) -> str:
    """The measured slots on a seconds axis, one row per stage, ``body_w`` px wide."""
    slots = schedule.measured
    t0 = min(m.start for m in slots)
    ticks = seconds_ticks(max(m.start + m.seconds for m in slots) - t0)
    top_s = ticks[-1] or 1.0
    row_titles = [f"stage {s}" for s in range(schedule.stages)]
    left = max(text_width(t, 10) for t in row_titles) + 12
    top = 34.0
    width = left + body_w + 24
    height = top + ROW_H * schedule.stages + 4
    w, h = svg_num(width), svg_num(height)
    out = [
        f'<svg class="sv-sched-measured" data-platform="{esc(schedule.measured_platform)}" '
        f'width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img">',
        svg_text(left, 12, "seconds since the step's first measured slot →", "sv-axis"),
    ]
    for v in ticks:
        x = left + body_w * v / top_s
        out.append(svg_text(x, top - 6, format_seconds(v), "sv-tick", ' text-anchor="middle"'))
    for s in range(schedule.stages):
        y = top + s * ROW_H
        out.append(svg_rect(left, y, body_w, ROW_H - 2, ' class="sv-idle"'))
        out.append(
            svg_text(left - 6, y + (ROW_H - 2) / 2, row_titles[s], "sv-tick",
                     ' text-anchor="end" dominant-baseline="central"')
        )  # fmt: skip
    for m in sorted(slots, key=lambda m: (m.stage, m.start)):
        out.append(_measured_slot_svg(m, left + body_w * (m.start - t0) / top_s,
                                      top + m.stage * ROW_H, body_w / top_s))  # fmt: skip
    out.append("</svg>")
    return "".join(out)


def _measured_slot_svg(m: MeasuredSlot, x: float, y: float, px_per_s: float) -> str:
    fill = slot_fill(Slot(stage=m.stage, time=0, microbatch=m.microbatch, phase=m.phase))
    tip = (
        f"stage {m.stage} · {PHASE_WORDS[m.phase]} of microbatch {m.microbatch} · "
        f"{format_seconds(m.seconds)} from {format_seconds(m.start)}"
    )
    return (
        svg_rect(
            x,
            y,
            max(m.seconds * px_per_s, 0.5),
            ROW_H - 2,
            f' class="sv-mslot sv-{m.phase}" data-stage="{m.stage}" data-mb="{m.microbatch}" '
            f'data-start="{m.start!r}" data-seconds="{m.seconds!r}" fill="{fill}"',
        ).removesuffix("/>")
        + f"><title>{esc(tip)}</title></rect>"
    )


def _measured(schedule: Schedule) -> list[str]:
    """The measured chart under its realness label, or nothing when not profiled."""
    if not schedule.measured:
        return []
    real = realness_str(schedule)
    cls = "sv-realness sv-illustrative" if schedule.measured_platform == "cpu" else "sv-realness"
    text = f"<b>{esc(measured_count_str(schedule))}</b>" + (f" · {esc(real)}" if real else "")
    body_w = cell_width(schedule.length) * schedule.length
    return [f'<div class="{cls}">{text}</div>', _measured_chart(schedule, body_w)]


def _activation(schedule: Schedule) -> list[str]:
    """Each stage's activation memory, or nothing when the bytes per microbatch are unknown."""
    lines = activation_lines(schedule)
    if not lines:
        return []
    rows = [
        f"<div>{esc(line)}</div>"
        if s is None
        else f'<div class="sv-act" data-stage="{s}" data-bytes="{schedule.activation_bytes(s)}">'
        f"{esc(line)}</div>"
        for s, line in lines
    ]
    return [
        f'<div class="sv-note sv-activation"><b>{esc(ACTIVATION_TITLE)}</b>' + "".join(rows)
        + "</div>"
    ]  # fmt: skip


def _legend(labelled: bool) -> str:
    fwd = device_color(0)
    swatches = [
        (fwd, "F<m> forward of microbatch m"),
        (darken(fwd), "B<m> its backward (same hue, dark)"),
        (IDLE_FILL, "idle"),
    ]
    out = "".join(
        f'<span class="sv-swatch" style="background:{c}"></span>{esc(t)}' for c, t in swatches
    )
    if not labelled:
        out += " · too narrow for labels: hover a slot for its stage, time and microbatch"
    return f'<div class="sv-note sv-legend">{out}</div>'


def schedule_html(schedule: Schedule) -> str:
    """A schedule as a self-contained HTML fragment.

    Args:
        schedule: the schedule (built by hand or from a pipelined run).

    Returns:
        One ``<div class="sv-root sv-schedule">`` with its own ``<style>``: the title, how the
        pipeline is written, the bubble line, the stages x time chart, the in-flight line,
        each stage's activation memory (when known), the measured chart (when profiled) and a
        legend.
    """
    measured = schedule.measured_bubble
    kept = schedule.residual_bytes
    attrs = (
        f'data-kind="{esc(schedule.kind)}" data-stages="{schedule.stages}" '
        f'data-microbatches="{schedule.microbatches}" data-length="{schedule.length}" '
        f'data-bubble="{schedule.schedule_bubble_fraction!r}" '
        f'data-theory="{schedule.theory_bubble_fraction!r}"'
        + (f' data-measured="{measured!r}"' if measured is not None else "")
        + f' data-form="{esc(schedule.form)}" data-checkpoint="{int(schedule.checkpoint)}"'
        + (f' data-residual-bytes="{kept}"' if kept is not None else "")
    )
    chart, labelled = _chart(schedule)
    bubble = " · ".join(
        f"<b>{esc(label)}</b> {esc(value)}" for label, value in bubble_parts(schedule)
    )
    counts = in_flight_counts(schedule)
    flight = " · ".join(f"{s}: {n}" for s, n in enumerate(counts))
    title = title_str(schedule)
    body = [
        f'<div class="sv-head">Pipeline schedule <span class="sv-dim">· {esc(title)}</span></div>',
        f'<div class="sv-note sv-how">{esc(how_str(schedule))}</div>',
        f'<div class="sv-facts sv-bubble">{bubble}</div>',
        chart,
        f'<div class="sv-note sv-inflight"><b>{esc(IN_FLIGHT_TITLE)}</b>: {esc(flight)}</div>',
        *_activation(schedule),
        *_measured(schedule),
        _legend(labelled),
    ]
    return f'<div class="sv-root sv-schedule" {attrs}>{STYLE}' + "".join(body) + "</div>"


def schedule_page(schedule: Schedule) -> str:
    """The schedule as one self-contained offline HTML document."""
    title = (
        f"shardviz: {schedule.kind} pipeline schedule, {schedule.stages} stages × "
        f"{schedule.microbatches} microbatches"
    )
    return page(title, [schedule_html(schedule)])
