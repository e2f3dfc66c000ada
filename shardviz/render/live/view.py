"""What the live view shows besides raw numbers, made once in Python: its readouts, as view objects.

The readouts are the words (progress, the last loss, step-time notes, bytes, tooltips) and the
chart scales and tick labels, in four parts: ``head``, ``loss``, ``time`` and ``memory``
(:class:`LiveHeadView`, :class:`LiveLossView`, :class:`LiveTimeView`, :class:`LiveMemoryView`).
:class:`~shardviz.widgets.live.widget.LiveWidget` syncs their JSON so that live.js only draws,
and :mod:`.svg` draws the same views into the static HTML, so the two pictures agree.

The chart geometry (px) is here too, because the time chart's tick labels are spaced in px;
live.js repeats these constants.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from shardviz.model._codec import JsonMixin
from shardviz.model.units import format_bytes, format_loss, format_ms
from shardviz.render.live.format import (
    median_step_ms,
    progress_text,
    time_note,
)
from shardviz.render.traffic import ARROW_COLORS

Json = dict[str, Any]

#: Devices drawn in the memory panel before the rest are summarised.
MAX_MEMORY_BARS = 64

# Chart geometry, shared with svg.py and live.js (px).
LOSS_W, LOSS_H = 380, 180
TIME_W, TIME_H = 240, 120
PAD_L, PAD_R, PAD_T, PAD_B = 56, 10, 10, 22
MEM_ROW, MEM_LABEL, MEM_BAR, MEM_VALUE = 18, 52, 150, 78

#: The readouts' parts, and the synced trait each one is made from.
PART_OF_TRAIT = {
    "step": "head",
    "total_steps": "head",
    "losses": "loss",
    "step_ms": "time",
    "host_step_ms": "time",
    "memory": "memory",
    "memory_note": "memory",
}

#: What the memory note says before anything is measured.
NO_MEMORY_NOTE = "not measured yet"


@dataclass(frozen=True)
class Tick(JsonMixin):
    """A tick label of a chart's y axis, at ``value``."""

    value: float
    text: str


@dataclass(frozen=True)
class LiveHeadView(JsonMixin):
    """The heading's progress: ``step 3 / 100``, or ``step 3`` when the total is not known."""

    progress: str


@dataclass(frozen=True)
class LiveLossView(JsonMixin):
    """The loss chart: the y range of the finite losses, tick labels at the highest and
    lowest, one tooltip per point (``step 2: loss 1.5``) and the last loss for the heading
    (``loss 0.9``, or "")."""

    range: tuple[float, float]
    ticks: tuple[Tick, ...]
    titles: tuple[str, ...]
    last: str


@dataclass(frozen=True)
class MedianLine(JsonMixin):
    """The dashed median line of the step-time chart, and its tooltip."""

    value: float
    title: str


@dataclass(frozen=True)
class HostLine(JsonMixin):
    """One process's line of step times: its colour and tooltip."""

    process: int
    color: str
    title: str


@dataclass(frozen=True)
class LiveTimeView(JsonMixin):
    """The step-time chart (the first, compile, step left out): ``[0, top]``, its ticks, the
    median line (``None`` before two steps), the note under it and one line per process."""

    range: tuple[float, float]
    ticks: tuple[Tick, ...]
    median: MedianLine | None
    note: str
    hosts: tuple[HostLine, ...]


@dataclass(frozen=True)
class MemoryRow(JsonMixin):
    """One bar's words: ``dev 3``, ``4 KiB`` and its tooltip."""

    label: str
    text: str
    title: str


@dataclass(frozen=True)
class LiveMemoryView(JsonMixin):
    """The memory panel: the bytes a full bar means, a row per bar shown, ``… 5 more
    devices`` (or "") for the rest, and the note on what the bars mean."""

    scale: float
    rows: tuple[MemoryRow, ...]
    more: str
    note: str


def head_readout(step: int, total_steps: int) -> LiveHeadView:
    """The heading's progress."""
    return LiveHeadView(progress_text(step, total_steps))


def loss_span(values: Sequence[float]) -> tuple[float, float]:
    """The y range drawn for some finite values: their range, padded a little."""
    if not values:
        return 0.0, 1.0
    lo, hi = min(values), max(values)
    if hi == lo:
        pad = abs(hi) * 0.05 or 1.0
        return lo - pad, hi + pad
    pad = (hi - lo) * 0.04
    return lo - pad, hi + pad


def loss_readout(losses: Sequence[float | None]) -> LiveLossView:
    """The loss chart's words and scale (:class:`LiveLossView`)."""
    finite = [v for v in losses if v is not None and math.isfinite(v)]
    ticks = []
    if finite:
        top, bottom = max(finite), min(finite)
        ticks.append(Tick(top, format_loss(top)))
        if bottom != top:
            ticks.append(Tick(bottom, format_loss(bottom)))
    return LiveLossView(
        range=loss_span(finite),
        ticks=tuple(ticks),
        titles=tuple(f"step {i + 1}: loss {format_loss(v)}" for i, v in enumerate(losses)),
        last=f"loss {format_loss(losses[-1])}" if losses else "",
    )


def host_color(process: int) -> str:
    """The line colour of a process's step times (dark, so a thin line reads on white)."""
    return ARROW_COLORS[process % len(ARROW_COLORS)]


def time_readout(step_ms: Sequence[float], hosts: Sequence[Json] = ()) -> LiveTimeView:
    """The step-time chart's words and scale (:class:`LiveTimeView`).

    ``top`` is 10% over the slowest step; ticks at 0, the median and the slowest, each kept
    only when 10 px clear of those kept before it. ``hosts`` (``{"process", "step_ms"}``
    each, from a multi-process run) get one line each, in :func:`host_color`, and the note
    says each one's median and the spread.
    """
    rest = list(step_ms[1:])
    for host in hosts:
        rest += list(host["step_ms"][1:])
    top = max(rest) * 1.1 if rest else 1.0
    med = median_step_ms(step_ms)
    labels = [(0.0, "0")]
    if med is not None:
        labels += [(med, format_ms(med)), (max(rest), format_ms(max(rest)))]
    lines = []
    for host in hosts:
        host_med = median_step_ms(host["step_ms"])
        said = f"median {format_ms(host_med)} ms" if host_med is not None else "compiling"
        process = int(host["process"])
        lines.append(HostLine(process, host_color(process), f"process {host['process']}: {said}"))
    return LiveTimeView(
        range=(0.0, top),
        ticks=tuple(Tick(v, text) for v, text in _spaced(labels, top)),
        median=None if med is None else MedianLine(med, f"median {format_ms(med)} ms"),
        note=time_note(step_ms) + hosts_note(hosts),
        hosts=tuple(lines),
    )


def hosts_note(hosts: Sequence[Json]) -> str:
    """`` · per process: p0 12.3 ms, p1 14.1 ms, slowest 15% over fastest`` (medians
    without the compile step), or "" for one process or before two steps."""
    medians = [(int(h["process"]), median_step_ms(h["step_ms"])) for h in hosts]
    known = [(p, m) for p, m in medians if m is not None]
    if len(hosts) < 2 or len(known) < len(hosts):
        return ""
    each = ", ".join(f"p{p} {format_ms(m)} ms" for p, m in known)
    fast, slow = min(m for _, m in known), max(m for _, m in known)
    spread = f"slowest {(slow / fast - 1) * 100:.0f}% over fastest" if fast > 0 else ""
    return f" · the step is the slowest process's; per process: {each}" + (
        f", {spread}" if spread else ""
    )


def _spaced(labels: Sequence[tuple[float, str]], top: float) -> list[tuple[float, str]]:
    """Tick labels, in order of importance, keeping only those 10 px clear of the ones kept."""
    plot = TIME_H - PAD_T - PAD_B
    kept: list[tuple[float, str]] = []
    for v, text in labels:
        if all(abs(v - k) / top * plot >= 10 for k, _ in kept):
            kept.append((v, text))
    return kept


def memory_scale(memory: Sequence[Json]) -> float:
    """The bytes a full bar means: the largest limit when every device has one, else the most."""
    limits = [e.get("limit") or 0 for e in memory]
    if memory and all(limits):
        return float(max(limits))
    sizes = [max(e.get("bytes") or 0, e.get("peak") or 0) for e in memory]
    return float(max(sizes, default=0)) or 1.0


def memory_row_words(entry: Json) -> MemoryRow:
    """One bar's words: ``dev 3``, ``4 KiB`` and its tooltip; an entry from a multi-process
    run (with ``"process"``) is labelled ``p1 d5``.

    The tooltip has the exact bytes in use, then the peak and the limit when known.
    """
    used = int(entry.get("bytes") or 0)
    process = entry.get("process")
    where = "" if process is None else f" (process {process})"
    title = f"device {entry['device']}{where}: {format_bytes(used, exact=True)}"
    if entry.get("peak"):
        title += f", peak {format_bytes(int(entry['peak']))}"
    if entry.get("limit"):
        title += f" of {format_bytes(int(entry['limit']))}"
    label = f"dev {entry['device']}" if process is None else f"p{process} d{entry['device']}"
    return MemoryRow(label, format_bytes(used), title)


def memory_readout(memory: Sequence[Json], note: str) -> LiveMemoryView:
    """The memory panel's words and scale (:class:`LiveMemoryView`): one row for each of the
    first :data:`MAX_MEMORY_BARS` entries. When every device reads the same, one row stands
    for all of them (labelled ``all 8``) and the note begins ``same on every device (8
    devices)``."""
    same = same_memory_words(memory)
    if same:
        row = memory_row_words(memory[0])
        row = replace(
            row, label=f"all {len(memory)}", title=f"{same}: " + row.title.split(": ", 1)[1]
        )
        return LiveMemoryView(
            memory_scale(memory), (row,), "", f"{same} · {note or NO_MEMORY_NOTE}"
        )
    shown = memory[:MAX_MEMORY_BARS]
    more = len(memory) - len(shown)
    return LiveMemoryView(
        memory_scale(memory),
        tuple(memory_row_words(e) for e in shown),
        f"… {more} more devices" if more else "",
        note or NO_MEMORY_NOTE,
    )


def same_memory_words(memory: Sequence[Json]) -> str:
    """``same on every device (8 devices)`` when several devices read the same bytes, peak and
    limit (one bar then says it once), else ""."""
    if len(memory) < 2:
        return ""
    first = [memory[0].get(k) for k in ("bytes", "peak", "limit")]
    if any([e.get(k) for k in ("bytes", "peak", "limit")] != first for e in memory):
        return ""
    return f"same on every device ({len(memory)} devices)"
