"""The comparison's view object: built once per render, read (never recomputed) by the text,
the HTML, the plotly and the matplotlib views, so they show the same figures."""

from __future__ import annotations

import ast
import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import shardviz.render.compare.html as html_mod
import shardviz.render.compare.text as text_mod
import shardviz.render.compare.view as view_mod
from shardviz.model import Comparison
from shardviz.render.compare.html import comparison_html
from shardviz.render.compare.text import comparison_text
from shardviz.render.compare.view import ComparisonView, StrategyView, comparison_view
from shardviz.render.svg import esc

from .compare_fixtures import COMPARISONS, comparison, comparison_nasty, comparison_v5e
from .host_fixtures import comparison_two_hosts
from .test_compare_schedule import piped

COMPARE = Path(view_mod.__file__).parent
RENDERERS = ("text.py", "html.py", "plotly.py", "mpl.py")
#: What a renderer may import from the view module: the view, its parts and its builder.
VIEW_NAMES = {
    "ComparisonView", "StrategyView", "PartView", "CollectiveRow", "Traffic", "Series",
    "EstimateView", "Scale", "TargetGroup", "comparison_view", "byte_scale",
}  # fmt: skip

ALL = {**COMPARISONS, "nasty": comparison_nasty, "hosts": comparison_two_hosts, "piped": piped}


# --------------------------------------------------------------------------------------------
# Built once


@pytest.mark.parametrize(
    ("module", "render"), [(text_mod, comparison_text), (html_mod, comparison_html)]
)
def test_one_view_per_render(
    monkeypatch: pytest.MonkeyPatch, module: Any, render: Callable[[Any], str]
) -> None:
    calls: list[Comparison] = []
    real = view_mod.comparison_view

    def counting(c: Comparison) -> ComparisonView:
        calls.append(c)
        return real(c)

    monkeypatch.setattr(view_mod, "comparison_view", counting)
    monkeypatch.setattr(module, "comparison_view", counting)
    c = comparison_v5e()
    render(c)
    assert calls == [c]
    # An already-built view is read as it is: no second build.
    render(real(c))
    assert calls == [c]


@pytest.mark.parametrize("name", sorted(ALL))
def test_rendering_the_view_is_rendering_the_comparison(name: str) -> None:
    c = ALL[name]()
    view = comparison_view(c)
    assert comparison_text(view) == comparison_text(c)
    assert comparison_html(view) == comparison_html(c)


def test_the_view_is_frozen() -> None:
    view = comparison_view(comparison())
    with pytest.raises(dataclasses.FrozenInstanceError):
        view.header = "x"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        view.strategies[0].step_str = "x"  # type: ignore[misc]


def test_renderers_import_only_the_view() -> None:
    """No renderer formats a figure itself: none imports the units or a helper of the view
    module, only the view, its parts and its builder."""
    for file in RENDERERS:
        tree = ast.parse((COMPARE / file).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = {a.name for a in node.names}
                assert node.module != "shardviz.model.units", (file, names)
                if node.module == "shardviz.render.compare.view":
                    assert names <= VIEW_NAMES, (file, names - VIEW_NAMES)


# --------------------------------------------------------------------------------------------
# The same figures in text and HTML


def _figures(s: StrategyView, multi_host: bool) -> list[str]:
    """Every byte and second string of a strategy that both views show."""
    out = [p.text for p in s.memory]
    out += [s.peak_str, s.peak_exact, s.temp_str, s.temp_line, s.reconcile_line, s.moved_str,
            s.step_str, s.loss_word, s.loss_str, s.label]  # fmt: skip
    out += [x for r in s.rows for x in (r.in_str, r.moved_str, r.kind, r.axes_label)]
    out += [t.moved_str for t in s.by_axes if t.count]
    if multi_host:
        out.append(s.cross_str)
        out += [r.cross_str for r in s.rows if s.hosts]
    if s.schedule_line:
        out.append(s.schedule_line)
    e = s.estimate
    if e is not None:
        out += [e.step_str, e.bound, e.mfu_str, e.compute_str, e.memory_str, e.collectives_str,
                e.fit_text, e.line]  # fmt: skip
    return out


@pytest.mark.parametrize("name", sorted(ALL))
def test_text_and_html_show_every_figure_of_the_view(name: str) -> None:
    view = comparison_view(ALL[name]())
    text, html = comparison_text(view), comparison_html(view)
    assert view.strategies
    for s in view.strategies:
        for figure in _figures(s, view.multi_host):
            assert figure in text, (s.strategy, figure)
            assert esc(figure) in html, (s.strategy, figure)


def test_view_figures_line_up() -> None:
    """Each strategy's cells line up with the comparison's series and add up to its totals."""
    for make in ALL.values():
        view = comparison_view(make())
        for s in view.strategies:
            assert [p.component for p in s.memory] == list(view.components)
            assert sum(p.bytes for p in s.memory) == s.memory_total >= s.peak
            assert len(s.by_kind) == len(view.kinds) and len(s.by_axes) == len(view.axes)
            assert sum(t.moved for t in s.by_kind) == s.moved == sum(t.moved for t in s.by_axes)
            assert sum(r.moved for r in s.rows) == s.moved
            assert sum(r.count for r in s.rows) == s.count
            assert {r.axes_label for r in s.rows} == {t.label for t in s.axes_used}
        grouped = [i for g in view.target_groups for i in g.indices]
        assert sorted(grouped) == [i for i, s in enumerate(view.strategies) if s.estimate]


# --------------------------------------------------------------------------------------------
# Read, never recomputed: a word changed in the view is the word every renderer shows


#: A field of a view: attribute names and tuple indices from the view down.
FieldPath = tuple[str | int, ...]


def _get(obj: Any, path: FieldPath) -> Any:
    for key in path:
        obj = obj[key] if isinstance(key, int) else getattr(obj, key)
    return obj


def _replaced(obj: Any, path: FieldPath, value: Any) -> Any:
    """``obj`` with the field at ``path`` (attribute names and tuple indices) set to ``value``."""
    if not path:
        return value
    key, rest = path[0], path[1:]
    if isinstance(key, int):
        items = list(obj)
        items[key] = _replaced(items[key], rest, value)
        return tuple(items)
    return dataclasses.replace(obj, **{key: _replaced(getattr(obj, key), rest, value)})


def _first(view: ComparisonView, field: str) -> int:
    """The index of the first strategy's first cell in ``field`` it moves bytes by."""
    return next(j for j, t in enumerate(getattr(view.strategies[0], field)) if t.count)


def _paths(view: ComparisonView) -> dict[str, list[FieldPath]]:
    """Per renderer, fields of the v5e comparison's view it shows (as paths into the view)."""
    s0 = ("strategies", 0)
    k, a = _first(view, "by_kind"), _first(view, "by_axes")
    both: list[FieldPath] = [
        ("bytes_note",), ("mesh_line",), ("estimate_header", 0),
        (*s0, "label"), (*s0, "memory", 0, "text"), (*s0, "peak_str"), (*s0, "peak_exact"),
        (*s0, "temp_str"), (*s0, "temp_line"), (*s0, "reconcile_line"), (*s0, "moved_str"),
        (*s0, "step_str"), (*s0, "loss_word"), (*s0, "loss_str"), (*s0, "rows", 0, "in_str"),
        (*s0, "rows", 0, "moved_str"), (*s0, "rows", 0, "axes_label"),
        (*s0, "estimate", "step_str"), (*s0, "estimate", "mfu_str"),
        (*s0, "estimate", "compute_str"), (*s0, "estimate", "memory_str"),
        (*s0, "estimate", "collectives_str"), (*s0, "estimate", "line"),
        (*s0, "estimate", "fit_text"),
    ]  # fmt: skip
    return {
        "text": [*both, ("header",), (*s0, "heading"), (*s0, "mesh"), (*s0, "reconciled_str"),
                 (*s0, "by_axes", a, "moved_str")],
        "html": [*both, ("model",), ("params_short",), ("dtype",), ("strategies_word",),
                 ("memory_scale", "labels", 1), ("kinds_scale", "labels", 1),
                 ("axes_scale", "labels", 1), (*s0, "strategy"),
                 (*s0, "title"), (*s0, "memory", 0, "exact"), (*s0, "report_caption"),
                 (*s0, "axes_used", 0, "moved_str"), (*s0, "by_kind", k, "moved_exact"),
                 (*s0, "by_axes", a, "moved_exact"), (*s0, "estimate", "fit_word"),
                 (*s0, "estimate", "fit_figures"), (*s0, "estimate", "hbm_exact")],
        "plotly": [("title",), ("memory_scale", "labels", 1), ("kinds_scale", "labels", 1),
                   (*s0, "label"), (*s0, "memory", 0, "exact"), (*s0, "peak_str"),
                   (*s0, "peak_exact"), (*s0, "by_kind", k, "moved_exact"),
                   (*s0, "by_axes", a, "moved_exact"), (*s0, "rows", 0, "moved_str"),
                   (*s0, "estimate", "at_least"), (*s0, "estimate", "hbm_str")],
        "mpl": [("title",), ("memory_scale", "labels", 1), ("kinds_scale", "labels", 1),
                (*s0, "label"), (*s0, "peak_str"), (*s0, "estimate", "at_least"),
                (*s0, "estimate", "fit_word")],
    }  # fmt: skip


def _plotly_words(view: ComparisonView) -> str:
    pytest.importorskip("plotly.graph_objects")
    from shardviz.render.compare.plotly import comparison_figure

    return json.dumps(json.loads(comparison_figure(view).to_json()), ensure_ascii=False)


def _mpl_words(view: ComparisonView) -> str:
    mpl = pytest.importorskip("matplotlib")
    mpl.use("Agg")
    from shardviz.render.compare.mpl import comparison_mpl

    fig = comparison_mpl(view)
    texts = [fig.get_suptitle()]
    for ax in fig.axes:
        texts += [t.get_text() for t in (*ax.texts, *ax.get_xticklabels(), *ax.get_yticklabels())]
    return "\n".join(texts)


RENDER: dict[str, Callable[[ComparisonView], str]] = {
    "text": comparison_text,
    "html": comparison_html,
    "plotly": _plotly_words,
    "mpl": _mpl_words,
}


@pytest.mark.parametrize("renderer", sorted(RENDER))
def test_a_word_changed_in_the_view_is_the_word_shown(renderer: str) -> None:
    """Each field the renderer shows, set to a sentinel in the view, comes out as that
    sentinel: the renderer reads the view instead of working the word out again."""
    view = comparison_view(comparison_v5e())
    render = RENDER[renderer]
    plain = render(view)
    for path in _paths(view)[renderer]:
        original = _get(view, path)
        assert isinstance(original, str) and original, path
        sentinel = "SENTINEL-" + "-".join(map(str, path))
        shown = render(_replaced(view, path, sentinel))
        assert sentinel in shown, (renderer, path)
        assert sentinel not in plain


def test_a_changed_schedule_line_and_cross_host_bytes_are_shown() -> None:
    """The pipeline line and the bytes across hosts, fields of other fixtures, read too."""
    view = comparison_view(piped())
    changed = _replaced(view, ("strategies", 0, "schedule_line"), "SENTINEL-pipeline")
    assert "SENTINEL-pipeline" in comparison_text(changed)
    assert "SENTINEL-pipeline" in comparison_html(changed)
    view = comparison_view(comparison_two_hosts())
    for path in [("strategies", 0, "cross_str"), ("strategies", 0, "rows", 0, "cross_str")]:
        changed = _replaced(view, path, "SENTINEL-cross")
        assert "SENTINEL-cross" in comparison_text(changed), path
        assert "SENTINEL-cross" in comparison_html(changed), path
