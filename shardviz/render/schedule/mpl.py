"""A pipeline :class:`~shardviz.model.schedule.Schedule` as a static matplotlib figure, for slides.

The same panels as :mod:`.plotly`, from the same :func:`~.view.schedule_view`: the stages x
time chart (a microbatch in one hue, forward light, backward dark, idle pale grey), the slots
as measured on a seconds axis when the run was profiled (illustrative on CPU, real on other
devices), and each stage's activation memory when the bytes kept per microbatch are known.
Built on ``matplotlib.figure.Figure`` directly (no pyplot), so it works under any backend;
matplotlib is imported when a figure is asked for.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from shardviz.model.schedule import Schedule
from shardviz.model.units import format_bytes, format_seconds
from shardviz.render.compare.mpl import displayable, mpl_text, require_matplotlib
from shardviz.render.compare.view import byte_ticks
from shardviz.render.schedule.view import (
    FIGURE_ACTIVATION_TITLE,
    IDLE_FILL,
    ScheduleView,
    Swatch,
    schedule_view,
)

#: Slots get their ``F3`` / ``B3`` label up to this many time units.
LABEL_UP_TO = 40
#: Height (inches) of one stage's row, and of a panel's title and axis.
ROW_IN = 0.32
PANEL_IN = 1.0
BAR_H = 0.8
#: The edge of the idle swatch in the legend.
IDLE_EDGE = "#d0d7de"


def schedule_mpl(schedule: Schedule | ScheduleView, *, width: float = 11.0) -> Any:
    """A schedule as a matplotlib figure.

    Args:
        schedule: the schedule (built by hand or from a pipelined run), or its view.
        width: the figure's width in inches (the height follows the stages and panels).

    Returns:
        A ``matplotlib.figure.Figure`` with one axes per entry of
        :func:`~shardviz.render.schedule.view.panels`, stage 0 on top. Every slot is a
        rectangle with ``gid="slot"`` (``2 * S * M`` of them), every idle unit one with
        ``gid="idle"``; measured slots have ``gid="measured"`` and the activation bars
        ``gid="activation"``. The title gives the kind, sizes, form and checkpointing, and the
        bubble line under it the schedule's, the theory's and the measured bubble. Save it
        with ``fig.savefig("schedule.png", dpi=200)``.
    """
    Figure = require_matplotlib()
    view = schedule if isinstance(schedule, ScheduleView) else schedule_view(schedule)
    names = view.panels
    heights = [PANEL_IN + ROW_IN * view.stages for _ in names]
    fig = Figure(figsize=(width, sum(heights) + 0.9), layout="constrained")
    axes = fig.subplots(len(names), 1, height_ratios=heights, squeeze=False)[:, 0]
    draw = {"schedule": _schedule_panel, "measured": _measured_panel,
            "activation": _activation_panel}  # fmt: skip
    for ax, name in zip(axes, names, strict=True):
        draw[name](ax, view)
        _stage_axis(ax, view)
    fig.suptitle(
        f"{mpl_text(view.headline)}\n{mpl_text(view.bubble_line)}",
        x=0.01,
        ha="left",
        fontsize=10.5,
    )
    return displayable(fig)


def _stage_axis(ax: Any, view: ScheduleView) -> None:
    ax.set_yticks(range(view.stages), [r.name for r in view.rows])
    ax.set_ylim(view.stages - 0.5, -0.5)  # stage 0 on top
    ax.spines[["top", "right"]].set_visible(False)
    ax.tick_params(axis="both", labelsize=8.5)


def _bars(ax: Any, ys: Sequence[int], lefts: Sequence[float], widths: Sequence[float],
          colors: Sequence[str] | str, gid: str, **kw: Any) -> None:  # fmt: skip
    """Horizontal bars, each patch tagged ``gid``."""
    if not ys:
        return
    for patch in ax.barh(ys, widths, BAR_H, left=lefts, color=colors, **kw).patches:
        patch.set_gid(gid)


def _schedule_panel(ax: Any, view: ScheduleView) -> None:
    """The stages x time chart: idle units, then the slots with their labels."""
    idle = [(r.stage, t) for r in view.rows for t, cell in enumerate(r.cells) if cell is None]
    _bars(ax, [s for s, _ in idle], [t for _, t in idle], [1] * len(idle), IDLE_FILL, "idle",
          edgecolor="#eaeef2", linewidth=0.5)  # fmt: skip
    slots = view.slots
    labelled = view.length <= LABEL_UP_TO
    _bars(ax, [x.stage for x in slots], [x.time for x in slots], [1] * len(slots),
          [x.fill for x in slots], "slot", edgecolor="white",
          linewidth=0.6 if labelled else 0)  # fmt: skip
    if labelled:
        for x in slots:
            ax.text(x.time + 0.5, x.stage, x.label, ha="center", va="center",
                    fontsize=7, color="white" if x.phase == "B" else "#1f2328",
                    gid="label")  # fmt: skip
    ax.set_xlim(0, view.length)
    ax.set_xlabel("time (one unit = one stage's forward or backward)", fontsize=9)
    ax.set_title("Schedule", fontsize=10, loc="left")
    _legend(ax, view.figure_swatches)


def _patch(swatch: Swatch) -> Any:
    """A legend patch for ``swatch`` (the idle one edged, as it is pale)."""
    from matplotlib.patches import Patch

    if swatch.kind == "idle":
        return Patch(facecolor=swatch.fill, edgecolor=IDLE_EDGE, label=swatch.words)
    return Patch(facecolor=swatch.fill, label=swatch.words)


def _legend(ax: Any, swatches: Sequence[Swatch]) -> None:
    ax.legend(handles=[_patch(w) for w in swatches], loc="upper left",
              bbox_to_anchor=(1.0, 1.0), fontsize=7.5, frameon=False)  # fmt: skip


def _measured_panel(ax: Any, view: ScheduleView) -> None:
    """The timed slots on a seconds axis, under their realness label."""
    from matplotlib.ticker import FuncFormatter

    slots = view.measured_slots
    _bars(ax, [m.stage for m in slots], [m.offset for m in slots],
          [m.seconds for m in slots], [m.fill for m in slots], "measured", edgecolor="white",
          linewidth=0.3)  # fmt: skip
    ax.set_xlim(0, view.measured_seconds)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: format_seconds(v) if v else "0"))
    ax.set_xlabel("time since the first measured slot", fontsize=9)
    ax.set_title(
        mpl_text(view.measured_title),
        fontsize=10,
        loc="left",
        color="#9a6700" if view.illustrative else "#1f2328",
    )


def _activation_panel(ax: Any, view: ScheduleView) -> None:
    """Each stage's activation bytes at its peak, with the product written beside it."""
    values = [r.activation_bytes or 0 for r in view.rows]
    _bars(ax, [r.stage for r in view.rows], [0] * len(values), values, "#8c959f", "activation")
    for r, v in zip(view.rows, values, strict=True):
        ax.annotate(r.activation, (v, r.stage), xytext=(4, 0),
                    textcoords="offset points", va="center", fontsize=7.5)  # fmt: skip
    _byte_x_axis(ax, max(values, default=1))
    ax.set_title(FIGURE_ACTIVATION_TITLE, fontsize=10, loc="left")


def _byte_x_axis(ax: Any, top: int) -> None:
    """Linear x ticks in binary units, with room right of the bars for their labels."""
    ticks = byte_ticks(max(top, 1))
    ax.set_xticks(ticks, ["0" if v == 0 else format_bytes(v) for v in ticks])
    ax.set_xlim(0, ticks[-1] * 1.35)
    ax.set_xlabel("bytes per device", fontsize=9)
