"""A pipeline :class:`~shardviz.model.schedule.Schedule` as a static matplotlib figure, for slides.

The same panels as :mod:`.schedule_plotly`: the stages x time chart (a microbatch in one hue,
forward light, backward dark, idle pale grey), the slots as measured on a seconds axis when
the run was profiled (illustrative on CPU, real on other devices), and each stage's activation
memory when the bytes kept per microbatch are known. Built on ``matplotlib.figure.Figure``
directly (no pyplot), so it works under any backend; matplotlib is imported when a figure is
asked for.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from shardviz.model.schedule import Schedule, Slot
from shardviz.model.units import format_bytes, format_seconds
from shardviz.render.compare.mpl import displayable, mpl_text, require_matplotlib
from shardviz.render.compare.view import byte_ticks
from shardviz.render.schedule.html import IDLE_FILL, darken, slot_fill
from shardviz.render.schedule.plotly import panels, stage_names, title_text
from shardviz.render.schedule.text import (
    activation_product,
    bubble_str,
    grid,
    measured_count_str,
    realness_str,
    slot_label,
)

#: Slots get their ``F3`` / ``B3`` label up to this many time units.
LABEL_UP_TO = 40
#: Height (inches) of one stage's row, and of a panel's title and axis.
ROW_IN = 0.32
PANEL_IN = 1.0
BAR_H = 0.8


def schedule_mpl(schedule: Schedule, *, width: float = 11.0) -> Any:
    """A schedule as a matplotlib figure.

    Args:
        schedule: the schedule (built by hand or from a pipelined run).
        width: the figure's width in inches (the height follows the stages and panels).

    Returns:
        A ``matplotlib.figure.Figure`` with one axes per entry of
        :func:`~shardviz.render.schedule.plotly.panels`, stage 0 on top. Every slot is a
        rectangle with ``gid="slot"`` (``2 * S * M`` of them), every idle unit one with
        ``gid="idle"``; measured slots have ``gid="measured"`` and the activation bars
        ``gid="activation"``. The title gives the kind, sizes, form and checkpointing, and the
        bubble line under it the schedule's, the theory's and the measured bubble. Save it
        with ``fig.savefig("schedule.png", dpi=200)``.
    """
    Figure = require_matplotlib()
    names = panels(schedule)
    heights = [PANEL_IN + ROW_IN * schedule.stages for _ in names]
    fig = Figure(figsize=(width, sum(heights) + 0.9), layout="constrained")
    axes = fig.subplots(len(names), 1, height_ratios=heights, squeeze=False)[:, 0]
    draw = {"schedule": _schedule_panel, "measured": _measured_panel,
            "activation": _activation_panel}  # fmt: skip
    for ax, name in zip(axes, names, strict=True):
        draw[name](ax, schedule)
        _stage_axis(ax, schedule)
    fig.suptitle(
        f"{mpl_text(title_text(schedule))}\n{mpl_text(bubble_str(schedule))}",
        x=0.01,
        ha="left",
        fontsize=10.5,
    )
    return displayable(fig)


def _stage_axis(ax: Any, schedule: Schedule) -> None:
    ax.set_yticks(range(schedule.stages), stage_names(schedule))
    ax.set_ylim(schedule.stages - 0.5, -0.5)  # stage 0 on top
    ax.spines[["top", "right"]].set_visible(False)
    ax.tick_params(axis="both", labelsize=8.5)


def _bars(ax: Any, ys: Sequence[int], lefts: Sequence[float], widths: Sequence[float],
          colors: Sequence[str] | str, gid: str, **kw: Any) -> None:  # fmt: skip
    """Horizontal bars, each patch tagged ``gid``."""
    if not ys:
        return
    for patch in ax.barh(ys, widths, BAR_H, left=lefts, color=colors, **kw).patches:
        patch.set_gid(gid)


def _schedule_panel(ax: Any, schedule: Schedule) -> None:
    """The stages x time chart: idle units, then the slots with their labels."""
    cells = grid(schedule)
    idle = [(s, t) for s in range(schedule.stages) for t in range(schedule.length)
            if (s, t) not in cells]  # fmt: skip
    _bars(ax, [s for s, _ in idle], [t for _, t in idle], [1] * len(idle), IDLE_FILL, "idle",
          edgecolor="#eaeef2", linewidth=0.5)  # fmt: skip
    slots = schedule.slots
    labelled = schedule.length <= LABEL_UP_TO
    _bars(ax, [x.stage for x in slots], [x.time for x in slots], [1] * len(slots),
          [slot_fill(x) for x in slots], "slot", edgecolor="white",
          linewidth=0.6 if labelled else 0)  # fmt: skip
    if labelled:
        for x in slots:
            ax.text(x.time + 0.5, x.stage, slot_label(x), ha="center", va="center",
                    fontsize=7, color="white" if x.phase == "B" else "#1f2328",
                    gid="label")  # fmt: skip
    ax.set_xlim(0, schedule.length)
    ax.set_xlabel("time (one unit = one stage's forward or backward)", fontsize=9)
    ax.set_title("Schedule", fontsize=10, loc="left")
    _legend(ax)


def _legend(ax: Any) -> None:
    from matplotlib.patches import Patch

    base = slot_fill(Slot(0, 0, 0, "F"))
    handles = [
        Patch(facecolor=base, label="forward (a microbatch keeps its hue)"),
        Patch(facecolor=darken(base), label="backward (same hue, dark)"),
        Patch(facecolor=IDLE_FILL, edgecolor="#d0d7de", label="idle"),
    ]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7.5,
              frameon=False)  # fmt: skip


def _measured_panel(ax: Any, schedule: Schedule) -> None:
    """The timed slots on a seconds axis, under their realness label."""
    from matplotlib.ticker import FuncFormatter

    slots = schedule.measured
    t0 = min(m.start for m in slots)
    fills = [slot_fill(Slot(m.stage, 0, m.microbatch, m.phase)) for m in slots]
    _bars(ax, [m.stage for m in slots], [m.start - t0 for m in slots],
          [m.seconds for m in slots], fills, "measured", edgecolor="white",
          linewidth=0.3)  # fmt: skip
    ax.set_xlim(0, max(m.start + m.seconds for m in slots) - t0)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: format_seconds(v) if v else "0"))
    ax.set_xlabel("time since the first measured slot", fontsize=9)
    real = realness_str(schedule)
    illustrative = schedule.measured_platform == "cpu"
    ax.set_title(
        mpl_text(measured_count_str(schedule).capitalize() + (f" · {real}" if real else "")),
        fontsize=10,
        loc="left",
        color="#9a6700" if illustrative else "#1f2328",
    )


def _activation_panel(ax: Any, schedule: Schedule) -> None:
    """Each stage's activation bytes at its peak, with the product written beside it."""
    stages = range(schedule.stages)
    values = [schedule.activation_bytes(s) or 0 for s in stages]
    _bars(ax, list(stages), [0] * len(values), values, "#8c959f", "activation")
    for s, v in zip(stages, values, strict=True):
        ax.annotate(activation_product(schedule, s), (v, s), xytext=(4, 0),
                    textcoords="offset points", va="center", fontsize=7.5)  # fmt: skip
    _byte_x_axis(ax, max(values, default=1))
    ax.set_title("Activation memory per stage (microbatches in flight × bytes kept)",
                 fontsize=10, loc="left")  # fmt: skip


def _byte_x_axis(ax: Any, top: int) -> None:
    """Linear x ticks in binary units, with room right of the bars for their labels."""
    ticks = byte_ticks(max(top, 1))
    ax.set_xticks(ticks, ["0" if v == 0 else format_bytes(v) for v in ticks])
    ax.set_xlim(0, ticks[-1] * 1.35)
    ax.set_xlabel("bytes per device", fontsize=9)
