"""A :class:`~shardviz.model.search.Search` as one self-contained HTML fragment.

Scoped ``<style>``, no script, no URL; every string from the model is escaped. The cells are
:mod:`.search_facts`', so the text and HTML views agree.

Testable hooks: one ``<tr class="sv-plan" data-plan="#3" data-rank="1" data-fits="1|0|"
data-peak="…" data-moved="…">`` per plan (the best also has class ``sv-best``; plans past
:data:`~.search_facts.SHOWN_PLANS` sit in ``<details class="sv-search-more">``); the best
plan's specs are ``<tr class="sv-search-spec" data-leaf="params/w1">`` rows; the notes are
``<div class="sv-search-note">``; the best plan's full report is in ``<details
class="sv-search-report">``.
"""

from __future__ import annotations

from collections.abc import Sequence

from shardviz.model.search import Plan, Search
from shardviz.render.html import STYLE, page
from shardviz.render.search.view import (
    PLAN_HEADER,
    RIGHT,
    SHOWN_PLANS,
    best_line,
    plan_cells,
    spec_rows,
    status_lines,
    title,
)
from shardviz.render.stylesheets import stylesheet
from shardviz.render.svg import esc

SEARCH_CSS = stylesheet("search.css")


def _fits_attr(p: Plan) -> str:
    return "" if p.fits is None else "1" if p.fits else "0"


def _rows(s: Search, plans: Sequence[Plan], first_rank: int) -> str:
    best = s.best
    out = []
    for rank, p in enumerate(plans, start=first_rank):
        cls = (
            "sv-plan"
            + (" sv-best" if p is best else "")
            + (" sv-unfit" if p.fits is False or not p.compiled else "")
        )
        cells = plan_cells(rank, p)
        tds = "".join(
            f'<td class="{"sv-num" if j in RIGHT else "sv-how" if j == 7 else ""}">{esc(c)}</td>'
            for j, c in enumerate(cells)
        )
        out.append(
            f'<tr class="{cls}" data-plan="{esc(p.label)}" data-rank="{rank}" '
            f'data-fits="{_fits_attr(p)}" data-peak="{p.peak_bytes if p.peak_bytes is not None else ""}" '
            f'data-moved="{p.moved_bytes if p.moved_bytes is not None else ""}">{tds}</tr>'
        )
    return "".join(out)


def _table(s: Search, plans: Sequence[Plan], first_rank: int) -> str:
    head = "".join(
        f'<th class="{"sv-num" if j in RIGHT else ""}">{esc(h)}</th>'
        for j, h in enumerate(PLAN_HEADER)
    )
    return (
        f'<table class="sv-search-plans"><thead><tr>{head}</tr></thead>'
        f"<tbody>{_rows(s, plans, first_rank)}</tbody></table>"
    )


def _specs(s: Search) -> str:
    b = s.best
    if b is None:
        return ""
    rows = spec_rows(s, b)
    with_opt = any(r.optimizer for r in rows)
    head = "<th>leaf</th><th>spec</th>" + ("<th>optimizer state</th>" if with_opt else "")
    body = "".join(
        f'<tr class="sv-search-spec" data-leaf="{esc(r.path)}"><td><code>{esc(r.path)}</code>'
        f"</td><td><code>{esc(r.spec)}</code></td>"
        + (f"<td><code>{esc(r.optimizer or 'like the leaf')}</code></td>" if with_opt else "")
        + "</tr>"
        for r in rows
    )
    return (
        f"<h4>Best plan {esc(b.label)}: the specs "
        '<span class="sv-dim">(use search.best.rules with compare)</span></h4>'
        f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    )


def search_html(s: Search, shown: int = SHOWN_PLANS) -> str:
    """A plan search as a self-contained HTML fragment.

    Args:
        s: the search (live or hand-built).
        shown: plans in the open table; the rest are folded under it.

    Returns:
        One ``<div class="sv-root sv-search">``: the status, the plans best first, the best
        plan's specs, the notes and the best plan's full report (folded).
    """
    body = [f'<div class="sv-head">{esc(title(s))}</div>']
    body += [f'<div class="sv-facts">{esc(x)}</div>' for x in status_lines(s)]
    body.append(f'<div class="sv-search-best">{esc(best_line(s))}</div>')
    if s.plans:
        body.append(_table(s, s.plans[:shown], 1))
        rest = s.plans[shown:]
        if rest:
            body.append(
                f'<details class="sv-search-more"><summary>{len(rest)} more '
                f"plan{'s' if len(rest) != 1 else ''}</summary>"
                f"{_table(s, rest, shown + 1)}</details>"
            )
    body.append(_specs(s))
    if s.notes:
        body.append(
            '<div class="sv-search-notes">'
            + "".join(f'<div class="sv-search-note">{esc(n)}</div>' for n in s.notes)
            + "</div>"
        )
    b = s.best
    if b is not None and b.report is not None:
        body.append(
            '<details class="sv-search-report"><summary>the best plan '
            f"{esc(b.label)}: its full report</summary>{b.report._repr_html_()}</details>"
        )
    return (
        f'<div class="sv-root sv-search">{STYLE}<style>{SEARCH_CSS}</style>'
        + "".join(body)
        + "</div>"
    )


def search_page(s: Search) -> str:
    """The search as one self-contained offline HTML document."""
    return page(f"shardviz: plan search for {s.function}", [search_html(s)])
