"""A pipeline :class:`~shardviz.model.schedule.Schedule` as an interactive plotly figure.

The chart of :mod:`.html` as horizontal bars: one row per stage, one bar per slot on a
time axis (units of one stage's forward or backward), a microbatch in one hue on every stage,
its forward light and its backward dark, idle units pale grey. Under it, when the run was
profiled, the slots as measured on a seconds axis (illustrative on CPU, real on other
devices), and, when the pipeline knows what a stage keeps per microbatch, each stage's
activation memory. The title gives the kind, sizes, form and checkpointing, and the bubble:
the schedule's, the theory's ``(S-1)/(M+S-1)`` and the measured one. Only
``plotly.graph_objects``; plotly is imported when a figure is asked for. The words, colours
and cells are :func:`~.view.schedule_view`'s, as in the text and HTML views.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from shardviz.model.schedule import Schedule
from shardviz.render.compare.plotly import byte_axis, plotly_text, require_plotly
from shardviz.render.schedule.view import (
    FIGURE_ACTIVATION_TITLE,
    IDLE_FILL,
    PHASE_WORDS,
    ScheduleView,
    SlotView,
    panels,
    schedule_view,
    stage_names,
    title_text,
)

#: The figure, its sizes, and the helpers that lived here before :mod:`.view` (their
#: importers keep working).
__all__ = [
    "AXIS_PX",
    "GAP_PX",
    "LABEL_UP_TO",
    "MARGIN",
    "ROW_PX",
    "panels",
    "schedule_figure",
    "stage_names",
    "title_text",
]

#: Slots get their ``F3`` / ``B3`` label up to this many time units (plotly hides labels that
#: do not fit, but thousands of hidden labels still cost).
LABEL_UP_TO = 64
#: Height (px) of one stage's row, of a panel's axis, of the gap between panels, and the
#: top and bottom margins.
ROW_PX = 30
AXIS_PX = 40
GAP_PX = 80
MARGIN = {"t": 100, "b": 50, "l": 70, "r": 190}


def _plot_px(view: ScheduleView, names: Sequence[str]) -> int:
    """Height (px) of the plotting area: the panels and the gaps between them."""
    return (ROW_PX * view.stages + AXIS_PX) * len(names) + GAP_PX * (len(names) - 1)


def schedule_figure(schedule: Schedule | ScheduleView) -> Any:
    """A schedule as a plotly figure.

    Args:
        schedule: the schedule (built by hand or from a pipelined run), or its view.

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
    view = schedule if isinstance(schedule, ScheduleView) else schedule_view(schedule)
    names = view.panels
    titles = {
        "schedule": "Schedule: time in units of one stage's forward or backward",
        "measured": plotly_text(view.measured_title),
        "activation": FIGURE_ACTIVATION_TITLE,
    }
    fig = make_subplots(
        rows=len(names),
        cols=1,
        vertical_spacing=GAP_PX / max(_plot_px(view, names), 1),
        subplot_titles=[titles[n] for n in names],
    )
    for row, name in enumerate(names, start=1):
        traces = {
            "schedule": _schedule_bars,
            "measured": _measured_bars,
            "activation": _activation_bars,
        }[name](go, view)
        for trace in traces:
            fig.add_trace(trace, row=row, col=1)
        fig.update_yaxes(
            categoryorder="array",
            categoryarray=[r.name for r in view.rows],
            autorange="reversed",
            row=row,
            col=1,
        )
        _x_axis(fig, view, name, row)
    _lay_out(fig, view)
    return fig


def _x_axis(fig: Any, view: ScheduleView, name: str, row: int) -> None:
    if name == "schedule":
        fig.update_xaxes(title_text="time (units)", range=[0, view.length], row=row, col=1)
    elif name == "measured":
        fig.update_xaxes(title_text="time since the first measured slot", tickformat="~s",
                         ticksuffix="s", rangemode="tozero", row=row, col=1)  # fmt: skip
    else:
        top = max(r.activation_bytes or 0 for r in view.rows)
        axis = byte_axis(top)
        axis["range"][1] *= 1.25  # room for the labels right of the bars
        fig.update_xaxes(axis, title_text="bytes per device", row=row, col=1)


def _slot_bar(go: Any, view: ScheduleView, phase: str, slots: Sequence[SlotView]) -> Any:
    labelled = view.length <= LABEL_UP_TO
    return go.Bar(
        name=PHASE_WORDS[phase],
        orientation="h",
        y=[view.rows[x.stage].name for x in slots],
        x=[1] * len(slots),
        base=[x.time for x in slots],
        width=0.8,
        marker={"color": [x.fill for x in slots], "line": {"color": "#ffffff", "width": 1}},
        text=[x.label for x in slots] if labelled else None,
        textposition="inside" if labelled else "none",
        insidetextanchor="middle",
        customdata=[[x.stage, x.time, x.microbatch] for x in slots],
        hovertemplate=(
            f"stage %{{customdata[0]}} · time %{{customdata[1]}} · {PHASE_WORDS[phase]} of "
            "microbatch %{customdata[2]}<extra></extra>"
        ),
        legendgroup="schedule",
    )


def _schedule_bars(go: Any, view: ScheduleView) -> list[Any]:
    """``idle``, then ``forward`` and ``backward``: one bar per grid unit of the schedule."""
    idle = [(r, t) for r in view.rows for t, cell in enumerate(r.cells) if cell is None]
    out = [
        go.Bar(
            name="idle",
            orientation="h",
            y=[r.name for r, _ in idle],
            x=[1] * len(idle),
            base=[t for _, t in idle],
            width=0.8,
            marker={"color": IDLE_FILL, "line": {"color": "#eaeef2", "width": 1}},
            hovertemplate="stage %{y} idle at time %{base}<extra></extra>",
            legendgroup="schedule",
        )
    ]
    for phase in ("F", "B"):
        slots = [x for x in view.slots if x.phase == phase]
        out.append(_slot_bar(go, view, phase, slots))
    return out


def _measured_bars(go: Any, view: ScheduleView) -> list[Any]:
    """``measured forward`` and ``measured backward``: one bar per timed slot."""
    out = []
    for phase in ("F", "B"):
        slots = [m for m in view.measured_slots if m.phase == phase]
        out.append(
            go.Bar(
                name=f"measured {PHASE_WORDS[phase]}",
                orientation="h",
                y=[view.rows[m.stage].name for m in slots],
                x=[m.seconds for m in slots],
                base=[m.offset for m in slots],
                width=0.8,
                marker={
                    "color": [m.fill for m in slots],
                    "line": {"color": "#ffffff", "width": 0.5},
                },
                customdata=[[m.stage, m.microbatch, m.took, m.since] for m in slots],
                hovertemplate=(
                    f"stage %{{customdata[0]}} · {PHASE_WORDS[phase]} of microbatch "
                    "%{customdata[1]}<br>%{customdata[2]} from %{customdata[3]}<extra></extra>"
                ),
                legendgroup="measured",
            )
        )
    return out


def _activation_bars(go: Any, view: ScheduleView) -> list[Any]:
    """``activation``: each stage's bytes kept for its backwards at its peak."""
    return [
        go.Bar(
            name="activation memory",
            orientation="h",
            y=[r.name for r in view.rows],
            x=[r.activation_bytes for r in view.rows],
            width=0.6,
            marker={"color": "#8c959f"},
            text=[r.activation for r in view.rows],
            textposition="outside",
            customdata=[r.activation_exact for r in view.rows],
            hovertemplate="%{y}: %{customdata}<extra></extra>",
            legendgroup="activation",
        )
    ]


def _lay_out(fig: Any, view: ScheduleView) -> None:
    """The title (with the bubble line), overlaid bars, the height and ``layout.meta``."""
    fig.update_layout(
        barmode="overlay",
        template="plotly_white",
        height=_plot_px(view, view.panels) + MARGIN["t"] + MARGIN["b"],
        margin=MARGIN,
        title={
            "text": f"{plotly_text(view.headline)}<br><sup>{plotly_text(view.bubble_line)}</sup>",
            "x": 0.01,
        },
        uniformtext={"minsize": 8, "mode": "hide"},
        legend={"x": 1.01, "y": 1.0, "xanchor": "left", "yanchor": "top"},
        hoverlabel={"align": "left"},
        meta={
            "bubble": view.bubble_fraction,
            "theory": view.theory_fraction,
            "measured": view.measured_fraction,
            "panels": list(view.panels),
        },
    )
