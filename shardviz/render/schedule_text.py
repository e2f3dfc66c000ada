"""A pipeline :class:`~shardviz.model.schedule.Schedule` as plain text: ``print(schedule)``.

A stages x time chart, one row per stage and one column per time unit; a slot reads ``F3``
(forward of microbatch 3) or ``B3`` (its backward), an idle unit ``·``. Above it the kind,
sizes and the bubble (the schedule's idle share next to the theory ``(S-1)/(M+S-1)`` and the
measured one when the run was profiled); below it how many microbatches each stage holds at
once, what its activation memory scales with. Long schedules keep the first and last
:data:`TIME_KEEP` time units around one ``…`` column, by the same rule (:func:`.geometry.elide`)
as every other view. Deterministic, so golden files pin it down; the HTML view
(:mod:`.schedule_html`) reads the same facts from here.
"""

from __future__ import annotations

from collections.abc import Callable

from shardviz.model.schedule import Schedule, Slot
from shardviz.render.geometry import elide

#: More time units than this are elided in text.
TIME_ELIDE_ABOVE = 32
#: Time units kept at each end of an elided schedule.
TIME_KEEP = 12
#: What an idle unit reads in text.
IDLE = "·"
#: What the elided columns read in text.
GAP = "…"

PHASE_WORDS = {"F": "forward", "B": "backward"}


def slot_label(slot: Slot) -> str:
    """``F3`` / ``B3``: the phase and the microbatch of a slot."""
    return f"{slot.phase}{slot.microbatch}"


def grid(schedule: Schedule) -> dict[tuple[int, int], Slot]:
    """The schedule's slots by ``(stage, time)``."""
    return {(s.stage, s.time): s for s in schedule.slots}


def pct(fraction: float) -> str:
    """A fraction as a percentage with one decimal: ``27.3%``."""
    return f"{fraction:.1%}"


def title_str(schedule: Schedule) -> str:
    """``gpipe · 4 stages × 8 microbatches · 22 time units``."""
    s, m = schedule.stages, schedule.microbatches
    return (
        f"{schedule.kind} · {s} stage{'s' * (s != 1)} × {m} microbatch{'es' * (m != 1)} · "
        f"{schedule.length} time units"
    )


def theory_str(schedule: Schedule) -> str:
    """``(S-1)/(M+S-1) = 3/11 = 27.3%``: the formula with this schedule's numbers."""
    s, m = schedule.stages, schedule.microbatches
    return f"(S-1)/(M+S-1) = {s - 1}/{m + s - 1} = {pct(schedule.theory_bubble_fraction)}"


def bubble_parts(schedule: Schedule) -> list[tuple[str, str]]:
    """The bubble figures as ``(label, value)``: the schedule's own idle share, the theory,
    and the measured one when the run was profiled."""
    parts = [
        ("bubble", f"{pct(schedule.schedule_bubble_fraction)} idle in the schedule"),
        ("theory", theory_str(schedule)),
    ]
    if schedule.measured_bubble is not None:
        parts.append(("measured", f"{pct(schedule.measured_bubble)} idle on the devices"))
    return parts


def bubble_str(schedule: Schedule) -> str:
    """The bubble line: ``bubble 27.3% idle in the schedule · theory (S-1)/(M+S-1) = …``."""
    return " · ".join(f"{label} {value}" for label, value in bubble_parts(schedule))


def in_flight_counts(schedule: Schedule) -> list[int]:
    """How many microbatches each stage holds at once (forward done, backward not yet)."""
    return [schedule.in_flight(stage) for stage in range(schedule.stages)]


IN_FLIGHT_TITLE = "in flight per stage (microbatches whose activations it holds at once)"
LEGEND = (
    f"F<m> forward of microbatch m · B<m> its backward · '{IDLE}' idle · "
    "one time unit = one stage's forward or backward"
)


def _items(n: int, shown: Callable[[int], str], what: str) -> list[str]:
    return elide(n, shown, lambda a, b: f"{GAP} {b - a} more {what} {GAP}")


def schedule_text(schedule: Schedule) -> str:
    """A schedule as plain text.

    Args:
        schedule: the schedule (from :func:`~shardviz.model.schedule.gpipe`,
            :func:`~shardviz.model.schedule.one_f_one_b` or a pipelined run).

    Returns:
        The title and bubble lines, the stages x time chart (time elided past
        :data:`TIME_ELIDE_ABOVE` units), the in-flight line and a legend; no trailing spaces.
    """
    cells = grid(schedule)
    length = schedule.length
    columns: list[int | None] = elide(
        length, lambda t: t, lambda a, b: None, limit=TIME_ELIDE_ABOVE, keep=TIME_KEEP
    )
    hidden = (TIME_KEEP, length - TIME_KEEP) if None in columns else None
    width = max(
        [len(IDLE), len(GAP)]
        + [len(f"F{schedule.microbatches - 1}")]
        + [len(str(t)) for t in columns if t is not None]
    )
    row_titles = [f"stage {s}" for s in range(schedule.stages)]
    left = max(len(t) for t in [*row_titles, "time"]) + 2

    def cell(stage: int, t: int | None) -> str:
        if t is None:
            return GAP.ljust(width)
        slot = cells.get((stage, t))
        return (slot_label(slot) if slot else IDLE).ljust(width)

    def line(title: str, parts: list[str]) -> str:
        return (title.ljust(left) + " ".join(parts)).rstrip()

    lines = [f"pipeline schedule · {title_str(schedule)}", bubble_str(schedule), ""]
    lines.append(line("time", [(GAP if t is None else str(t)).ljust(width) for t in columns]))
    rows = elide(
        schedule.stages,
        lambda s: line(row_titles[s], [cell(s, t) for t in columns]),
        lambda a, b: f"{GAP} {b - a} more stages ({a}:{b}) {GAP}",
    )
    lines.extend(rows)
    if hidden is not None:
        a, b = hidden
        lines.append(f"{GAP} {b - a} more time units not shown (time {a}:{b})")
    counts = in_flight_counts(schedule)
    shown = _items(schedule.stages, lambda s: f"{s}: {counts[s]}", "stages")
    lines += ["", f"{IN_FLIGHT_TITLE}: " + " · ".join(shown), LEGEND]
    return "\n".join(lines)
