"""The comparison's plotly figure: a stacked memory panel and a grouped transfer panel whose
values are the model's bytes."""

from __future__ import annotations

import pytest

from shardviz.render.compare.view import (
    axes_moved,
    comparison_axes,
    comparison_kinds,
    kind_moved,
    memory_parts,
    shown_components,
)

from .compare_fixtures import NASTY, comparison, comparison_edges, comparison_nasty

go = pytest.importorskip("plotly.graph_objects")

from shardviz.render.compare.plotly import comparison_figure  # noqa: E402


def test_traces_one_per_component_then_one_per_kind_then_one_per_axes() -> None:
    c = comparison()
    fig = comparison_figure(c)
    assert isinstance(fig, go.Figure)
    comps = shown_components(c)
    kinds = comparison_kinds(c)
    axes = comparison_axes(c)
    assert len(fig.data) == len(comps) + len(kinds) + len(axes)
    assert all(t.type == "bar" for t in fig.data)
    assert [t.name for t in fig.data] == [x.label for x in comps] + kinds + [
        "data",  # single axes in mesh order, then several together
        "model",
        "data,model",
    ]
    assert fig.layout.barmode == "stack"


def test_memory_panel_is_stacked_with_the_models_bytes() -> None:
    c = comparison()
    fig = comparison_figure(c)
    comps = shown_components(c)
    names = [r.strategy for r in c.results]
    for comp, trace in zip(comps, fig.data[: len(comps)], strict=True):
        assert trace.xaxis == "x" and trace.yaxis == "y"
        assert trace.offsetgroup == "memory"  # one group: the components stack
        assert list(trace.x) == names
        assert list(trace.y) == [dict(memory_parts(r.memory))[comp] for r in c.results]
        assert trace.marker.color == comp.color
        # Hover gives exact bytes.
        exact = [row[1] for row in trace.customdata]
        assert all(s.endswith(" B") or s.endswith(" B)") for s in exact)
    dp_params = fig.data[0].customdata[0][1]
    assert dp_params == "3 MiB (3,145,728 B)"


def test_transfer_panel_is_grouped_with_the_models_bytes() -> None:
    c = comparison()
    fig = comparison_figure(c)
    kinds = comparison_kinds(c)
    traces = fig.data[-len(kinds) - len(comparison_axes(c)) : -len(comparison_axes(c))]
    assert len({t.offsetgroup for t in traces}) == len(kinds)  # distinct groups: side by side
    for kind, trace in zip(kinds, traces, strict=True):
        assert trace.xaxis == "x2" and trace.yaxis == "y2"
        assert list(trace.y) == [kind_moved(r, kind) for r in c.results]
        assert trace.legend == "legend2"


def test_axes_panel_splits_the_bytes_moved_by_mesh_axes() -> None:
    c = comparison()
    fig = comparison_figure(c)
    all_axes = comparison_axes(c)
    traces = fig.data[-len(all_axes) :]
    assert len({t.offsetgroup for t in traces}) == len(all_axes)
    for axes, trace in zip(all_axes, traces, strict=True):
        assert trace.xaxis == "x3" and trace.yaxis == "y3" and trace.legend == "legend3"
        assert list(trace.y) == [axes_moved(r, axes) for r in c.results]
    # Every strategy's bytes by axes add up to its bytes by kind.
    for i, r in enumerate(c.results):
        by_axes = sum(t.y[i] for t in traces)
        assert by_axes == sum(kind_moved(r, k) for k in comparison_kinds(c)) > 0
    tp = {t.name: t.y[2] for t in traces}
    assert tp == {"model": 48 * 1024, "data": 768 * 1024, "data,model": 7}
    # The lower panel spans the figure; its legend sits beside it, not over the top panels.
    assert fig.layout.xaxis3.domain == (0.0, 1.0)
    assert fig.layout.legend3.y == fig.layout.yaxis3.domain[1] < fig.layout.yaxis.domain[0]


def test_byte_ticks_and_peak_labels() -> None:
    c = comparison()
    fig = comparison_figure(c)
    assert fig.layout.yaxis.ticktext[0] == "0"
    assert all(t.endswith("B") for t in fig.layout.yaxis.ticktext[1:])
    assert max(fig.layout.yaxis.tickvals) >= max(r.memory.peak for r in c.results)
    peaks = [a.text for a in fig.layout.annotations if a.name == "peak"]
    assert peaks == ["12.2 MiB", "4.7 MiB", "3.2 MiB"]


def test_figure_methods_and_edge_cases() -> None:
    c = comparison()
    assert len(c.figure().data) == len(comparison_figure(c).data)
    fig = comparison_figure(comparison_edges())
    assert fig.data[-1].y[0] == 0  # the strategy without collectives
    empty = type(c)(model="m", num_params=1, param_dtype="f32", results=())
    assert len(comparison_figure(empty).data) == len(shown_components(empty))


def test_hostile_strings_are_escaped_for_plotly() -> None:
    fig = comparison_figure(comparison_nasty())
    blob = fig.to_json()
    assert NASTY not in blob
    assert "&lt;script&gt;" in blob


def test_estimates_and_hbm_lines() -> None:
    from .compare_fixtures import comparison_small_hbm, comparison_targets

    c = comparison_small_hbm()
    fig = comparison_figure(c)
    hbm = [s for s in fig.layout.shapes if s.name == "hbm"]
    assert [(s.y0, s.y1) for s in hbm] == [(8 * 2**20, 8 * 2**20)] * 2
    assert fig.layout.yaxis.range[1] >= 8 * 2**20
    est = [a.text for a in fig.layout.annotations if a.name == "estimate"]
    assert len(est) == 2 and all(t.startswith("est. ≥ ") for t in est)
    assert est[0].endswith("does not fit") and est[1].endswith("fits")
    assert all("lower bound" in a.hovertext for a in fig.layout.annotations if a.name == "estimate")
    # far above the bars: a note at the top instead of a line; bars labelled by target
    fig = comparison_figure(comparison_targets())
    assert not [s for s in fig.layout.shapes if s.name == "hbm"]
    assert len([a for a in fig.layout.annotations if a.name == "hbm"]) == 6
    assert list(fig.data[0].x)[:2] == [
        "dp @ TPU v5e 2x4 (from CPU)",
        "dp @ NVIDIA H100 SXM 1x8 (from CPU)",
    ]
