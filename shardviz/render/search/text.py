"""A :class:`~shardviz.model.search.Search` as plain text: what was searched, the plans tried
(best first), the best plan's specs and the notes. Deterministic, no colour codes.

The words come from :func:`~.view.search_view`, which the HTML view reads too.
"""

from __future__ import annotations

from collections.abc import Sequence

from shardviz.model.search import Search
from shardviz.render.search.view import (
    RIGHT,
    SHOWN_PLANS,
    SearchView,
    SpecsView,
    search_view,
)
from shardviz.render.table import aligned_table


def _plan_table(view: SearchView, shown: int) -> list[str]:
    rows: list[Sequence[str] | str] = [p.cells for p in view.plans[:shown]]
    rest = len(view.plans) - shown
    if rest > 0:
        rows.append(f"  … {rest} more plan{'s' if rest != 1 else ''} (search.plans lists all)")
    lines = [view.plans_title]
    lines.extend(aligned_table(view.header, rows, right=RIGHT, indent="  "))
    return lines


def _spec_table(specs: SpecsView) -> list[str]:
    lines = [f"{specs.title} {specs.hint}"]
    lines.extend(aligned_table(specs.header, specs.cells, right=set(), indent="  "))
    return lines


def search_text(s: Search | SearchView, shown: int = SHOWN_PLANS) -> str:
    """A plan search as text.

    Args:
        s: the search (live or hand-built), or its view.
        shown: plans listed before the rest are counted.

    Returns:
        Lines joined by newlines, no trailing newline.
    """
    view = s if isinstance(s, SearchView) else search_view(s)
    sections = [[view.title, *(f"  {x}" for x in view.status), f"  {view.best}"]]
    if view.plans:
        sections.append(_plan_table(view, shown))
    if view.specs is not None:
        sections.append(_spec_table(view.specs))
    if view.notes:
        sections.append(["Notes", *(f"  {n}" for n in view.notes)])
    return "\n\n".join("\n".join(x) for x in sections)
