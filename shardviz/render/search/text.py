"""A :class:`~shardviz.model.search.Search` as plain text: what was searched, the plans tried
(best first), the best plan's specs and the notes. Deterministic, no colour codes."""

from __future__ import annotations

from collections.abc import Sequence

from shardviz.model.search import Search
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
from shardviz.render.table import aligned_table


def _plan_table(s: Search, shown: int) -> list[str]:
    rows: list[Sequence[str] | str] = [
        plan_cells(rank, p) for rank, p in enumerate(s.plans[:shown], start=1)
    ]
    rest = len(s.plans) - shown
    if rest > 0:
        rows.append(f"  … {rest} more plan{'s' if rest != 1 else ''} (search.plans lists all)")
    lines = ["Plans tried, best first (peak and bytes moved per device, per step)"]
    lines.extend(aligned_table(PLAN_HEADER, rows, right=RIGHT, indent="  "))
    return lines


def _spec_table(s: Search) -> list[str]:
    b = s.best
    if b is None:
        return []
    rows = spec_rows(s, b)
    with_opt = any(r.optimizer for r in rows)
    header = ["leaf", "spec", *(["optimizer state"] if with_opt else [])]
    cells: list[Sequence[str] | str] = [
        [r.path, r.spec, *([r.optimizer or "like the leaf"] if with_opt else [])] for r in rows
    ]
    lines = [f"Best plan {b.label}: the specs (use search.best.rules with compare)"]
    lines.extend(aligned_table(header, cells, right=set(), indent="  "))
    return lines


def search_text(s: Search, shown: int = SHOWN_PLANS) -> str:
    """A plan search as text.

    Args:
        s: the search (live or hand-built).
        shown: plans listed before the rest are counted.

    Returns:
        Lines joined by newlines, no trailing newline.
    """
    sections = [[title(s), *(f"  {x}" for x in status_lines(s)), f"  {best_line(s)}"]]
    if s.plans:
        sections.append(_plan_table(s, shown))
    specs = _spec_table(s)
    if specs:
        sections.append(specs)
    if s.notes:
        sections.append(["Notes", *(f"  {n}" for n in s.notes)])
    return "\n\n".join("\n".join(x) for x in sections)
