"""The pipeline Explorer's Schedule pane as HTML, from a strategy's result: pure, no jax.

Three parts: the schedule itself, drawn by :func:`shardviz.render.schedule.html.schedule_html`
(the static view's chart, bubble line against the theory ``(S-1)/(M+S-1)`` and the measured
one when profiled, and each stage's microbatches in flight and activation bytes); which
devices run each stage, with the compiler's per-device figures; and the bubble against the
microbatch count: the theory for every count the slider offers, and for each count run so far
its run's bubble and measured step time.

Testable hooks: the root is ``<div class="sv-root sv-pipe" data-strategy data-stages
data-microbatches data-kind>`` holding the schedule fragment (``.sv-schedule``), a
``<div class="sv-pipe-stages">`` with one ``<span data-stage="s" data-devices="0 1 …">`` per
stage, and a ``<table class="sv-pipe-sweep">`` with one ``<td data-mb="m">`` per microbatch
count in each of its rows (``data-current`` on the current count's).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from shardviz.model.compare import StrategyResult
from shardviz.model.mesh import MeshLayout
from shardviz.model.schedule import Schedule, theory_bubble
from shardviz.model.units import format_bytes
from shardviz.render.html import STYLE
from shardviz.render.schedule.html import schedule_html
from shardviz.render.svg import esc

__all__ = ["STAGE_AXIS", "SweepRun", "SweepPoint", "pane_html", "stage_devices", "sweep_row"]

#: The mesh axis the pipeline's stages are split over (``shardviz.strategies.pipeline.gspmd``).
STAGE_AXIS = "stage"

PIPE_CSS = (
    "<style>.sv-pipe .sv-sub-head{font-weight:600;margin:10px 0 2px}"
    ".sv-pipe td[data-current]{background:#ddf4ff;font-weight:600}"
    ".sv-pipe .sv-schedule{border:0;padding:0;margin:4px 0 0}</style>"
)


@dataclass(frozen=True)
class SweepRun:
    """What one run measured for the sweep: its step time and its bubble (the measured one
    when profiled, else its schedule's)."""

    step_seconds: float | None
    bubble: float

    @classmethod
    def of(cls, result: StrategyResult) -> SweepRun | None:
        """The run of a pipeline strategy's result (``None`` for another strategy)."""
        if result.schedule is None:
            return None
        return cls(result.step_seconds, result.schedule.bubble_fraction)


@dataclass(frozen=True)
class SweepPoint:
    """One microbatch count on the slider: the theory bubble at the current stage count,
    and, once that count has run, its step time and bubble (measured, else the schedule's)."""

    microbatches: int
    theory: float
    step_seconds: float | None = None
    bubble: float | None = None
    current: bool = False


def sweep_row(
    stages: int,
    options: Sequence[int],
    current: int,
    runs: Mapping[int, SweepRun],
) -> list[SweepPoint]:
    """A :class:`SweepPoint` per slider value; ``runs`` holds what was measured of the counts
    already run at this stage count and schedule, by microbatch count."""
    points = []
    for m in options:
        run = runs.get(m)
        points.append(
            SweepPoint(
                microbatches=m,
                theory=theory_bubble(stages, m),
                step_seconds=run.step_seconds if run is not None else None,
                bubble=run.bubble if run is not None else None,
                current=m == current,
            )
        )
    return points


def stage_devices(mesh: MeshLayout, stages: int) -> list[tuple[int, ...]]:
    """The device ids of each stage: those whose coordinate on the ``stage`` axis is that
    stage (all devices for every stage when the mesh has no such axis)."""
    ids = mesh.device_ids
    if STAGE_AXIS not in mesh.axis_names:
        return [ids] * stages
    k = mesh.axis_names.index(STAGE_AXIS)
    inner = math.prod(mesh.axis_sizes[k + 1 :])
    size = mesh.axis_sizes[k]
    return [tuple(d for i, d in enumerate(ids) if (i // inner) % size == s) for s in range(stages)]


def _pct(x: float) -> str:
    return f"{x:.1%}"


def _ids(ids: Sequence[int]) -> str:
    return ", ".join(map(str, ids[:8])) + (f", … {len(ids) - 8} more" if len(ids) > 8 else "")


def _stages_line(result: StrategyResult, schedule: Schedule) -> str:
    """Which devices run each stage, and what the compiler reserves per device."""
    groups = stage_devices(result.mesh, schedule.stages)
    parts = [
        f'<span data-stage="{s}" data-devices="{" ".join(map(str, ids))}">stage {s}: '
        f"{esc(_ids(ids))}</span>"
        for s, ids in enumerate(groups)
    ]
    m = result.memory
    note = (
        f"The compiler, per device (one program for every stage, sized for the stage that "
        f"holds the most): peak {format_bytes(m.peak)}, temp {format_bytes(m.temp)}."
    )
    if schedule.residual_bytes is None:
        note += " GSPMD's form keeps every loop step's activations for autodiff: they are in temp."
    return (
        f'<div class="sv-facts sv-pipe-stages"><b>devices</b> {" · ".join(parts)}</div>'
        f'<div class="sv-note">{esc(note)}</div>'
    )


def _sweep_table(points: Sequence[SweepPoint], stages: int) -> str:
    def cells(text_of, cls: str = "sv-num") -> str:
        out = []
        for p in points:
            mark = " data-current" if p.current else ""
            out.append(f'<td class="{cls}" data-mb="{p.microbatches}"{mark}>{text_of(p)}</td>')
        return "".join(out)

    def step(p: SweepPoint) -> str:
        if p.step_seconds is None:
            return '<span class="sv-dim" title="move the slider there to run it">—</span>'
        return esc(f"{p.step_seconds * 1e3:.3g} ms")

    def bubble(p: SweepPoint) -> str:
        return esc(_pct(p.bubble)) if p.bubble is not None else '<span class="sv-dim">—</span>'

    rows = [
        f"<tr><th>microbatches M</th>{cells(lambda p: str(p.microbatches))}</tr>",
        f"<tr><th>theory (S-1)/(M+S-1), S={stages}</th>{cells(lambda p: esc(_pct(p.theory)))}</tr>",
        f"<tr><th>bubble of the run</th>{cells(bubble)}</tr>",
        f"<tr><th>step time (measured)</th>{cells(step)}</tr>",
    ]
    return '<table class="sv-pipe-sweep"><tbody>' + "".join(rows) + "</tbody></table>"


def pane_html(label: str, result: StrategyResult, sweep: Sequence[SweepPoint]) -> str:
    """The Schedule pane for the strategy ``label`` (its id in the comparison).

    Raises:
        ValueError: ``result`` is not a pipeline strategy's (it has no schedule).
    """
    schedule = result.schedule
    if schedule is None:
        raise ValueError(f"strategy {label!r} is not a pipeline: it has no schedule to show")
    head = (
        f'<div class="sv-head">Schedule <span class="sv-dim">· {esc(label)} · '
        f"{esc(result.title)}</span></div>"
    )
    times = "on CPU fake devices step times are illustrative" if _on_cpu(result) else ""
    body = [
        head,
        schedule_html(schedule),
        _stages_line(result, schedule),
        '<div class="sv-sub-head">Bubble against the microbatch count</div>',
        _sweep_table(sweep, schedule.stages),
        f'<div class="sv-note">{esc(times)}</div>' if times else "",
    ]
    attrs = (
        f'data-strategy="{esc(label)}" data-stages="{schedule.stages}" '
        f'data-microbatches="{schedule.microbatches}" data-kind="{esc(schedule.kind)}"'
    )
    return f'<div class="sv-root sv-pipe" {attrs}>{STYLE}{PIPE_CSS}' + "".join(body) + "</div>"


def _on_cpu(result: StrategyResult) -> bool:
    return all(d.platform == "cpu" for d in result.mesh.devices)
