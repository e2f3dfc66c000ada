"""The words, colours and grid the pipeline schedule views show, computed once for all four.

:func:`schedule_view` gathers them into one :class:`ScheduleView`: the title, how the pipeline
is written, the bubble (the schedule's idle share, the theory ``(S-1)/(M+S-1)`` and, when
profiled, the measured one), one row per stage with a cell per time unit, each slot's label,
colour and hover words, the measured slots, each stage's microbatches in flight and activation
memory, the figure's panels and the legends. :mod:`.text`, :mod:`.html`, :mod:`.plotly` and
:mod:`.mpl` build it once per render and read it, so a figure reads the same in every view.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from shardviz.model._codec import JsonMixin
from shardviz.model.schedule import MeasuredSlot, Phase, Schedule, Slot
from shardviz.model.timeline import ILLUSTRATIVE_LABEL, real_label
from shardviz.model.units import format_bytes, format_seconds
from shardviz.render.colors import device_color
from shardviz.render.geometry import elide

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

IN_FLIGHT_TITLE = "in flight per stage (microbatches whose activations it holds at once)"
ACTIVATION_TITLE = (
    "activation memory per stage (microbatches in flight × bytes kept per microbatch)"
)
#: The figures' activation panel's title.
FIGURE_ACTIVATION_TITLE = "Activation memory per stage (microbatches in flight × bytes kept)"
LEGEND = (
    f"F<m> forward of microbatch m · B<m> its backward · '{IDLE}' idle · "
    "one time unit = one stage's forward or backward"
)

#: Share of black mixed into a microbatch's colour for its backward.
DARKEN = 0.55
IDLE_FILL = "#f6f8fa"


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


def title_text(schedule: Schedule) -> str:
    """``1f1b pipeline · 4 stages × 8 microbatches · shard_map · no checkpointing``: the
    figures' title."""
    s, m = schedule.stages, schedule.microbatches
    return (
        f"{schedule.kind} pipeline · {s} stage{'s' * (s != 1)} × {m} microbatch"
        f"{'es' * (m != 1)} · {form_name(schedule)} · {checkpoint_word(schedule)}"
    )


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


def measured_title(schedule: Schedule) -> str:
    """``Measured 16 slots over 1.2 ms · illustrative: …``: the figures' measured panel's
    title (``""`` when not profiled)."""
    if not schedule.measured:
        return ""
    real = realness_str(schedule)
    return measured_count_str(schedule).capitalize() + (f" · {real}" if real else "")


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


def activation_words(n: int, kept: int) -> str:
    """``4 microbatches × 3.1 MiB = 12.3 MiB``: ``n`` microbatches in flight of ``kept``
    bytes each."""
    return f"{n} microbatch{'es' * (n != 1)} × {format_bytes(kept)} = {format_bytes(n * kept)}"


def activation_product(schedule: Schedule, stage: int) -> str:
    """``4 microbatches × 3.1 MiB = 12.3 MiB``: what ``stage`` holds for its backwards at its
    peak (``""`` when the bytes a stage keeps per microbatch are not known)."""
    if schedule.residual_bytes is None:
        return ""
    return activation_words(schedule.in_flight(stage), schedule.residual_bytes)


def holds_line(stage: int, product: str) -> str:
    """``stage 0 holds 4 microbatches × …`` from its :func:`activation_product` (``""`` when
    that is)."""
    return f"stage {stage} holds {product}" if product else ""


def activation_str(schedule: Schedule, stage: int) -> str:
    """``stage 0 holds 4 microbatches × 3.1 MiB = 12.3 MiB`` (``""`` when not known)."""
    return holds_line(stage, activation_product(schedule, stage))


def stage_lines(stages: int, line: Callable[[int], str]) -> list[tuple[int | None, str]]:
    """``(stage, line(stage))`` for each stage shown, ``(None, "… 6 more stages …")`` where
    stages are elided (past the usual limit)."""
    return elide(
        stages,
        lambda s: (s, line(s)),
        lambda a, b: (None, f"{GAP} {b - a} more stages ({a}:{b}) {GAP}"),
    )


def activation_lines(schedule: Schedule) -> list[tuple[int | None, str]]:
    """``(stage, its activation_str)`` for each stage shown, ``(None, "… 6 more stages …")``
    where stages are elided (past the usual limit); ``[]`` when the bytes per microbatch are
    not known."""
    if schedule.residual_bytes is None:
        return []
    return stage_lines(schedule.stages, lambda s: activation_str(schedule, s))


def stage_names(schedule: Schedule) -> list[str]:
    """``stage 0`` … : the title of each row, top to bottom."""
    return [f"stage {s}" for s in range(schedule.stages)]


def panels(schedule: Schedule) -> list[str]:
    """Which panels the figures have, top to bottom: ``schedule``, then ``measured`` when
    profiled, then ``activation`` when the bytes per microbatch are known."""
    out = ["schedule"]
    if schedule.measured:
        out.append("measured")
    if schedule.residual_bytes is not None:
        out.append("activation")
    return out


def darken(color: str, share: float = DARKEN) -> str:
    """``color`` (``#rrggbb``) with ``share`` of black mixed in."""
    value = color.lstrip("#")
    rgb = [round(int(value[i : i + 2], 16) * (1 - share)) for i in (0, 2, 4)]
    return "#" + "".join(f"{c:02x}" for c in rgb)


def slot_fill(slot: Slot) -> str:
    """The microbatch's colour: light for its forward, dark for its backward."""
    base = device_color(slot.microbatch)
    return base if slot.phase == "F" else darken(base)


# --------------------------------------------------------------------------------------------
# The view: every word, colour and cell above, computed once per schedule and read by the
# text, the HTML and the two figures.


@dataclass(frozen=True)
class SlotView(JsonMixin):
    """One slot of the stages x time chart: its place, its ``F3`` label, colour and hover
    words."""

    stage: int
    time: int
    microbatch: int
    phase: Phase
    label: str
    fill: str
    #: ``stage 0 · time 3 · forward of microbatch 3``.
    tip: str


@dataclass(frozen=True)
class MeasuredSlotView(JsonMixin):
    """One slot as a profiled run timed it, placed from the first measured slot's start."""

    stage: int
    microbatch: int
    phase: Phase
    start: float
    seconds: float
    #: Seconds from the first measured slot's start to this one's.
    offset: float
    fill: str
    #: ``stage 0 · forward of microbatch 1 · 600 µs from 251 ms``.
    tip: str
    #: :attr:`seconds` and :attr:`offset` in words.
    took: str
    since: str


@dataclass(frozen=True)
class StageView(JsonMixin):
    """One stage's row: a cell per time unit (``None`` idle), what it holds at once and its
    activation memory."""

    stage: int
    name: str
    cells: tuple[SlotView | None, ...]
    in_flight: int
    #: ``holds 4``, beside the row in the HTML chart.
    holds: str
    #: Bytes kept for its backwards at its peak (``None`` when not known).
    activation_bytes: int | None
    #: ``4 microbatches × 3.1 MiB = 12.3 MiB`` (``""`` when not known).
    activation: str
    #: :attr:`activation_bytes` with the exact count: ``12.3 MiB (12,900,000 B)``.
    activation_exact: str


@dataclass(frozen=True)
class Swatch:
    """One legend entry: which cells (``forward``, ``backward``, ``idle``), their colour and
    the words beside it."""

    kind: str
    fill: str
    words: str


@dataclass(frozen=True)
class ScheduleView(JsonMixin):
    """What every view of a :class:`Schedule` shows, computed once (:func:`schedule_view`)."""

    kind: str
    stages: int
    microbatches: int
    length: int
    form: str
    checkpoint: bool
    residual_bytes: int | None
    #: The schedule's idle share, the theory's and the measured one (``None``: not profiled).
    bubble_fraction: float
    theory_fraction: float
    measured_fraction: float | None
    #: ``gpipe · 4 stages × 8 microbatches · 22 time units`` (text and HTML).
    title: str
    #: ``gpipe pipeline · 4 stages × 8 microbatches · GSPMD · no checkpointing`` (figures).
    headline: str
    how: str
    bubble: tuple[tuple[str, str], ...]
    bubble_line: str
    #: ``measured 16 slots over 1.2 ms``, what that is worth, both in one line, and the
    #: figures' panel title (all ``""`` when not profiled; :attr:`realness` when the platform
    #: is not known).
    measured: str
    realness: str
    measured_line: str
    measured_title: str
    platform: str
    illustrative: bool
    #: Seconds from the first measured slot's start to the last one's end.
    measured_seconds: float
    rows: tuple[StageView, ...]
    #: Every slot in the schedule's order (the same objects as in :attr:`rows`).
    slots: tuple[SlotView, ...]
    measured_slots: tuple[MeasuredSlotView, ...]
    #: ``0: 4`` per stage: the in-flight line's items.
    in_flight: tuple[str, ...]
    #: ``(stage, stage 0 holds …)`` per stage shown, ``(None, "… 6 more stages …")`` where
    #: elided; empty when the bytes per microbatch are not known.
    activation: tuple[tuple[int | None, str], ...]
    panels: tuple[str, ...]
    #: The text's legend line, the HTML's swatches and the figures'.
    legend: str
    swatches: tuple[Swatch, ...]
    figure_swatches: tuple[Swatch, ...]


def slot_view(slot: Slot) -> SlotView:
    """A slot's label, colour and hover words."""
    tip = (
        f"stage {slot.stage} · time {slot.time} · {PHASE_WORDS[slot.phase]} of microbatch "
        f"{slot.microbatch}"
    )
    return SlotView(
        slot.stage, slot.time, slot.microbatch, slot.phase, slot_label(slot), slot_fill(slot), tip
    )


def measured_slot_view(m: MeasuredSlot, t0: float) -> MeasuredSlotView:
    """A timed slot, placed from ``t0`` (the first measured slot's start)."""
    fill = slot_fill(Slot(stage=m.stage, time=0, microbatch=m.microbatch, phase=m.phase))
    tip = (
        f"stage {m.stage} · {PHASE_WORDS[m.phase]} of microbatch {m.microbatch} · "
        f"{format_seconds(m.seconds)} from {format_seconds(m.start)}"
    )
    offset = m.start - t0
    return MeasuredSlotView(
        m.stage, m.microbatch, m.phase, m.start, m.seconds, offset, fill, tip,
        took=format_seconds(m.seconds), since=format_seconds(offset),
    )  # fmt: skip


def stage_view(schedule: Schedule, stage: int, cells: tuple[SlotView | None, ...]) -> StageView:
    """One stage's row of ``cells`` and what it holds (each walks the stage's slots once)."""
    n = schedule.in_flight(stage)
    act = schedule.activation_bytes(stage)
    kept = schedule.residual_bytes
    return StageView(
        stage=stage,
        name=f"stage {stage}",
        cells=cells,
        in_flight=n,
        holds=f"holds {n}",
        activation_bytes=act,
        activation=activation_words(n, kept) if act is not None and kept is not None else "",
        activation_exact=format_bytes(act or 0, exact=True),
    )


def _rows(schedule: Schedule, slots: tuple[SlotView, ...]) -> tuple[StageView, ...]:
    at = {(x.stage, x.time): x for x in slots}
    return tuple(
        stage_view(schedule, s, tuple(at.get((s, t)) for t in range(schedule.length)))
        for s in range(schedule.stages)
    )


def _measured_slots(schedule: Schedule) -> tuple[MeasuredSlotView, ...]:
    if not schedule.measured:
        return ()
    t0 = min(m.start for m in schedule.measured)
    return tuple(measured_slot_view(m, t0) for m in schedule.measured)


def _activation(s: Schedule, rows: tuple[StageView, ...]) -> tuple[tuple[int | None, str], ...]:
    """:func:`activation_lines`, from the rows' words."""
    if s.residual_bytes is None:
        return ()
    return tuple(stage_lines(s.stages, lambda i: holds_line(i, rows[i].activation)))


def swatches() -> tuple[Swatch, ...]:
    """The HTML legend: a microbatch's forward and backward colours, and idle."""
    fwd = device_color(0)
    return (
        Swatch("forward", fwd, "F<m> forward of microbatch m"),
        Swatch("backward", darken(fwd), "B<m> its backward (same hue, dark)"),
        Swatch("idle", IDLE_FILL, "idle"),
    )


def figure_swatches() -> tuple[Swatch, ...]:
    """The figures' legend: the same colours, in the figures' words."""
    base = slot_fill(Slot(0, 0, 0, "F"))
    return (
        Swatch("forward", base, "forward (a microbatch keeps its hue)"),
        Swatch("backward", darken(base), "backward (same hue, dark)"),
        Swatch("idle", IDLE_FILL, "idle"),
    )


def schedule_view(s: Schedule) -> ScheduleView:
    """Everything the schedule views show, from the schedule alone."""
    slots = tuple(slot_view(x) for x in s.slots)
    rows = _rows(s, slots)
    return ScheduleView(
        kind=s.kind,
        stages=s.stages,
        microbatches=s.microbatches,
        length=s.length,
        form=s.form,
        checkpoint=s.checkpoint,
        residual_bytes=s.residual_bytes,
        bubble_fraction=s.schedule_bubble_fraction,
        theory_fraction=s.theory_bubble_fraction,
        measured_fraction=s.measured_bubble,
        title=title_str(s),
        headline=title_text(s),
        how=how_str(s),
        bubble=tuple(bubble_parts(s)),
        bubble_line=bubble_str(s),
        measured=measured_count_str(s),
        realness=realness_str(s),
        measured_line=measured_str(s),
        measured_title=measured_title(s),
        platform=s.measured_platform,
        illustrative=s.measured_platform == "cpu",
        measured_seconds=measured_span(s),
        rows=rows,
        slots=slots,
        measured_slots=_measured_slots(s),
        in_flight=tuple(f"{r.stage}: {r.in_flight}" for r in rows),
        activation=_activation(s, rows),
        panels=tuple(panels(s)),
        legend=LEGEND,
        swatches=swatches(),
        figure_swatches=figure_swatches(),
    )
