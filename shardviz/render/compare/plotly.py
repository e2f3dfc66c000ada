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
from shardviz.render.compare.host import HOST_COLOR, HOST_LABEL, roles_str
from shardviz.render.compare.view import (
    ComparisonView,
    Scale,
    Series,
    StrategyView,
    Traffic,
    byte_scale,
    comparison_view,
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
    return scale_axis(byte_scale(top))


def scale_axis(scale: Scale) -> dict[str, Any]:
    """Linear y-axis settings with a byte scale's ticks and labels."""
    return {
        "tickmode": "array",
        "tickvals": list(scale.ticks),
        "ticktext": list(scale.labels),
        "range": [0, scale.ticks[-1] * 1.08],
        "rangemode": "tozero",
    }


def _estimates(fig: Any, view: ComparisonView, y_top: float) -> None:
    """Each estimate over its memory bar, and its target's HBM per device as a dashed line."""
    for i, s in enumerate(view.strategies):
        e = s.estimate
        if e is None:
            continue
        name = plotly_text(s.label)
        fig.add_annotation(
            x=name,
            y=s.memory_total,
            text=f"est. {e.at_least}<br>{e.fit_word}",
            hovertext=plotly_text(
                f"estimated on {e.target} (a lower bound, not a measurement): step "
                f"{e.at_least}, {e.bound}-bound; {e.fit_text}"
                if e.bounded
                else f"estimated on {e.target} (not a measurement): step {e.at_least}, "
                f"{e.bound}-bound; {e.fit_text}; {e.not_a_bound}"
            ),
            name="estimate",
            showarrow=False,
            yshift=30,
            font={"size": 9, "color": "#a40e26" if e.fit_word == "does not fit" else "#0550ae"},
            xref="x",
            yref="y",
        )
        tip = f"HBM per device on {plotly_text(e.target)}: {e.hbm_exact}"
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
                label={"text": f"HBM {e.hbm_str}", "font": {"size": 9},
                       "textposition": "end"},
            )  # fmt: skip
        else:
            fig.add_annotation(
                x=name,
                y=y_top,
                text=f"HBM ↑<br>{e.hbm_str}",
                hovertext=tip + " (above this scale)",
                name="hbm",
                showarrow=False,
                yanchor="top",
                font={"size": 9, "color": "#cf222e"},
                xref="x",
                yref="y",
            )


def comparison_figure(c: Comparison | ComparisonView) -> Any:
    """Memory per device and bytes moved per step for each strategy, as a plotly figure.

    Args:
        c: the comparison (live or hand-built), or its view (:func:`comparison_view`).

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
        bars are labelled ``fsdp @ TPU v5e 2x4``. When some strategy keeps bytes in host
        memory, a hatched ``host memory`` bar (offset group ``host``) stands beside each
        HBM stack.
    """
    go, make_subplots = require_plotly()
    view = c if isinstance(c, ComparisonView) else comparison_view(c)
    names = [plotly_text(s.label) for s in view.strategies]
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
    for bar in _memory_bars(go, view, names):
        fig.add_trace(bar, row=1, col=1)
    if view.host:
        fig.add_trace(_host_bar(go, view, names), row=1, col=1)
    for j, kind in enumerate(view.kinds):
        fig.add_trace(_kind_bar(go, view, names, kind, j), row=1, col=2)
    for j, axes in enumerate(view.axes):
        fig.add_trace(_axes_bar(go, view, names, axes, j), row=2, col=1)
    _peak_labels(fig, view, names)
    mem_axis = scale_axis(view.memory_scale)
    if view.has_estimates:
        mem_axis["range"][1] *= 1.3  # room for the estimates over the bars
        _estimates(fig, view, mem_axis["range"][1])
    fig.update_yaxes(mem_axis, title_text="bytes per device", row=1, col=1)
    fig.update_yaxes(scale_axis(view.kinds_scale), title_text="bytes moved per device", row=1,
                     col=2)  # fmt: skip
    fig.update_yaxes(scale_axis(view.axes_scale), title_text="bytes moved per device", row=2,
                     col=1)  # fmt: skip
    fig.update_xaxes(type="category")
    _lay_out(fig, view)
    return fig


def _memory_bars(go: Any, view: ComparisonView, names: list[str]) -> list[Any]:
    """One bar trace per memory component, stacked in offset group ``memory``."""
    bars = []
    for i, comp in enumerate(view.components):
        parts = [s.memory[i] for s in view.strategies]
        hover = [
            [plotly_text(s.strategy), p.exact, s.peak_exact]
            for s, p in zip(view.strategies, parts, strict=True)
        ]
        bars.append(
            go.Bar(
                name=comp.label,
                x=names,
                y=[p.bytes for p in parts],
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


def _host_bar(go: Any, view: ComparisonView, names: list[str]) -> Any:
    """Host memory per device, a bar beside each HBM stack (offset group ``host``): not
    HBM, so not under the peak or the HBM line."""
    hover = [[plotly_text(h.label), h.host_exact, plotly_text(roles_str(h))] for h in view.host]
    return go.Bar(
        name=HOST_LABEL,
        x=names,
        y=[h.host for h in view.host],
        marker={"color": HOST_COLOR, "pattern": {"shape": "/"}},
        offsetgroup="host",
        legend="legend",
        customdata=hover,
        hovertemplate=(
            f"<b>%{{customdata[0]}}</b> · {HOST_LABEL}<br>%{{customdata[1]}}<br>"
            "%{customdata[2]}<extra></extra>"
        ),
    )


def _hover(s: StrategyView, label: str, t: Traffic, split: list[str]) -> list[str]:
    """A transfer bar's hover data: the strategy, the series, the count, the exact bytes and
    the other split (``none`` when empty)."""
    return [plotly_text(s.strategy), label, str(t.count), t.moved_exact,
            "<br>".join(split) or "none"]  # fmt: skip


def _kind_bar(go: Any, view: ComparisonView, names: list[str], kind: Series, j: int) -> Any:
    """The bar trace of one collective kind (its own offset group, side by side with the
    others), with the split by mesh axes in the hover text."""
    hover = []
    for s in view.strategies:
        t = s.by_kind[j]
        split = [f"{plotly_text(x.axes_label)}: ×{x.count} · {x.moved_str}" for x in s.split(t)]
        hover.append(_hover(s, plotly_text(kind.label), t, split))
    return go.Bar(
        name=plotly_text(kind.label),
        x=names,
        y=[s.by_kind[j].moved for s in view.strategies],
        marker={"color": kind.color},
        offsetgroup=kind.key,
        legend="legend2",
        customdata=hover,
        hovertemplate=(
            "<b>%{customdata[0]}</b> · %{customdata[1]}<br>%{customdata[2]} per step · "
            "moved %{customdata[3]}<br>by mesh axes:<br>%{customdata[4]}<extra></extra>"
        ),
    )


def _axes_bar(go: Any, view: ComparisonView, names: list[str], axes: Series, j: int) -> Any:
    """The bar trace of one tuple of mesh axes (the lower panel), its own offset group, with
    the split by kind in the hover text."""
    label = plotly_text(axes.label)
    hover = []
    for s in view.strategies:
        t = s.by_axes[j]
        split = [f"{plotly_text(x.kind)}: ×{x.count} · {x.moved_str}" for x in s.split(t)]
        hover.append(_hover(s, label, t, split))
    return go.Bar(
        name=label,
        x=names,
        y=[s.by_axes[j].moved for s in view.strategies],
        marker={"color": axes.color},
        offsetgroup=f"axes {label}",
        legend="legend3",
        customdata=hover,
        hovertemplate=(
            "<b>%{customdata[0]}</b> · over %{customdata[1]}<br>%{customdata[2]} per "
            "step · moved %{customdata[3]}<br>by kind:<br>%{customdata[4]}<extra></extra>"
        ),
    )


def _peak_labels(fig: Any, view: ComparisonView, names: list[str]) -> None:
    """Each strategy's peak written over its memory bar (annotations named ``peak``)."""
    for s, name in zip(view.strategies, names, strict=True):
        fig.add_annotation(
            x=name,
            y=s.memory_total,
            text=s.peak_str,
            hovertext=f"peak {s.peak_exact}",
            name="peak",
            showarrow=False,
            yshift=10,
            font={"size": 11},
            xref="x",
            yref="y",
        )


def _lay_out(fig: Any, view: ComparisonView) -> None:
    """The title, the bar spacing and each panel's legend to its right."""
    fig.update_layout(
        barmode="stack",
        bargap=0.3,
        bargroupgap=0.05,
        template="plotly_white",
        height=760,
        margin={"t": 90, "b": 50, "l": 70, "r": 150},
        title={"text": plotly_text(view.title), "x": 0.01},
        # Each panel's legend to its right: the first in the gap between the panels.
        legend={"x": 0.37, "y": 1.0, "xanchor": "left", "yanchor": "top",
                "title": {"text": "memory"}, "traceorder": "reversed"},
        legend2={"x": 1.01, "y": 1.0, "xanchor": "left", "yanchor": "top",
                 "title": {"text": "collective"}, "traceorder": "normal"},
        legend3={"x": 1.01, "y": fig.layout.yaxis3.domain[1], "xanchor": "left", "yanchor": "top",
                 "title": {"text": "mesh axes"}, "traceorder": "normal"},
        hoverlabel={"align": "left"},
    )  # fmt: skip
