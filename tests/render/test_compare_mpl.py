"""The comparison's matplotlib figure (Agg): two panels, bar heights equal to the model's
bytes, no pyplot state."""

from __future__ import annotations

import dataclasses
import io
import sys

import pytest

from shardviz.render.compare.view import (
    comparison_kinds,
    kind_moved,
    memory_parts,
    shown_components,
)

from .compare_fixtures import comparison, comparison_nasty

mpl = pytest.importorskip("matplotlib")
mpl.use("Agg")

from shardviz.render.compare.mpl import comparison_mpl  # noqa: E402


def _bars(ax):
    return [p for p in ax.patches if p.get_width() > 0]


def test_two_axes_with_stacked_memory_heights() -> None:
    c = comparison()
    fig = comparison_mpl(c)
    assert len(fig.axes) == 2
    ax_mem, _ = fig.axes
    comps = shown_components(c)
    n = len(c.results)
    bars = _bars(ax_mem)
    assert len(bars) == len(comps) * n
    for i, comp in enumerate(comps):
        heights = [b.get_height() for b in bars[i * n : (i + 1) * n]]
        assert heights == [dict(memory_parts(r.memory))[comp] for r in c.results]
    # Stacked: each bar's top is the sum of its components.
    tops = {}
    for b in bars:
        x = round(b.get_x() + b.get_width() / 2, 6)
        tops[x] = max(tops.get(x, 0), b.get_y() + b.get_height())
    assert sorted(tops.values()) == sorted(
        sum(b for p, b in memory_parts(r.memory) if p in comps) for r in c.results
    )
    assert [t.get_text() for t in ax_mem.get_xticklabels()] == [r.strategy for r in c.results]


def test_grouped_transfer_heights() -> None:
    c = comparison()
    _, ax = comparison_mpl(c).axes
    kinds = comparison_kinds(c)
    n = len(c.results)
    bars = _bars(ax)
    assert len(bars) == len(kinds) * n
    for j, kind in enumerate(kinds):
        assert [b.get_height() for b in bars[j * n : (j + 1) * n]] == [
            kind_moved(r, kind) for r in c.results
        ]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == kinds


def test_renders_to_png_without_pyplot() -> None:
    before = "matplotlib.pyplot" in sys.modules
    for c in (comparison(), comparison_nasty()):
        fig = c.matplotlib_figure()
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=60)
        assert buf.getvalue()[:8] == b"\x89PNG\r\n\x1a\n"
    assert ("matplotlib.pyplot" in sys.modules) == before


def test_dollar_signs_are_not_mathtext() -> None:
    c = comparison()
    r = dataclasses.replace(c.results[0], strategy="a$b$c")
    odd = dataclasses.replace(c, param_dtype="$x$", results=(r,))
    fig = comparison_mpl(odd)
    fig.savefig(io.BytesIO(), format="png", dpi=40)
    assert fig.axes[0].get_xticklabels()[0].get_text() == r"a\$b\$c"


def test_figure_shows_itself_in_a_notebook() -> None:
    """Without %matplotlib inline, IPython looks for _repr_png_: the figure must have one."""
    png = comparison().matplotlib_figure()._repr_png_()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"


def test_estimates_and_hbm_lines() -> None:
    from .compare_fixtures import comparison_small_hbm, comparison_targets

    fig = comparison_mpl(comparison_small_hbm())
    ax_mem = fig.axes[0]
    lines = [x for x in ax_mem.collections if x.get_gid() == "hbm"]
    assert len(lines) == 2
    for line in lines:
        (seg,) = line.get_segments()
        assert seg[0][1] == seg[1][1] == 8 * 2**20
    texts = [t.get_text() for t in ax_mem.texts if t.get_gid() == "estimate"]
    assert len(texts) == 2 and all(t.startswith("est. ≥ ") for t in texts)
    assert texts[0].endswith("does not fit")
    fig = comparison_mpl(comparison_targets())
    ax_mem = fig.axes[0]
    assert not [x for x in ax_mem.collections if x.get_gid() == "hbm"]
    assert len([t for t in ax_mem.texts if t.get_gid() == "hbm-off"]) == 6
    labels = [t.get_text() for t in ax_mem.get_xticklabels()]
    assert labels[1] == "dp\n@ NVIDIA H100 SXM 1x8 (from CPU)"
    fig.savefig(io.BytesIO(), format="png")
