"""Serving figures (plotly and matplotlib) of a real comparison: one line per strategy per
panel holding the sweep's figures, the HBM line, the largest batch marked, names escaped."""

from __future__ import annotations

from dataclasses import replace

import matplotlib
import pytest

import shardviz as sv
from shardviz.model.serving import ServingComparison
from shardviz.render.serving.view import PANELS, serving_chart, x_ticks
from shardviz.strategies.zoo import get_model

matplotlib.use("Agg")

#: 2 layers, 8 query / 4 KV heads of 32: compiles for a v5e 2x2 in a couple of seconds.
DIMS = {"layers": 2, "d_model": 256, "heads": 8, "kv_heads": 4, "head_dim": 32, "ffn": 512,
        "vocab": 512}  # fmt: skip
STRATEGIES = ("tp", "dp")


@pytest.fixture(scope="module")
def served() -> ServingComparison:
    model = get_model("llama3.1-8b", **DIMS)
    return sv.compare(model, list(STRATEGIES), mode="decode", batch=8, context=128,
                      dtype="int8", target="v5e:2x2")  # fmt: skip


@pytest.fixture(scope="module")
def hostile(served: ServingComparison) -> ServingComparison:
    results = tuple(replace(r, strategy=f"<b>{r.strategy}</b>$x$") for r in served.results)
    return replace(served, model="<script>alert(1)</script>", results=results)


def _traces(fig, panel: str, role: str) -> list:
    return [t for t in fig.data if t.meta["panel"] == panel and t.meta["role"] == role]


def test_the_comparison_has_sweeps_and_a_largest_batch(served):
    for r in served.results:
        assert len(r.sweep) >= 3 and len(r.context_sweep) >= 3
        assert r.hbm_bytes > 0 and r.max_batch


def test_the_largest_batch_sits_on_its_line(served):
    """The sweep counts bytes as the largest batch does: weights and the compiled working
    memory kept, the cache scaled; so the largest batch fits and twice it does not."""
    from shardviz.render.serving.view import max_batch_bytes

    for r in served.results:
        for b, nbytes, _ in r.sweep:
            assert nbytes == max_batch_bytes(r, b)
        data = r.axis_sizes["data"]
        assert max_batch_bytes(r, r.max_batch) <= r.hbm_bytes
        assert max_batch_bytes(r, r.max_batch + data) > r.hbm_bytes


def test_plotly_draws_one_line_per_strategy_per_panel_with_the_sweeps_figures(served):
    fig = served.figure()
    for key, along, show, _ in PANELS:
        lines = _traces(fig, key, "line")
        assert [t.name for t in lines] == list(STRATEGIES), key
        for t, r in zip(lines, served.results, strict=True):
            points = getattr(r, along)
            assert list(t.x) == [p[0] for p in points]
            want = [p[1] for p in points] if show == "bytes" else [p[2] for p in points]
            assert list(t.y) == pytest.approx(want)
    # memory against batch: exact bytes in the hover text
    first = _traces(fig, "batch-bytes", "line")[0]
    assert f"{served.results[0].sweep[0][1]:,} B" in first.customdata[0][0]
    assert fig.layout.xaxis.type == "log"


def test_plotly_dashes_the_hbm_on_the_memory_panels_only(served):
    fig = served.figure()
    hbm = served.results[0].hbm_bytes
    for key, _, show, _ in PANELS:
        lines = _traces(fig, key, "hbm")
        if show == "bytes":
            (t,) = lines
            assert list(t.y) == [hbm, hbm] and t.line.dash == "dash"
        else:
            assert lines == []


def test_plotly_marks_the_largest_batch_of_each_strategy(served):
    fig = served.figure()
    marks = _traces(fig, "batch-bytes", "max-batch")
    assert [t.meta["strategy"] for t in marks] == list(STRATEGIES)
    for t, r in zip(marks, served.results, strict=True):
        assert list(t.x) == [r.max_batch]
        # the bytes as the largest batch is counted: weights, working, the cache scaled
        per_sequence = r.kv_bytes / r.batch
        assert t.y[0] == int(r.weight_bytes + r.working_bytes + per_sequence * r.max_batch)
        assert t.y[0] <= r.hbm_bytes < t.y[0] + per_sequence * r.axis_sizes["data"]


def test_plotly_escapes_the_model_and_strategy_names(hostile):
    fig = hostile.figure()
    assert "&lt;script&gt;" in fig.layout.title.text and "<script>" not in fig.layout.title.text
    for t in fig.data:
        for text in (t.name or "", t.hovertemplate or "", t.meta["strategy"]):
            assert "<b>tp" not in text and "<b>dp" not in text
    assert "&lt;b&gt;tp&lt;/b&gt;$x$" in [t.name for t in fig.data]


def test_matplotlib_draws_the_same_lines(served):
    fig = served.matplotlib_figure()
    axes = fig.axes[:4]
    for ax, (key, along, show, _) in zip(axes, PANELS, strict=True):
        lines = [ln for ln in ax.get_lines() if ln.get_gid() == "line"]
        assert [ln.get_label() for ln in lines] == list(STRATEGIES), key
        for ln, r in zip(lines, served.results, strict=True):
            points = getattr(r, along)
            assert list(ln.get_xdata()) == [p[0] for p in points]
            want = [p[1] for p in points] if show == "bytes" else [p[2] for p in points]
            assert list(ln.get_ydata()) == pytest.approx(want)
        hbm = [ln for ln in ax.get_lines() if ln.get_gid() == "hbm"]
        if show == "bytes":
            (h,) = hbm
            assert list(h.get_ydata()) == [served.results[0].hbm_bytes] * 2
            assert h.get_linestyle() == "--"
        else:
            assert hbm == []
        assert ax.get_xscale() == "log"
    marks = [ln for ln in axes[0].get_lines() if ln.get_gid() == "max-batch"]
    assert [list(m.get_xdata()) for m in marks] == [[r.max_batch] for r in served.results]
    assert fig._repr_png_()[:4] == b"\x89PNG"


def test_matplotlib_escapes_dollars_in_names(hostile):
    fig = hostile.matplotlib_figure()
    labels = [ln.get_label() for ln in fig.axes[0].get_lines() if ln.get_gid() == "line"]
    assert labels == [r"<b>tp</b>\$x\$", r"<b>dp</b>\$x\$"]
    fig._repr_png_()  # renders: no mathtext error


def test_a_comparison_without_a_target_draws_empty_panels(served):
    bare = replace(served, results=tuple(replace(r, sweep=(), context_sweep=())
                                         for r in served.results))  # fmt: skip
    assert not serving_chart(bare).batch
    assert not [t for t in bare.figure().data]
    bare.matplotlib_figure()._repr_png_()


def test_x_ticks_thin_out_long_sweeps_keeping_the_last():
    xs = [2**i for i in range(21)]
    ticks = x_ticks(xs)
    assert len(ticks) <= 8 and ticks[-1] == 2**20 and set(ticks) <= set(xs)
    assert x_ticks([8, 16, 32]) == [8, 16, 32]
