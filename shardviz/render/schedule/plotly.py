"""A pipeline :class:`~shardviz.model.schedule.Schedule` as an interactive plotly figure.

The chart of :mod:`.schedule_html` as horizontal bars: one row per stage, one bar per slot on a
time axis (units of one stage's forward or backward), a microbatch in one hue on every stage,
its forward light and its backward dark, idle units pale grey. Under it, when the run was
profiled, the slots as measured on a seconds axis (illustrative on CPU, real on other
devices), and, when the pipeline knows what a stage keeps per microbatch, each stage's
activation memory. The title gives the kind, sizes, form and checkpointing, and the bubble:
the schedule's, the theory's ``(S-1)/(M+S-1)`` and the measured one. Only
``plotly.graph_objects``; plotly is imported when a figure is asked for.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from shardviz.model.schedule import MeasuredSlot, Schedule, Slot
from shardviz.model.units import format_bytes, format_seconds
from shardviz.render.compare.plotly import byte_axis, plotly_text, require_plotly
from shardviz.render.schedule.html import IDLE_FILL, slot_fill
from shardviz.render.schedule.text import (
    PHASE_WORDS,
    activation_product,
    bubble_str,
    checkpoint_word,
    form_name,
    grid,
    measured_count_str,
    realness_str,
    slot_label,
)

#: Slots get their ``F3`` / ``B3`` label up to this many time units (plotly hides labels that
#: do not fit, but thousands of hidden labels still cost).
LABEL_UP_TO = 64
#: Height (px) of one stage's row, of a panel's axis, of the gap between panels, and the
#: top and bottom margins.
ROW_PX = 30
AXIS_PX = 40
GAP_PX = 80
MARGIN = {"t": 100, "b": 50, "l": 70, "r": 190}


def _plot_px(schedule: Schedule, names: list[str]) -> int:
    """Height (px) of the plotting area: the panels and the gaps between them."""
    return (ROW_PX * schedule.stages + AXIS_PX) * len(names) + GAP_PX * (len(names) - 1)


def title_text(schedule: Schedule) -> str:
    """``1f1b pipeline · 4 stages × 8 microbatches · shard_map · no checkpointing``."""
    s, m = schedule.stages, schedule.microbatches
    return (
        f"{schedule.kind} pipeline · {s} stage{'s' * (s != 1)} × {m} microbatch"
        f"{'es' * (m != 1)} · {form_name(schedule)} · {checkpoint_word(schedule)}"
    )


def stage_names(schedule: Schedule) -> list[str]:
    """``stage 0`` … : the category of each row, top to bottom."""
    return [f"stage {s}" for s in range(schedule.stages)]


def panels(schedule: Schedule) -> list[str]:
    """Which panels the figure has, top to bottom: ``schedule``, then ``measured`` when
    profiled, then ``activation`` when the bytes per microbatch are known."""
    out = ["schedule"]
    if schedule.measured:
        out.append("measured")
    if schedule.residual_bytes is not None:
        out.append("activation")
    return out


def schedule_figure(schedule: Schedule) -> Any:
    """A schedule as a plotly figure.

    Args:
        schedule: the schedule (built by hand or from a pipelined run).

    Returns:
        A ``plotly.graph_objects.Figure`` with one subplot per entry of :func:`panels`. The
        schedule's traces are horizontal bars (one bar per slot or idle unit, ``base`` its
        time, width one unit): ``idle``, ``forward`` and ``backward`` (each bar coloured by
        its microbatch, labelled ``F3`` / ``B3``). The measured panel has ``measured
        forward`` and ``measured backward`` (``base`` the start in seconds after the first
        measured slot, width its seconds); the activation panel one ``activation`` trace of
        bytes per stage. ``layout.meta`` holds ``bubble``, ``theory`` and ``measured`` (the
        model's fractions; ``measured`` is ``None`` when not profiled) and ``panels``.
    """
    go, make_subplots = require_plotly()
    names = panels(schedule)
    titles = {
        "schedule": "Schedule: time in units of one stage's forward or backward",
        "measured": _measured_title(schedule),
        "activation": "Activation memory per stage (microbatches in flight × bytes kept)",
    }
    fig = make_subplots(
        rows=len(names),
        cols=1,
        vertical_spacing=GAP_PX / max(_plot_px(schedule, names), 1),
        subplot_titles=[titles[n] for n in names],
    )
    for row, name in enumerate(names, start=1):
        traces = {
            "schedule": _schedule_bars,
            "measured": _measured_bars,
            "activation": _activation_bars,
        }[name](go, schedule)
        for trace in traces:
            fig.add_trace(trace, row=row, col=1)
        fig.update_yaxes(
            categoryorder="array",
            categoryarray=stage_names(schedule),
            autorange="reversed",
            row=row,
            col=1,
        )
        _x_axis(fig, schedule, name, row)
    _lay_out(fig, schedule, names)
    return fig


def _measured_title(schedule: Schedule) -> str:
    real = realness_str(schedule)
    return plotly_text(measured_count_str(schedule).capitalize() + (f" · {real}" if real else ""))


def _x_axis(fig: Any, schedule: Schedule, name: str, row: int) -> None:
    if name == "schedule":
        fig.update_xaxes(title_text="time (units)", range=[0, schedule.length], row=row, col=1)
    elif name == "measured":
        fig.update_xaxes(title_text="time since the first measured slot", tickformat="~s",
                         ticksuffix="s", rangemode="tozero", row=row, col=1)  # fmt: skip
    else:
        top = max(schedule.activation_bytes(s) or 0 for s in range(schedule.stages))
        axis = byte_axis(top)
        axis["range"][1] *= 1.25  # room for the labels right of the bars
        fig.update_xaxes(axis, title_text="bytes per device", row=row, col=1)


def _slot_bar(go: Any, schedule: Schedule, phase: str, slots: Sequence[Slot]) -> Any:
    labelled = schedule.length <= LABEL_UP_TO
    return go.Bar(
        name=PHASE_WORDS[phase],
        orientation="h",
        y=[f"stage {x.stage}" for x in slots],
        x=[1] * len(slots),
        base=[x.time for x in slots],
        width=0.8,
        marker={"color": [slot_fill(x) for x in slots], "line": {"color": "#ffffff", "width": 1}},
        text=[slot_label(x) for x in slots] if labelled else None,
        textposition="inside" if labelled else "none",
        insidetextanchor="middle",
        customdata=[[x.stage, x.time, x.microbatch] for x in slots],
        hovertemplate=(
            f"stage %{{customdata[0]}} · time %{{customdata[1]}} · {PHASE_WORDS[phase]} of "
            "microbatch %{customdata[2]}<extra></extra>"
        ),
        legendgroup="schedule",
    )


def _schedule_bars(go: Any, schedule: Schedule) -> list[Any]:
    """``idle``, then ``forward`` and ``backward``: one bar per grid unit of the schedule."""
    cells = grid(schedule)
    idle = [(s, t) for s in range(schedule.stages) for t in range(schedule.length)
            if (s, t) not in cells]  # fmt: skip
    out = [
        go.Bar(
            name="idle",
            orientation="h",
            y=[f"stage {s}" for s, _ in idle],
            x=[1] * len(idle),
            base=[t for _, t in idle],
            width=0.8,
            marker={"color": IDLE_FILL, "line": {"color": "#eaeef2", "width": 1}},
            hovertemplate="stage %{y} idle at time %{base}<extra></extra>",
            legendgroup="schedule",
        )
    ]
    for phase in ("F", "B"):
        slots = [x for x in schedule.slots if x.phase == phase]
        out.append(_slot_bar(go, schedule, phase, slots))
    return out


def _measured_bars(go: Any, schedule: Schedule) -> list[Any]:
    """``measured forward`` and ``measured backward``: one bar per timed slot."""
    t0 = min(m.start for m in schedule.measured)
    out = []
    for phase in ("F", "B"):
        slots: list[MeasuredSlot] = [m for m in schedule.measured if m.phase == phase]
        fills = [slot_fill(Slot(m.stage, 0, m.microbatch, m.phase)) for m in slots]
        out.append(
            go.Bar(
                name=f"measured {PHASE_WORDS[phase]}",
                orientation="h",
                y=[f"stage {m.stage}" for m in slots],
                x=[m.seconds for m in slots],
                base=[m.start - t0 for m in slots],
                width=0.8,
                marker={"color": fills, "line": {"color": "#ffffff", "width": 0.5}},
                customdata=[
                    [m.stage, m.microbatch, format_seconds(m.seconds), format_seconds(m.start - t0)]
                    for m in slots
                ],
                hovertemplate=(
                    f"stage %{{customdata[0]}} · {PHASE_WORDS[phase]} of microbatch "
                    "%{customdata[1]}<br>%{customdata[2]} from %{customdata[3]}<extra></extra>"
                ),
                legendgroup="measured",
            )
        )
    return out


def _activation_bars(go: Any, schedule: Schedule) -> list[Any]:
    """``activation``: each stage's bytes kept for its backwards at its peak."""
    stages = range(schedule.stages)
    return [
        go.Bar(
            name="activation memory",
            orientation="h",
            y=stage_names(schedule),
            x=[schedule.activation_bytes(s) for s in stages],
            width=0.6,
            marker={"color": "#8c959f"},
            text=[activation_product(schedule, s) for s in stages],
            textposition="outside",
            customdata=[
                format_bytes(schedule.activation_bytes(s) or 0, exact=True) for s in stages
            ],
            hovertemplate="%{y}: %{customdata}<extra></extra>",
            legendgroup="activation",
        )
    ]


def _lay_out(fig: Any, schedule: Schedule, names: list[str]) -> None:
    """The title (with the bubble line), overlaid bars, the height and ``layout.meta``."""
    fig.update_layout(
        barmode="overlay",
        template="plotly_white",
        height=_plot_px(schedule, names) + MARGIN["t"] + MARGIN["b"],
        margin=MARGIN,
        title={
            "text": f"{plotly_text(title_text(schedule))}<br><sup>"
            f"{plotly_text(bubble_str(schedule))}</sup>",
            "x": 0.01,
        },
        uniformtext={"minsize": 8, "mode": "hide"},
        legend={"x": 1.01, "y": 1.0, "xanchor": "left", "yanchor": "top"},
        hoverlabel={"align": "left"},
        meta={
            "bubble": schedule.schedule_bubble_fraction,
            "theory": schedule.theory_bubble_fraction,
            "measured": schedule.measured_bubble,
            "panels": names,
        },
    )
