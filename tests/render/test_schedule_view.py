"""One view of a pipeline schedule, computed once: the text, the HTML and the two figures read
the same :class:`ScheduleView`, so a slot, a bubble or a stage's memory cannot read
differently between them."""

from __future__ import annotations

import dataclasses
import html
from collections.abc import Callable
from typing import Any

import pytest

from shardviz.model.schedule import Schedule, gpipe, one_f_one_b
from shardviz.render.schedule import html as schedule_html_module
from shardviz.render.schedule import mpl as schedule_mpl_module
from shardviz.render.schedule import plotly as schedule_plotly_module
from shardviz.render.schedule import text as schedule_text_module
from shardviz.render.schedule.html import schedule_html, schedule_page
from shardviz.render.schedule.mpl import schedule_mpl
from shardviz.render.schedule.plotly import schedule_figure
from shardviz.render.schedule.text import schedule_text
from shardviz.render.schedule.view import ScheduleView, SlotView, schedule_view
from tests.render.schedule_fixtures import KEPT, profiled


def _counting(monkeypatch: pytest.MonkeyPatch, module: object) -> list[Schedule]:
    """Every schedule :func:`schedule_view` is built from while ``module`` renders."""
    calls: list[Schedule] = []

    def counted(s: Schedule) -> ScheduleView:
        calls.append(s)
        return schedule_view(s)

    monkeypatch.setattr(module, "schedule_view", counted)
    return calls


@pytest.mark.parametrize(
    ("module", "render"),
    [
        (schedule_text_module, schedule_text),
        (schedule_html_module, schedule_html),
        (schedule_html_module, schedule_page),
    ],
)
def test_each_render_builds_the_view_once(
    monkeypatch: pytest.MonkeyPatch, module: object, render: Callable[[Schedule], str]
) -> None:
    s = profiled()
    calls = _counting(monkeypatch, module)
    render(s)
    assert calls == [s]


@pytest.mark.parametrize(
    ("needs", "module", "render"),
    [
        ("plotly", schedule_plotly_module, schedule_figure),
        ("matplotlib", schedule_mpl_module, schedule_mpl),
    ],
)
def test_each_figure_builds_the_view_once(
    monkeypatch: pytest.MonkeyPatch, needs: str, module: object, render: Callable[[Schedule], Any]
) -> None:
    pytest.importorskip(needs)
    s = profiled()
    calls = _counting(monkeypatch, module)
    render(s)
    assert calls == [s]


def test_a_given_view_is_not_built_again(monkeypatch: pytest.MonkeyPatch) -> None:
    s = profiled()
    view = schedule_view(s)
    calls = [
        *_counting(monkeypatch, schedule_text_module),
        *_counting(monkeypatch, schedule_html_module),
    ]
    assert schedule_text(view) == schedule_text(s)
    assert schedule_html(view) == schedule_html(s)
    assert schedule_page(view) == schedule_page(s)
    assert calls == []


def test_the_view_holds_the_grid_and_the_figures() -> None:
    s = profiled()
    view = schedule_view(s)
    assert (view.stages, view.microbatches, view.length) == (2, 3, s.length)
    assert [len(r.cells) for r in view.rows] == [s.length] * 2
    placed = [c for r in view.rows for c in r.cells if c is not None]
    assert sorted(placed, key=lambda c: (c.time, c.stage)) == list(view.slots)
    assert len(view.slots) == 2 * 2 * 3 and view.slots[0].label == "F0"
    assert [r.in_flight for r in view.rows] == [s.in_flight(0), s.in_flight(1)]
    assert [r.activation_bytes for r in view.rows] == [s.in_flight(0) * KEPT, s.in_flight(1) * KEPT]
    assert view.panels == ("schedule", "measured", "activation")
    assert view.illustrative and view.measured.startswith("measured 12 slots")
    assert [label for label, _ in view.bubble] == ["bubble", "theory", "measured"]
    assert view.measured_slots[0].offset == 0.0


@pytest.mark.parametrize("make", [lambda: gpipe(4, 8), lambda: profiled("gpu"), profiled])
def test_the_text_and_the_html_show_the_views_figures(make: Callable[[], Schedule]) -> None:
    view = schedule_view(make())
    text, page = schedule_text(view), html.unescape(schedule_html(view))
    words = [view.title, view.how, *(value for _, value in view.bubble), *view.in_flight]
    words += [line for _, line in view.activation]
    words += [view.measured, view.realness] if view.measured_slots else []
    for w in words:
        assert w in text and w in page, w
    for r in view.rows:
        assert r.name in text and r.name in page
        assert all(c.label in text and c.tip in page for c in r.cells if c is not None)


def _relabelled(view: ScheduleView, label: str) -> ScheduleView:
    """``view`` with its first slot labelled ``label`` (in its row and in the slot list)."""
    first = view.slots[0]
    new = dataclasses.replace(first, label=label)
    row = view.rows[first.stage]
    cells = tuple(new if c is first else c for c in row.cells)
    rows = tuple(dataclasses.replace(r, cells=cells) if r is row else r for r in view.rows)
    slots: tuple[SlotView, ...] = (new, *view.slots[1:])
    return dataclasses.replace(view, rows=rows, slots=slots)


def test_the_text_and_the_html_read_the_view() -> None:
    view = _relabelled(schedule_view(one_f_one_b(4, 8)), "Q9")
    changed = dataclasses.replace(
        view,
        title="TITLE WORDS",
        how="HOW WORDS",
        bubble=(("bubble", "BUBBLE WORDS"),),
        bubble_line="bubble BUBBLE WORDS",
        in_flight=("IN FLIGHT WORDS", *view.in_flight[1:]),
        legend="LEGEND WORDS",
    )
    text, page = schedule_text(changed), schedule_html(changed)
    for words in ("TITLE", "HOW", "BUBBLE", "IN FLIGHT"):
        assert f"{words} WORDS" in text and f"{words} WORDS" in page
    assert "LEGEND WORDS" in text
    assert "Q9" in text and ">Q9</text>" in page and "F0" not in text.split("\n")[5]


def test_the_measured_and_activation_words_are_read_from_the_view() -> None:
    view = schedule_view(profiled())
    changed = dataclasses.replace(
        view,
        measured="MEASURED WORDS",
        measured_line="MEASURED WORDS",
        activation=((0, "ACTIVATION WORDS"),),
    )
    text, page = schedule_text(changed), schedule_html(changed)
    for words in ("MEASURED", "ACTIVATION"):
        assert f"{words} WORDS" in text and f"{words} WORDS" in page


def test_the_figures_read_the_view() -> None:
    pytest.importorskip("plotly")
    pytest.importorskip("matplotlib")
    view = _relabelled(schedule_view(profiled()), "Q9")
    changed = dataclasses.replace(
        view,
        headline="HEADLINE WORDS",
        bubble_line="BUBBLE WORDS",
        measured_title="MEASURED WORDS",
    )
    fig = schedule_figure(changed)
    assert "HEADLINE WORDS" in fig.layout.title.text and "BUBBLE WORDS" in fig.layout.title.text
    assert "MEASURED WORDS" in [a.text for a in fig.layout.annotations]
    assert fig.data[1].text[0] == "Q9"
    mfig = schedule_mpl(changed)
    assert mfig._suptitle.get_text() == "HEADLINE WORDS\nBUBBLE WORDS"
    assert mfig.axes[1].get_title(loc="left") == "MEASURED WORDS"
    assert "Q9" in [t.get_text() for t in mfig.axes[0].texts]
