"""A :class:`~shardviz.model.serving.ServingComparison` as a static matplotlib figure, for slides.

The same four panels as :mod:`.plotly`: bytes per device and tokens/s per chip against the
batch (log2 x), then against the context; one line per strategy, the HBM per device dashed on
the memory panels, a marker at each strategy's largest batch that fits. Built on
``matplotlib.figure.Figure`` directly (no pyplot), so any backend works, Agg included.
"""

from __future__ import annotations

from collections.abc import Sequence
from textwrap import fill
from typing import Any

from shardviz.model.serving import ServingComparison
from shardviz.render.compare.mpl import displayable, mpl_text, require_matplotlib, set_byte_axis
from shardviz.render.serving.view import PANELS, ServingChart, serving_chart, x_ticks

__all__ = ["serving_mpl"]

_HBM_COLOUR = "#cf222e"


def _style(ax: Any) -> None:
    ax.spines[["top", "right"]].set_visible(False)
    ax.grid(axis="y", color="#eaeef2", linewidth=0.8)
    ax.set_axisbelow(True)
    ax.tick_params(axis="both", labelsize=8)


def serving_mpl(
    c: ServingComparison | ServingChart, *, figsize: Sequence[float] = (11.0, 7.0)
) -> Any:
    """Memory per device and tokens/s per chip against batch and context, as matplotlib.

    Args:
        c: the serving comparison, or its chart (:func:`serving_chart`).
        figsize: the figure size in inches.

    Returns:
        A ``matplotlib.figure.Figure`` with four axes in :data:`PANELS` order (memory and
        tokens/s against the batch, then against the context). Each strategy's line has
        ``gid="line"`` and its (escaped) strategy as label; the HBM per device is a dashed
        line ``gid="hbm"`` on the memory panels; each strategy's largest batch that fits is
        a marker ``gid="max-batch"`` on memory against batch. A strategy that was not
        compiled has no line; the figure's text (``gid="not-compiled"``, or the empty
        panels' words) says so and why.
    """
    Figure = require_matplotlib()
    chart = c if isinstance(c, ServingChart) else serving_chart(c)
    fig = Figure(figsize=tuple(figsize), layout="constrained")
    axes = fig.subplots(2, 2).flatten()
    for ax, (key, along, show, title) in zip(axes, PANELS, strict=True):
        lines = chart.lines(along)
        for line in lines:
            ys = line.bytes if show == "bytes" else line.tokens
            ax.plot(line.xs, ys, color=line.colour, marker="o", markersize=3, linewidth=1.6,
                    label=mpl_text(line.strategy), gid="line")  # fmt: skip
        xs = sorted({x for line in lines for x in line.xs})
        if show == "bytes":
            top = max([b for line in lines for b in line.bytes] + [chart.hbm_bytes, 1])
            if chart.hbm_bytes and xs:
                ax.plot([xs[0], xs[-1]], [chart.hbm_bytes] * 2, color=_HBM_COLOUR,
                        linestyle="--", linewidth=1.2, label="HBM", gid="hbm")  # fmt: skip
            set_byte_axis(ax, top)
            ax.set_ylabel("bytes per device", fontsize=9)
        else:
            ax.set_ylim(bottom=0)
            ax.set_ylabel("tokens/s per chip", fontsize=9)
        if key == "batch-bytes":
            for m in chart.max_batch:
                ax.plot([m.batch], [m.bytes], linestyle="none", marker="*", markersize=11,
                        color=m.colour, markeredgecolor="black", gid="max-batch")  # fmt: skip
                ax.annotate(f"{m.batch:,}", (m.batch, m.bytes), xytext=(4, 4),
                            textcoords="offset points", fontsize=7)  # fmt: skip
        if xs:
            ax.set_xscale("log", base=2)
            ticks = x_ticks(xs)
            ax.set_xticks(ticks, [f"{x:,}" for x in ticks], fontsize=7)
            ax.minorticks_off()
        else:
            ax.text(0.5, 0.5, mpl_text(fill(chart.empty_words, 50)), transform=ax.transAxes,
                    ha="center", va="center", color="#57606a", fontsize=8)  # fmt: skip
        ax.set_xlabel("batch" if along == "sweep" else "context", fontsize=9)
        ax.set_title(title, fontsize=10)
        _style(ax)
    if chart.batch:
        axes[0].legend(fontsize=8, frameon=False)
        if chart.not_compiled:
            words = f"no line ({chart.not_compiled_words})"
            fig.text(0.01, 0.0, mpl_text(fill(words, 160)), fontsize=7, color="#57606a",
                     va="bottom", gid="not-compiled")  # fmt: skip
    fig.suptitle(mpl_text(chart.title), x=0.01, ha="left", fontsize=11)
    return displayable(fig)
