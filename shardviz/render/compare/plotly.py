"""A :class:`~shardviz.model.Comparison` as an interactive plotly figure.

Three panels: memory per device stacked by component (one bar per strategy), bytes moved per
step by collective kind, and under both, bytes moved per step by mesh axes (grouped bars per
strategy). Hover text gives exact bytes. Only
``plotly.graph_objects`` is used (plotly express would need pandas). Plotly is imported when
a figure is asked for, so the text and HTML views never need it.
"""

from __future__ import annotations

import html
from typing import Any

from shardviz.model.compare import Comparison
from shardviz.model.units import format_bytes, format_seconds
from shardviz.render.compare.html import kind_color
from shardviz.render.compare.view import (
    axes_color,
    axes_count,
    axes_label,
    axes_moved,
    byte_ticks,
    comparison_axes,
    comparison_kinds,
    estimate_of,
    fit_word,
    format_count,
    kind_count,
    kind_moved,
    kind_rows,
    memory_chart_top,
    memory_parts,
    memory_total,
    shown_components,
)


def require_plotly() -> tuple[Any, Any]:
    """``(plotly.graph_objects, plotly.subplots.make_subplots)``, or an ImportError that says
    how to install plotly."""
    try:
        import plotly.graph_objects as go
        from plotly.subplots import make_subplots
    except ImportError as err:  # pragma: no cover - plotly is a dependency; kept for slim installs
        raise ImportError(
            "shardviz: plotly figures need plotly; install it with `pip install plotly`, or use "
            "the text, HTML or matplotlib views"
        ) from err
    return go, make_subplots


def plotly_text(value: object) -> str:
    """A model string made safe for plotly labels and hover text, which read a little HTML."""
    return html.escape(str(value), quote=False)


def byte_axis(top: int) -> dict[str, Any]:
    """Linear y-axis settings with ticks in binary units (``0``, ``2 MiB``, ``4 MiB``…)."""
    ticks = byte_ticks(top)
    return {
        "tickmode": "array",
        "tickvals": ticks,
        "ticktext": ["0" if v == 0 else format_bytes(v) for v in ticks],
        "range": [0, ticks[-1] * 1.08],
        "rangemode": "tozero",
    }


def _estimates(fig: Any, c: Comparison, names: list[str], y_top: float) -> None:
    """Each estimate over its memory bar, and its target's HBM per device as a dashed line."""
    for i, (r, name) in enumerate(zip(c.results, names, strict=True)):
        e = estimate_of(r)
        if e is None:
            continue
        word = fit_word(r)
        fig.add_annotation(
            x=name,
            y=memory_total(r.memory),
            text=f"est. ≥ {format_seconds(e.step_seconds)}<br>{word}",
            hovertext=plotly_text(
                f"estimated on {e.target} (a lower bound, not a measurement): step ≥ "
                f"{format_seconds(e.step_seconds)}, {e.bound}-bound; {e.fit_text}"
            ),
            name="estimate",
            showarrow=False,
            yshift=30,
            font={"size": 9, "color": "#a40e26" if word == "does not fit" else "#0550ae"},
            xref="x",
            yref="y",
        )
        tip = f"HBM per device on {plotly_text(e.target)}: {format_bytes(e.hbm_bytes, exact=True)}"
        if e.hbm_bytes <= y_top:
            fig.add_shape(
                type="line",
                name="hbm",
                x0=i - 0.45,
                x1=i + 0.45,
                y0=e.hbm_bytes,
                y1=e.hbm_bytes,
                xref="x",
                yref="y",
                line={"color": "#cf222e", "width": 2, "dash": "dash"},
                label={"text": f"HBM {format_bytes(e.hbm_bytes)}", "font": {"size": 9},
                       "textposition": "end"},
            )  # fmt: skip
        else:
            fig.add_annotation(
                x=name,
                y=y_top,
                text=f"HBM ↑<br>{format_bytes(e.hbm_bytes)}",
                hovertext=tip + " (above this scale)",
                name="hbm",
                showarrow=False,
                yanchor="top",
                font={"size": 9, "color": "#cf222e"},
                xref="x",
                yref="y",
            )


def comparison_figure(c: Comparison) -> Any:
    """Memory per device and bytes moved per step for each strategy, as a plotly figure.

    Args:
        c: the comparison (live or hand-built).

    Returns:
        A ``plotly.graph_objects.Figure`` with three subplots: on the top left one stacked
        bar per strategy (a trace per memory component, in bytes, all in offset group
        ``memory``), on the top right grouped bars (a trace per collective kind, each its own
        offset group) of bytes moved per device per step, and across the bottom the same
        bytes grouped by mesh axes (a trace per tuple of axes, legend ``legend3``).
        ``layout.barmode`` is ``"stack"``; the distinct offset groups put the transfer
        panels' bars side by side. A strategy with an estimate gets an
        annotation named ``estimate`` over its memory bar (``est. ≥ 49.9 µs`` with its bound,
        and whether its peak fits the target's HBM) and a dashed shape named ``hbm`` at its
        target's HBM per device (on the scale when near the bars; far above them, an
        annotation named ``hbm`` at the panel's top says so instead). On several targets,
        bars are labelled ``fsdp @ TPU v5e 2x4``.
    """
    go, make_subplots = require_plotly()
    names = [plotly_text(x) for x in c.labels]
    kinds = comparison_kinds(c)
    fig = make_subplots(
        rows=2,
        cols=2,
        horizontal_spacing=0.28,
        vertical_spacing=0.2,
        row_heights=[0.6, 0.4],
        specs=[[{}, {}], [{"colspan": 2}, None]],
        subplot_titles=(
            "Memory per device by component, peak on top",
            "Bytes moved per step, by kind",
            "Bytes moved per step, by mesh axes: which axis carries the traffic",
        ),
    )
    for bar in _memory_bars(go, c, names):
        fig.add_trace(bar, row=1, col=1)
    for bar in _moved_bars(go, c, names, kinds):
        fig.add_trace(bar, row=1, col=2)
    all_axes = comparison_axes(c)
    for bar in _axes_bars(go, c, names, all_axes):
        fig.add_trace(bar, row=2, col=1)
    top_mem = memory_chart_top(c)
    top_moved = max((kind_moved(r, k) for r in c.results for k in kinds), default=1)
    top_axes = max((axes_moved(r, a) for r in c.results for a in all_axes), default=1)
    _peak_labels(fig, c, names)
    mem_axis = byte_axis(top_mem)
    if any(estimate_of(r) is not None for r in c.results):
        mem_axis["range"][1] *= 1.3  # room for the estimates over the bars
        _estimates(fig, c, names, mem_axis["range"][1])
    fig.update_yaxes(mem_axis, title_text="bytes per device", row=1, col=1)
    fig.update_yaxes(byte_axis(top_moved), title_text="bytes moved per device", row=1, col=2)
    fig.update_yaxes(byte_axis(top_axes), title_text="bytes moved per device", row=2, col=1)
    fig.update_xaxes(type="category")
    _lay_out(fig, c)
    return fig


def _memory_bars(go: Any, c: Comparison, names: list[str]) -> list[Any]:
    """One bar trace per memory component, stacked in offset group ``memory``."""
    bars = []
    for comp in shown_components(c):
        ys, hover = [], []
        for r in c.results:
            b = dict(memory_parts(r.memory))[comp]
            ys.append(b)
            hover.append(
                [
                    plotly_text(r.strategy),
                    format_bytes(b, exact=True),
                    format_bytes(r.memory.peak, exact=True),
                ]
            )
        bars.append(
            go.Bar(
                name=comp.label,
                x=names,
                y=ys,
                marker={"color": comp.color, "line": {"color": "#ffffff", "width": 0.5}},
                offsetgroup="memory",
                legend="legend",
                customdata=hover,
                hovertemplate=(
                    f"<b>%{{customdata[0]}}</b> · {plotly_text(comp.label)}<br>"
                    "%{customdata[1]}<br>peak %{customdata[2]}<extra></extra>"
                ),
            )
        )
    return bars


def _moved_bars(go: Any, c: Comparison, names: list[str], kinds: list[str]) -> list[Any]:
    """One bar trace per collective kind, each its own offset group (side by side), with the
    split by mesh axes in the hover text."""
    bars = []
    for kind in kinds:
        ys, hover = [], []
        for r in c.results:
            b = kind_moved(r, kind)
            n = kind_count(r, kind)
            rows = {kr.kind: kr for kr in kind_rows(r)}
            axes = (
                "<br>".join(
                    f"{plotly_text(axes_label(a))}: ×{k} · {format_bytes(m)}"
                    for a, k, m in rows[kind].by_axes
                )
                if kind in rows
                else "none"
            )
            ys.append(b)
            hover.append(
                [
                    plotly_text(r.strategy),
                    plotly_text(kind),
                    str(n),
                    format_bytes(b, exact=True),
                    axes,
                ]  # fmt: skip
            )
        bars.append(
            go.Bar(
                name=plotly_text(kind),
                x=names,
                y=ys,
                marker={"color": kind_color(kind)},
                offsetgroup=kind,
                legend="legend2",
                customdata=hover,
                hovertemplate=(
                    "<b>%{customdata[0]}</b> · %{customdata[1]}<br>%{customdata[2]} per step · "
                    "moved %{customdata[3]}<br>by mesh axes:<br>%{customdata[4]}<extra></extra>"
                ),
            )
        )
    return bars


def _axes_bars(
    go: Any, c: Comparison, names: list[str], all_axes: list[tuple[str, ...]]
) -> list[Any]:
    """One bar trace per tuple of mesh axes (the lower panel), each its own offset group,
    with the split by kind in the hover text."""
    bars = []
    for axes in all_axes:
        label = plotly_text(axes_label(axes))
        ys, hover = [], []
        for r in c.results:
            kinds = [
                f"{plotly_text(kr.kind)}: ×{n} · {format_bytes(m)}"
                for kr in kind_rows(r)
                for a, n, m in kr.by_axes
                if a == axes
            ]
            ys.append(axes_moved(r, axes))
            hover.append(
                [
                    plotly_text(r.strategy),
                    label,
                    str(axes_count(r, axes)),
                    format_bytes(axes_moved(r, axes), exact=True),
                    "<br>".join(kinds) or "none",
                ]
            )
        bars.append(
            go.Bar(
                name=label,
                x=names,
                y=ys,
                marker={"color": axes_color(c, axes)},
                offsetgroup=f"axes {label}",
                legend="legend3",
                customdata=hover,
                hovertemplate=(
                    "<b>%{customdata[0]}</b> · over %{customdata[1]}<br>%{customdata[2]} per "
                    "step · moved %{customdata[3]}<br>by kind:<br>%{customdata[4]}<extra></extra>"
                ),
            )
        )
    return bars


def _peak_labels(fig: Any, c: Comparison, names: list[str]) -> None:
    """Each strategy's peak written over its memory bar (annotations named ``peak``)."""
    for r, name in zip(c.results, names, strict=True):
        fig.add_annotation(
            x=name,
            y=memory_total(r.memory),
            text=format_bytes(r.memory.peak),
            hovertext=f"peak {format_bytes(r.memory.peak, exact=True)}",
            name="peak",
            showarrow=False,
            yshift=10,
            font={"size": 11},
            xref="x",
            yref="y",
        )


def _lay_out(fig: Any, c: Comparison) -> None:
    """The title, the bar spacing and each panel's legend to its right."""
    n = len(c.results)
    fig.update_layout(
        barmode="stack",
        bargap=0.3,
        bargroupgap=0.05,
        template="plotly_white",
        height=760,
        margin={"t": 90, "b": 50, "l": 70, "r": 150},
        title={
            "text": (
                f"{plotly_text(c.model)} · {format_count(c.num_params)} parameters · "
                f"{plotly_text(c.param_dtype)} · {n} strateg{'ies' if n != 1 else 'y'}"
            ),
            "x": 0.01,
        },
        # Each panel's legend to its right: the first in the gap between the panels.
        legend={"x": 0.37, "y": 1.0, "xanchor": "left", "yanchor": "top",
                "title": {"text": "memory"}, "traceorder": "reversed"},
        legend2={"x": 1.01, "y": 1.0, "xanchor": "left", "yanchor": "top",
                 "title": {"text": "collective"}, "traceorder": "normal"},
        legend3={"x": 1.01, "y": fig.layout.yaxis3.domain[1], "xanchor": "left", "yanchor": "top",
                 "title": {"text": "mesh axes"}, "traceorder": "normal"},
        hoverlabel={"align": "left"},
    )  # fmt: skip
