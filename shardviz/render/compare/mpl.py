"""A :class:`~shardviz.model.Comparison` as a static matplotlib figure, for slides.

The same two panels as :mod:`.plotly`: memory per device stacked by component, and
bytes moved per step by collective kind. Built on ``matplotlib.figure.Figure`` directly (no
pyplot, no global state), so it works under any backend, Agg included; matplotlib is
imported when a figure is asked for.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from shardviz.model.compare import Comparison
from shardviz.render.compare.host import HOST_COLOR, HOST_LABEL
from shardviz.render.compare.view import ComparisonView, Scale, byte_scale, comparison_view


def require_matplotlib() -> Any:
    """The ``matplotlib.figure.Figure`` class, or an ImportError saying how to install it."""
    try:
        from matplotlib.figure import Figure

        return Figure
    except ImportError as err:  # pragma: no cover - matplotlib is a dependency
        raise ImportError(
            "shardviz: matplotlib figures need matplotlib; install it with "
            "`pip install matplotlib`, or use the text, HTML or plotly views"
        ) from err


def displayable(fig: Any) -> Any:
    """Let a notebook show a pyplot-free Figure as a picture without ``%matplotlib inline``.

    A ``matplotlib.figure.Figure`` made without pyplot has no display hook of its own: IPython
    would print ``<Figure size ...>``. The figure gets a ``_repr_png_`` that renders it.
    """

    def _repr_png_() -> bytes:
        import io

        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=110)
        return buf.getvalue()

    fig._repr_png_ = _repr_png_
    return fig


def mpl_text(value: object) -> str:
    """A model string shown literally by matplotlib (``$`` would start mathtext)."""
    return str(value).replace("$", r"\$")


def set_byte_axis(ax: Any, top: int) -> None:
    """Linear y ticks in binary units, from 0 to just above ``top``."""
    set_scale(ax, byte_scale(top))


def set_scale(ax: Any, scale: Scale) -> None:
    """Linear y ticks at a byte scale's ticks, labelled, up to just above the last."""
    ax.set_yticks(list(scale.ticks), list(scale.labels))
    ax.set_ylim(0, scale.ticks[-1] * 1.08)


def _style(ax: Any) -> None:
    ax.spines[["top", "right"]].set_visible(False)
    ax.grid(axis="y", color="#eaeef2", linewidth=0.8)
    ax.set_axisbelow(True)
    ax.tick_params(axis="both", labelsize=9)


def _names(view: ComparisonView) -> list[str]:
    """Bar labels: the strategy, and its target on a second line when targets differ."""
    return [mpl_text(s.label.replace(" @ ", "\n@ ")) for s in view.strategies]


def _estimates(ax: Any, view: ComparisonView, xs: list[int], y_top: float) -> None:
    """Each estimate over its memory bar (``gid="estimate"``), and its target's HBM per device
    as a dashed line over the bar (``gid="hbm"``), or, far above the bars, a note at the top
    of the panel (``gid="hbm-off"``)."""
    for x, s in zip(xs, view.strategies, strict=True):
        e = s.estimate
        if e is None:
            continue
        ax.annotate(
            f"est. {e.at_least}\n{e.fit_word}",
            (x, s.memory_total),
            xytext=(0, 14),
            textcoords="offset points",
            ha="center",
            va="bottom",
            fontsize=6.5,
            color="#a40e26" if e.fit_word == "does not fit" else "#0550ae",
            gid="estimate",
        )
        if e.hbm_bytes <= y_top:
            ax.hlines(e.hbm_bytes, x - 0.42, x + 0.42, colors="#cf222e", linestyles="dashed",
                      linewidth=1.5, gid="hbm")  # fmt: skip
        else:
            ax.text(x, y_top, f"HBM ↑\n{e.hbm_str}", ha="center", va="top",
                    fontsize=6.5, color="#cf222e", gid="hbm-off")  # fmt: skip


def comparison_mpl(
    c: Comparison | ComparisonView, *, figsize: Sequence[float] = (12.0, 4.6)
) -> Any:
    """Memory per device and bytes moved per step for each strategy, as a matplotlib figure.

    Args:
        c: the comparison (live or hand-built), or its view (:func:`comparison_view`).
        figsize: the figure size in inches.

    Returns:
        A ``matplotlib.figure.Figure`` with two axes: stacked bars of memory per device by
        component (one bar per strategy, heights in bytes), and grouped bars of bytes moved
        per device per step by collective kind (one bar per strategy and kind, zero where a
        strategy does not use the kind). A strategy with an estimate gets ``est. ≥ …`` and
        whether it fits over its memory bar (``gid="estimate"``) and its target's HBM per device
        as a dashed line (``gid="hbm"``; far above the bars, a note ``gid="hbm-off"``). Save it
        with ``fig.savefig("compare.png", dpi=200)``.
    """
    Figure = require_matplotlib()
    view = c if isinstance(c, ComparisonView) else comparison_view(c)
    fig = Figure(figsize=tuple(figsize), layout="constrained")
    ax_mem, ax_moved = fig.subplots(1, 2)
    names = _names(view)
    xs = list(range(len(view.strategies)))
    _memory_panel(ax_mem, view, names, xs)
    _moved_panel(ax_moved, view, names, xs)
    fig.suptitle(mpl_text(view.title), x=0.01, ha="left", fontsize=12)
    return displayable(fig)


def _memory_panel(ax: Any, view: ComparisonView, names: list[str], xs: list[int]) -> None:
    """Stacked bars of memory per device by component, the peak written over each bar, and
    the estimates (with room made for them above the bars)."""
    bottoms = [0] * len(view.strategies)
    for i, comp in enumerate(view.components):
        heights = [s.memory[i].bytes for s in view.strategies]
        ax.bar(xs, heights, 0.6, bottom=bottoms, color=comp.color, label=comp.label,
               edgecolor="white", linewidth=0.6)  # fmt: skip
        bottoms = [b + h for b, h in zip(bottoms, heights, strict=True)]
    if view.host:  # beside each HBM stack, not on it: host memory is not under the peak
        ax.bar([x + 0.38 for x in xs], [h.host for h in view.host], 0.12, color=HOST_COLOR,
               hatch="//", label=HOST_LABEL, edgecolor="white", linewidth=0.6, gid="host")  # fmt: skip
    for x, s in zip(xs, view.strategies, strict=True):
        ax.annotate(
            s.peak_str,
            (x, s.memory_total),
            xytext=(0, 3),
            textcoords="offset points",
            ha="center",
            va="bottom",
            fontsize=8 if len(xs) <= 4 else 7,
            gid="peak",
        )
    ax.set_xticks(xs, names)
    set_scale(ax, view.memory_scale)
    if view.has_estimates:
        bottom, top = ax.get_ylim()
        ax.set_ylim(bottom, top * 1.25)  # room for the estimates over the bars
        _estimates(ax, view, xs, top * 1.25)
    ax.set_ylabel("bytes per device")
    ax.set_title("Memory per device by component, peak on top", fontsize=11)
    _style(ax)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False,
              reverse=True)  # fmt: skip


def _moved_panel(ax: Any, view: ComparisonView, names: list[str], xs: list[int]) -> None:
    """Grouped bars of bytes moved per device per step, one per strategy and kind."""
    kinds = view.kinds
    width = 0.8 / max(1, len(kinds))
    for j, kind in enumerate(kinds):
        offs = [x - 0.4 + (j + 0.5) * width for x in xs]
        heights = [s.by_kind[j].moved for s in view.strategies]
        ax.bar(offs, heights, width * 0.92, color=kind.color, label=mpl_text(kind.label))
    ax.set_xticks(xs, names)
    set_scale(ax, view.kinds_scale)
    ax.set_ylabel("bytes moved per device")
    ax.set_title("Bytes moved per step, by kind", fontsize=11)
    _style(ax)
    if kinds:
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False)
    else:
        ax.text(0.5, 0.5, "no collectives", transform=ax.transAxes, ha="center",
                color="#57606a")  # fmt: skip
