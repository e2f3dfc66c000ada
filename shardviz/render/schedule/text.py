"""A pipeline :class:`~shardviz.model.schedule.Schedule` as plain text: ``print(schedule)``.

A stages x time chart, one row per stage and one column per time unit; a slot reads ``F3``
(forward of microbatch 3) or ``B3`` (its backward), an idle unit ``·``. Above it the kind,
sizes, how the pipeline is written (GSPMD or ``shard_map``, checkpointed or not) and the
bubble (the schedule's idle share next to the theory ``(S-1)/(M+S-1)`` and, when the run was
profiled, the measured one, illustrative on CPU); below it how many microbatches each stage
holds at once, what its activation memory scales with, and those bytes when the pipeline
knows what a stage keeps per microbatch. Long schedules keep the first and last
:data:`TIME_KEEP` time units around one ``…`` column, by the same rule
(:func:`shardviz.render.geometry.elide`)
as every other view. Deterministic, so golden files pin it down. The words and cells come
from :func:`~.view.schedule_view`, which the HTML view (:mod:`.html`) and the figures
(:mod:`.plotly`, :mod:`.mpl`) read too.
"""

from __future__ import annotations

from collections.abc import Callable

from shardviz.model.schedule import Schedule
from shardviz.render.geometry import elide
from shardviz.render.schedule.view import (
    ACTIVATION_TITLE,
    FORM_NAMES,
    FORM_WORDS,
    GAP,
    IDLE,
    IN_FLIGHT_TITLE,
    LEGEND,
    PHASE_WORDS,
    ScheduleView,
    StageView,
    activation_lines,
    activation_product,
    activation_str,
    bubble_parts,
    bubble_str,
    checkpoint_word,
    form_name,
    grid,
    how_str,
    in_flight_counts,
    measured_count_str,
    measured_span,
    measured_str,
    pct,
    realness_short,
    realness_str,
    schedule_view,
    seconds_ticks,
    short_how,
    slot_label,
    theory_str,
    title_str,
)

#: The text view, and the word helpers that lived here before :mod:`.view` (their importers
#: keep working).
__all__ = [
    "ACTIVATION_TITLE",
    "FORM_NAMES",
    "FORM_WORDS",
    "GAP",
    "IDLE",
    "IN_FLIGHT_TITLE",
    "LEGEND",
    "PHASE_WORDS",
    "TIME_ELIDE_ABOVE",
    "TIME_KEEP",
    "activation_lines",
    "activation_product",
    "activation_str",
    "bubble_parts",
    "bubble_str",
    "checkpoint_word",
    "form_name",
    "grid",
    "how_str",
    "in_flight_counts",
    "measured_count_str",
    "measured_span",
    "measured_str",
    "pct",
    "realness_short",
    "realness_str",
    "schedule_text",
    "seconds_ticks",
    "short_how",
    "slot_label",
    "theory_str",
    "title_str",
]

#: More time units than this are elided in text.
TIME_ELIDE_ABOVE = 32
#: Time units kept at each end of an elided schedule.
TIME_KEEP = 12


def _items(n: int, shown: Callable[[int], str], what: str) -> list[str]:
    return elide(n, shown, lambda a, b: f"{GAP} {b - a} more {what} {GAP}")


def _columns(length: int) -> list[int | None]:
    """The time units shown, ``None`` for the elided ones' column."""
    return elide(length, lambda t: t, lambda a, b: None, limit=TIME_ELIDE_ABOVE, keep=TIME_KEEP)


def _chart(view: ScheduleView) -> list[str]:
    """The time axis, one row per stage (stages elided past the usual limit) and, when time
    is elided, the line saying which units are not shown."""
    columns = _columns(view.length)
    width = max(
        [len(IDLE), len(GAP)]
        + [len(f"F{view.microbatches - 1}")]
        + [len(str(t)) for t in columns if t is not None]
    )
    left = max(len(t) for t in [*(r.name for r in view.rows), "time"]) + 2

    def cell(row: StageView, t: int | None) -> str:
        if t is None:
            return GAP.ljust(width)
        slot = row.cells[t]
        return (slot.label if slot else IDLE).ljust(width)

    def line(title: str, parts: list[str]) -> str:
        return (title.ljust(left) + " ".join(parts)).rstrip()

    lines = [line("time", [(GAP if t is None else str(t)).ljust(width) for t in columns])]
    lines += elide(
        view.stages,
        lambda s: line(view.rows[s].name, [cell(view.rows[s], t) for t in columns]),
        lambda a, b: f"{GAP} {b - a} more stages ({a}:{b}) {GAP}",
    )
    if None in columns:
        a, b = TIME_KEEP, view.length - TIME_KEEP
        lines.append(f"{GAP} {b - a} more time units not shown (time {a}:{b})")
    return lines


def schedule_text(schedule: Schedule | ScheduleView) -> str:
    """A schedule as plain text.

    Args:
        schedule: the schedule (from :func:`~shardviz.model.schedule.gpipe`,
            :func:`~shardviz.model.schedule.one_f_one_b` or a pipelined run), or its view.

    Returns:
        The title, how-it-is-written and bubble lines (and the measured slots' line when
        profiled), the stages x time chart (time elided past :data:`TIME_ELIDE_ABOVE` units),
        the in-flight line, each stage's activation memory when known, and a legend; no
        trailing spaces.
    """
    view = schedule if isinstance(schedule, ScheduleView) else schedule_view(schedule)
    lines = [f"pipeline schedule · {view.title}", view.how, view.bubble_line]
    if view.measured_line:
        lines.append(view.measured_line)
    lines.append("")
    lines += _chart(view)
    shown = _items(view.stages, lambda s: view.in_flight[s], "stages")
    lines += ["", f"{IN_FLIGHT_TITLE}: " + " · ".join(shown)]
    if view.activation:
        lines.append(f"{ACTIVATION_TITLE}:")
        lines += [f"  {x}" for _, x in view.activation]
    lines.append(view.legend)
    return "\n".join(lines)
