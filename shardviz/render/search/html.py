"""A :class:`~shardviz.model.search.Search` as one self-contained HTML fragment.

Scoped ``<style>``, no script, no URL; every string from the model is escaped. The words are
:func:`~.view.search_view`'s, read by the text view too, so the two agree.

Testable hooks: one ``<tr class="sv-plan" data-plan="#3" data-rank="1" data-fits="1|0|"
data-peak="…" data-moved="…">`` per plan (the best also has class ``sv-best``; plans past
:data:`~.view.SHOWN_PLANS` sit in ``<details class="sv-search-more">``); the best
plan's specs are ``<tr class="sv-search-spec" data-leaf="params/w1">`` rows; the notes are
``<div class="sv-search-note">``; the best plan's full report is in ``<details
class="sv-search-report">``.
"""

from __future__ import annotations

from collections.abc import Sequence

from shardviz.model.search import Search
from shardviz.render.html import STYLE, page
from shardviz.render.search.view import (
    RIGHT,
    SHOWN_PLANS,
    PlanView,
    SearchView,
    SpecsView,
    search_view,
)
from shardviz.render.stylesheets import stylesheet
from shardviz.render.svg import esc

SEARCH_CSS = stylesheet("search.css")


def _optional(n: int | None) -> str:
    return "" if n is None else str(n)


def _rows(plans: Sequence[PlanView]) -> str:
    out = []
    for p in plans:
        cls = "sv-plan" + (" sv-best" if p.best else "") + (" sv-unfit" if p.unfit else "")
        tds = "".join(
            f'<td class="{"sv-num" if j in RIGHT else "sv-how" if j == 7 else ""}">{esc(c)}</td>'
            for j, c in enumerate(p.cells)
        )
        out.append(
            f'<tr class="{cls}" data-plan="{esc(p.label)}" data-rank="{p.rank}" '
            f'data-fits="{p.fits}" data-peak="{_optional(p.peak_bytes)}" '
            f'data-moved="{_optional(p.moved_bytes)}">{tds}</tr>'
        )
    return "".join(out)


def _table(view: SearchView, plans: Sequence[PlanView]) -> str:
    head = "".join(
        f'<th class="{"sv-num" if j in RIGHT else ""}">{esc(h)}</th>'
        for j, h in enumerate(view.header)
    )
    return (
        f'<table class="sv-search-plans"><thead><tr>{head}</tr></thead>'
        f"<tbody>{_rows(plans)}</tbody></table>"
    )


def _specs(specs: SpecsView | None) -> str:
    if specs is None:
        return ""
    head = "".join(f"<th>{esc(h)}</th>" for h in specs.header)
    body = "".join(
        f'<tr class="sv-search-spec" data-leaf="{esc(cells[0])}">'
        + "".join(f"<td><code>{esc(c)}</code></td>" for c in cells)
        + "</tr>"
        for cells in specs.cells
    )
    return (
        f'<h4>{esc(specs.title)} <span class="sv-dim">{esc(specs.hint)}</span></h4>'
        f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    )


def _plans(view: SearchView, shown: int) -> list[str]:
    """The first ``shown`` plans in a table, the rest folded under it."""
    if not view.plans:
        return []
    out = [_table(view, view.plans[:shown])]
    rest = view.plans[shown:]
    if rest:
        out.append(
            f'<details class="sv-search-more"><summary>{len(rest)} more '
            f"plan{'s' if len(rest) != 1 else ''}</summary>"
            f"{_table(view, rest)}</details>"
        )
    return out


def search_html(s: Search | SearchView, shown: int = SHOWN_PLANS) -> str:
    """A plan search as a self-contained HTML fragment.

    Args:
        s: the search (live or hand-built), or its view.
        shown: plans in the open table; the rest are folded under it.

    Returns:
        One ``<div class="sv-root sv-search">``: the status, the plans best first, the best
        plan's specs, the notes and the best plan's full report (folded).
    """
    view = s if isinstance(s, SearchView) else search_view(s)
    body = [f'<div class="sv-head">{esc(view.title)}</div>']
    body += [f'<div class="sv-facts">{esc(x)}</div>' for x in view.status]
    body.append(f'<div class="sv-search-best">{esc(view.best)}</div>')
    body += _plans(view, shown)
    body.append(_specs(view.specs))
    if view.notes:
        body.append(
            '<div class="sv-search-notes">'
            + "".join(f'<div class="sv-search-note">{esc(n)}</div>' for n in view.notes)
            + "</div>"
        )
    if view.best_report is not None:
        body.append(
            '<details class="sv-search-report"><summary>the best plan '
            f"{esc(view.best_label)}: its full report</summary>"
            f"{view.best_report._repr_html_()}</details>"
        )
    return (
        f'<div class="sv-root sv-search">{STYLE}<style>{SEARCH_CSS}</style>'
        + "".join(body)
        + "</div>"
    )


def search_page(s: Search | SearchView) -> str:
    """The search as one self-contained offline HTML document."""
    view = s if isinstance(s, SearchView) else search_view(s)
    return page(f"shardviz: plan search for {view.function}", [search_html(view)])
