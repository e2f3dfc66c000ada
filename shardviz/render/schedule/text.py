"""A pipeline :class:`~shardviz.model.schedule.Schedule` as plain text: ``print(schedule)``.

A stages x time chart, one row per stage and one column per time unit; a slot reads ``F3``
(forward of microbatch 3) or ``B3`` (its backward), an idle unit ``·``. Above it the kind,
sizes, how the pipeline is written (GSPMD or ``shard_map``, checkpointed or not) and the
bubble (the schedule's idle share next to the theory ``(S-1)/(M+S-1)`` and, when the run was
profiled, the measured one, illustrative on CPU); below it how many microbatches each stage
holds at once, what its activation memory scales with, and those bytes when the pipeline
knows what a stage keeps per microbatch. Long schedules keep the first and last
:data:`TIME_KEEP` time units around one ``…`` column, by the same rule (:func:`.geometry.elide`)
as every other view. Deterministic, so golden files pin it down; the HTML view
(:mod:`.schedule_html`) and the figures (:mod:`.schedule_plotly`, :mod:`.schedule_mpl`) read
the same facts from here.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from shardviz.model.schedule import Schedule, Slot
from shardviz.model.timeline import ILLUSTRATIVE_LABEL, real_label
from shardviz.model.units import format_bytes, format_seconds
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
#: How each form of pipeline is named in every view.
FORM_NAMES = {"gspmd": "GSPMD", "shard_map": "shard_map"}
FORM_WORDS = {
    "gspmd": "one loop shifting a stage-split state",
    "shard_map": "each stage's program by hand",
}


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


def form_name(schedule: Schedule) -> str:
    """``GSPMD`` or ``shard_map``: how the pipeline is written."""
    return FORM_NAMES.get(schedule.form, schedule.form)


def checkpoint_word(schedule: Schedule) -> str:
    """``checkpointed`` or ``no checkpointing``."""
    return "checkpointed" if schedule.checkpoint else "no checkpointing"


def short_how(schedule: Schedule) -> str:
    """``1f1b, shard_map`` or ``gpipe, GSPMD, checkpointed``: the kind and how it is written,
    for one line about a pipeline."""
    parts = [schedule.kind, form_name(schedule)]
    if schedule.checkpoint:
        parts.append("checkpointed")
    return ", ".join(parts)


def how_str(schedule: Schedule) -> str:
    """The form and checkpointing in words: ``written with shard_map (…) · no checkpointing``."""
    form = f"written with {form_name(schedule)} ({FORM_WORDS.get(schedule.form, '')})"
    if schedule.checkpoint:
        return f"{form} · checkpointed (a stage keeps only its input per microbatch)"
    return f"{form} · no checkpointing"


def realness_str(schedule: Schedule) -> str:
    """What the measured figures are worth: illustrative on CPU, real on other devices, ``""``
    when the platform is not known (the wording of the timeline views)."""
    platform = schedule.measured_platform
    if not platform:
        return ""
    if platform == "cpu":
        return ILLUSTRATIVE_LABEL
    return real_label(platform)


def realness_short(schedule: Schedule) -> str:
    """``illustrative, on CPU`` or ``real, on gpu``: :func:`realness_str` for inside a line."""
    platform = schedule.measured_platform
    if not platform:
        return ""
    return "illustrative, on CPU" if platform == "cpu" else f"real, on {platform}"


def measured_span(schedule: Schedule) -> float:
    """Seconds from the first measured slot's start to the last one's end (0 when none)."""
    if not schedule.measured:
        return 0.0
    start = min(m.start for m in schedule.measured)
    return max(m.start + m.seconds for m in schedule.measured) - start


def measured_count_str(schedule: Schedule) -> str:
    """``measured 16 slots over 1.2 ms``, or ``""`` when not profiled."""
    if not schedule.measured:
        return ""
    n = len(schedule.measured)
    return f"measured {n} slot{'s' * (n != 1)} over {format_seconds(measured_span(schedule))}"


def measured_str(schedule: Schedule) -> str:
    """:func:`measured_count_str` with :func:`realness_str`: ``measured 16 slots over 1.2 ms
    (illustrative: …)``, or ``""`` when not profiled."""
    count, real = measured_count_str(schedule), realness_str(schedule)
    return f"{count} ({real})" if count and real else count


def seconds_ticks(span: float, most: int = 6) -> list[float]:
    """Round tick values (1, 2 or 5 times a power of ten) from 0 to at least ``span``
    seconds, at most ``most`` + 1 of them."""
    if span <= 0:
        return [0.0]
    step = 10.0 ** math.floor(math.log10(span / most))
    for k in (1, 2, 5, 10):
        if math.ceil(span / (step * k) - 1e-9) <= most:
            step *= k
            break
    n = math.ceil(span / step - 1e-9)
    return [i * step for i in range(n + 1)]


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
        real = realness_short(schedule)
        parts.append(
            (
                "measured",
                f"{pct(schedule.measured_bubble)} idle on the devices"
                + (f" ({real})" if real else ""),
            )
        )
    return parts


def bubble_str(schedule: Schedule) -> str:
    """The bubble line: ``bubble 27.3% idle in the schedule · theory (S-1)/(M+S-1) = …``."""
    return " · ".join(f"{label} {value}" for label, value in bubble_parts(schedule))


def in_flight_counts(schedule: Schedule) -> list[int]:
    """How many microbatches each stage holds at once (forward done, backward not yet)."""
    return [schedule.in_flight(stage) for stage in range(schedule.stages)]


def activation_product(schedule: Schedule, stage: int) -> str:
    """``4 microbatches × 3.1 MiB = 12.3 MiB``: what ``stage`` holds for its backwards at its
    peak (``""`` when the bytes a stage keeps per microbatch are not known)."""
    total = schedule.activation_bytes(stage)
    if total is None or schedule.residual_bytes is None:
        return ""
    n = schedule.in_flight(stage)
    return (
        f"{n} microbatch{'es' * (n != 1)} × {format_bytes(schedule.residual_bytes)} = "
        f"{format_bytes(total)}"
    )


def activation_str(schedule: Schedule, stage: int) -> str:
    """``stage 0 holds 4 microbatches × 3.1 MiB = 12.3 MiB`` (``""`` when not known)."""
    product = activation_product(schedule, stage)
    return f"stage {stage} holds {product}" if product else ""


def activation_lines(schedule: Schedule) -> list[tuple[int | None, str]]:
    """``(stage, its activation_str)`` for each stage shown, ``(None, "… 6 more stages …")``
    where stages are elided (past the usual limit); ``[]`` when the bytes per microbatch are
    not known."""
    if schedule.residual_bytes is None:
        return []
    return elide(
        schedule.stages,
        lambda s: (s, activation_str(schedule, s)),
        lambda a, b: (None, f"{GAP} {b - a} more stages ({a}:{b}) {GAP}"),
    )


IN_FLIGHT_TITLE = "in flight per stage (microbatches whose activations it holds at once)"
ACTIVATION_TITLE = (
    "activation memory per stage (microbatches in flight × bytes kept per microbatch)"
)
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
        The title, how-it-is-written and bubble lines (and the measured slots' line when
        profiled), the stages x time chart (time elided past :data:`TIME_ELIDE_ABOVE` units),
        the in-flight line, each stage's activation memory when known, and a legend; no
        trailing spaces.
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

    lines = [f"pipeline schedule · {title_str(schedule)}", how_str(schedule), bubble_str(schedule)]
    measured = measured_str(schedule)
    if measured:
        lines.append(measured)
    lines.append("")
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
    lines += ["", f"{IN_FLIGHT_TITLE}: " + " · ".join(shown)]
    activation = activation_lines(schedule)
    if activation:
        lines.append(f"{ACTIVATION_TITLE}:")
        lines += [f"  {x}" for _, x in activation]
    lines.append(LEGEND)
    return "\n".join(lines)
