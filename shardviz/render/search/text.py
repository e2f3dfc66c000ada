"""A :class:`~shardviz.model.search.Search` as plain text: what was searched, the plans tried
(best first), the best plan's specs and the notes. Deterministic, no colour codes.

The words come from :func:`~.view.search_view`, which the HTML view reads too. Lines stay
within :data:`WIDTH` (a notebook wraps longer ones mid-word): long status lines and notes
wrap at word boundaries, and so does the plan table's last column (how each plan was
found), under itself.
"""

from __future__ import annotations

import textwrap
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

#: The longest line the text prints.
WIDTH = 99


def _fill(text: str) -> list[str]:
    """``text`` as indented lines within :data:`WIDTH`, continuations indented further."""
    return textwrap.wrap(text, WIDTH, initial_indent="  ", subsequent_indent="    ") or [""]


def _wrap_last_column(lines: list[str]) -> list[str]:
    """An aligned table (header, rule, rows) whose last, left-aligned column is wrapped
    under itself so that no line is longer than :data:`WIDTH` (left as it is when that
    column would start too far right to hold a word or two)."""
    at = len(lines[0]) - len(lines[0].split()[-1])  # where the last header starts
    room = WIDTH - at
    if room < 20:
        return lines
    out = [lines[0], lines[1][:WIDTH]]
    for line in lines[2:]:
        if len(line) <= WIDTH or not line[:at].strip():
            out.append(line)
            continue
        head, tail = line[:at], line[at:]
        # "dim 0" stays on one line (NUL is no space to textwrap).
        parts = textwrap.wrap(tail.replace("dim ", "dim\0"), room, break_on_hyphens=False)
        parts = [part.replace("\0", " ") for part in parts]
        out.append(head + parts[0])
        out.extend(" " * at + part for part in parts[1:])
    return out


def _plan_table(view: SearchView, shown: int) -> list[str]:
    rows: list[Sequence[str] | str] = [p.cells for p in view.plans[:shown]]
    rest = len(view.plans) - shown
    if rest > 0:
        rows.append(f"  … {rest} more plan{'s' if rest != 1 else ''} (search.plans lists all)")
    lines = [view.plans_title]
    lines.extend(_wrap_last_column(aligned_table(view.header, rows, right=RIGHT, indent="  ")))
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
    status = [line for x in (*view.status, view.best) for line in _fill(x)]
    sections = [[view.title, *status]]
    if view.plans:
        sections.append(_plan_table(view, shown))
    if view.specs is not None:
        sections.append(_spec_table(view.specs))
    if view.notes:
        sections.append(["Notes", *(line for n in view.notes for line in _fill(n))])
    return "\n\n".join("\n".join(x) for x in sections)
