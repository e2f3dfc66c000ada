"""One view of a plan search, computed once: the text and the HTML read the same
:class:`SearchView`, so a plan's figures cannot differ between them."""

from __future__ import annotations

import dataclasses
import html
from collections.abc import Callable

import pytest

from shardviz.model.search import Search
from shardviz.render.search import html as search_html_module
from shardviz.render.search import text as search_text_module
from shardviz.render.search.html import search_html, search_page
from shardviz.render.search.text import search_text
from shardviz.render.search.view import SearchView, search_view
from tests.render.test_search_views import search


def _counting(monkeypatch: pytest.MonkeyPatch, module: object) -> list[Search]:
    """Every search :func:`search_view` is built from while ``module`` renders."""
    calls: list[Search] = []

    def counted(s: Search) -> SearchView:
        calls.append(s)
        return search_view(s)

    monkeypatch.setattr(module, "search_view", counted)
    return calls


@pytest.mark.parametrize(
    ("module", "render"),
    [
        (search_text_module, search_text),
        (search_html_module, search_html),
        (search_html_module, search_page),
    ],
)
def test_each_render_builds_the_view_once(
    monkeypatch: pytest.MonkeyPatch, module: object, render: Callable[[Search], str]
) -> None:
    s = search()
    calls = _counting(monkeypatch, module)
    render(s)
    assert calls == [s]


def test_a_given_view_is_not_built_again(monkeypatch: pytest.MonkeyPatch) -> None:
    s = search()
    view = search_view(s)
    calls = _counting(monkeypatch, search_text_module) + _counting(monkeypatch, search_html_module)
    assert search_text(view) == search_text(s)
    assert search_html(view) == search_html(s)
    assert search_page(view) == search_page(s)
    assert calls == []


def test_the_text_and_the_html_show_the_views_figures() -> None:
    s = search()
    view = search_view(s)
    text, page = search_text(s), html.unescape(search_html(s))
    assert [p.label for p in view.plans] == ["#2", "#1", "#3", "#4"]
    assert view.plans[0].best and not view.plans[1].best
    assert view.plans[2].unfit and view.plans[3].unfit and view.plans[3].fits == "1"
    flat = " ".join(text.split())  # the text wraps long lines at words

    def shown(words: str) -> bool:
        return " ".join(words.split()) in flat and words in page

    assert all(shown(words) for words in (view.title, *view.status, view.best))
    for p in view.plans:
        assert all(shown(cell) for cell in p.cells)
    assert view.specs is not None and view.specs.header[-1] == "optimizer state"
    for cells in view.specs.cells:
        assert all(cell in text and cell in page for cell in cells)


def test_no_best_plan_has_no_specs() -> None:
    view = search_view(search(plans=search().plans[2:]))
    assert view.specs is None and view.best_report is None and view.best_label == ""
    assert "Best plan" not in search_text(view) and "Best plan" not in search_html(view)


def test_the_renderers_read_the_view() -> None:
    view = search_view(search())
    first = dataclasses.replace(
        view.plans[0], cells=("1", "#2", "PEAK WORDS", *view.plans[0].cells[3:])
    )
    assert view.specs is not None
    changed = dataclasses.replace(
        view,
        title="TITLE WORDS",
        status=("STATUS WORDS",),
        best="BEST WORDS",
        plans=(first, *view.plans[1:]),
        specs=dataclasses.replace(view.specs, title="SPECS WORDS"),
        notes=("NOTE WORDS",),
    )
    text, page = search_text(changed), search_html(changed)
    for words in ("TITLE", "STATUS", "BEST", "PEAK", "SPECS", "NOTE"):
        assert f"{words} WORDS" in text and f"{words} WORDS" in page
    assert "300 KiB" not in text and "300 KiB" not in page  # the first plan's peak, replaced
