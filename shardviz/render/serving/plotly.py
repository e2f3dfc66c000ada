"""A :class:`~shardviz.model.serving.ServingComparison` as an interactive plotly figure.

Four panels: bytes per device (weights + KV cache + working) and tokens/s per chip against
the batch (log2 x), then the same against the context; one line per strategy, the HBM per
device as a dashed line on the memory panels, and on the memory-against-batch panel a marker
at each strategy's largest batch that fits. Hover text gives exact bytes. The lines are
:func:`~shardviz.render.serving.view.serving_chart`'s, the ones the HTML chart draws.
"""

from __future__ import annotations

from typing import Any

from shardviz.model.serving import ServingComparison
from shardviz.model.units import format_bytes
from shardviz.render.compare.plotly import byte_axis, plotly_text, require_plotly
from shardviz.render.serving.view import (
    PANELS,
    ServingChart,
    SweepLine,
    serving_chart,
    x_ticks,
)

__all__ = ["serving_figure"]

_HBM_COLOUR = "#cf222e"


def _exact(n: int) -> str:
    """``1.5 MiB (1,572,864 B)``."""
    return f"{format_bytes(n)} ({n:,} B)"


def _line_trace(go: Any, line: SweepLine, key: str, show: str, x_word: str, first: bool) -> Any:
    """One strategy's line on one panel (``show``: ``"bytes"`` or ``"tokens"``); ``meta``
    names the panel and the role (``line``) for tests and callers."""
    name = plotly_text(line.strategy)
    if show == "bytes":
        ys: list[float] = list(line.bytes)
        hover = [[_exact(b)] for b in line.bytes]
        what = "%{customdata[0]} per device"
    else:
        ys = list(line.tokens)
        hover = [[f"{t:,.1f}"] for t in line.tokens]
        what = "%{customdata[0]} tokens/s per chip"
    return go.Scatter(
        x=list(line.xs),
        y=ys,
        mode="lines+markers",
        name=name,
        legendgroup=name,
        showlegend=first,
        line={"color": line.colour, "width": 2},
        marker={"size": 5},
        customdata=hover,
        meta={"panel": key, "role": "line", "strategy": name},
        hovertemplate=f"<b>{name}</b><br>{x_word} %{{x}}: {what}<extra></extra>",
    )


def _hbm_trace(go: Any, chart: ServingChart, xs: list[int], key: str, first: bool) -> Any:
    """The HBM per device as a dashed line across a memory panel."""
    return go.Scatter(
        x=[min(xs), max(xs)],
        y=[chart.hbm_bytes, chart.hbm_bytes],
        mode="lines",
        name=f"HBM {format_bytes(chart.hbm_bytes)}",
        legendgroup="hbm",
        showlegend=first,
        line={"color": _HBM_COLOUR, "width": 1.5, "dash": "dash"},
        meta={"panel": key, "role": "hbm", "strategy": ""},
        hovertemplate=f"HBM per device: {_exact(chart.hbm_bytes)}<extra></extra>",
    )


def _max_batch_traces(go: Any, chart: ServingChart) -> list[Any]:
    """A marker per strategy at the largest batch that fits, on memory against batch."""
    out = []
    for m in chart.max_batch:
        name = plotly_text(m.strategy)
        out.append(
            go.Scatter(
                x=[m.batch],
                y=[m.bytes],
                mode="markers",
                name=f"{name}: largest batch {m.batch:,}",
                legendgroup=name,
                showlegend=False,
                marker={"color": m.colour, "size": 11, "symbol": "star",
                        "line": {"color": "#000000", "width": 1}},
                meta={"panel": "batch-bytes", "role": "max-batch", "strategy": name},
                hovertemplate=(
                    f"<b>{name}</b><br>largest batch that fits: {m.batch:,}<br>"
                    f"{_exact(m.bytes)} per device<extra></extra>"
                ),
            )
        )  # fmt: skip
    return out


def _log2_axis(xs: list[int]) -> dict[str, Any]:
    """A log x-axis with ticks at the powers of two swept (:func:`x_ticks`)."""
    ticks = x_ticks(xs)
    return {"type": "log", "tickmode": "array", "tickvals": ticks,
            "ticktext": [f"{x:,}" for x in ticks]}  # fmt: skip


def serving_figure(c: ServingComparison | ServingChart) -> Any:
    """Memory per device and tokens/s per chip against batch and context, as plotly.

    Args:
        c: the serving comparison, or its chart (:func:`serving_chart`).

    Returns:
        A ``plotly.graph_objects.Figure`` of four subplots (memory and tokens/s against the
        batch on top, against the context below). Each trace's ``meta`` says its panel
        (``batch-bytes``, ``batch-tokens``, ``context-bytes``, ``context-tokens``), its role
        (``line``: a strategy's sweep; ``hbm``: the dashed HBM per device; ``max-batch``: the
        largest batch that fits) and its strategy (escaped). Without sweeps (no target
        named) the figure says so; a strategy that was not compiled has no line, and an
        annotation says so and why.
    """
    go, make_subplots = require_plotly()
    chart = c if isinstance(c, ServingChart) else serving_chart(c)
    fig = make_subplots(rows=2, cols=2, horizontal_spacing=0.14, vertical_spacing=0.16,
                        subplot_titles=[title for *_, title in PANELS])  # fmt: skip
    for i, (key, along, show, _) in enumerate(PANELS):
        row, col = i // 2 + 1, i % 2 + 1
        lines = chart.lines(along)
        x_word = "batch" if along == "sweep" else "context"
        for line in lines:
            fig.add_trace(_line_trace(go, line, key, show, x_word, i == 0), row=row, col=col)
        xs = [x for line in lines for x in line.xs]
        if show == "bytes" and chart.hbm_bytes and xs:
            fig.add_trace(_hbm_trace(go, chart, xs, key, i == 0), row=row, col=col)
        if key == "batch-bytes":
            for t in _max_batch_traces(go, chart):
                fig.add_trace(t, row=row, col=col)
        if xs:
            fig.update_xaxes(_log2_axis(xs), title_text=x_word, row=row, col=col)
        if show == "bytes":
            tops = [b for line in lines for b in line.bytes] + [chart.hbm_bytes]
            fig.update_yaxes(byte_axis(max(tops)), title_text="bytes per device", row=row,
                             col=col)  # fmt: skip
        else:
            fig.update_yaxes(title_text="tokens/s per chip", rangemode="tozero", row=row,
                             col=col)  # fmt: skip
    if not chart.batch and not chart.context:
        fig.add_annotation(text=plotly_text(chart.empty_words), xref="paper", yref="paper",
                           x=0.5, y=0.5, showarrow=False, name="empty")  # fmt: skip
    elif chart.not_compiled:
        fig.add_annotation(text=plotly_text(f"no line ({chart.not_compiled_words})"),
                           xref="paper", yref="paper", x=0.0, y=-0.09, showarrow=False,
                           xanchor="left", font={"size": 10}, name="not-compiled")  # fmt: skip
    fig.update_layout(
        template="plotly_white",
        height=720,
        margin={"t": 90, "b": 50, "l": 80, "r": 160},
        title={"text": plotly_text(chart.title), "x": 0.01},
        legend={"x": 1.01, "y": 1.0, "xanchor": "left", "yanchor": "top",
                "title": {"text": "strategy"}},
        hoverlabel={"align": "left"},
    )  # fmt: skip
    return fig
