"""Serving comparisons and slice choices as plain text (deterministic, for goldens)."""

from __future__ import annotations

from collections.abc import Sequence

from shardviz.model.serving import ServingComparison, SliceChoice
from shardviz.render.serving.view import COLUMNS, result_row, slice_lines, summary_line
from shardviz.render.table import aligned_table

__all__ = ["serving_text", "slice_text"]


def serving_text(c: ServingComparison) -> str:
    """The summary, one row per strategy, the notes and the findings."""
    rows: list[Sequence[str] | str] = []
    notes: list[str] = []
    for r in c.results:
        row = result_row(r)
        rows.append(list(row.cells))
        notes += [f"  {r.strategy}: {n}" for n in row.notes]
    lines = [summary_line(c), ""]
    lines += aligned_table(COLUMNS, rows, right=set(range(2, len(COLUMNS))), indent="  ")
    if notes:
        lines += ["", "Notes", *notes]
    if c.findings:
        lines += ["", "Findings"]
        for f in c.findings:
            lines += [
                f"  [{f.severity}] {f.strategy}: {f.title}",
                f"    {f.why}",
                f"    fix: {f.fix}",
            ]
    return "\n".join(lines)


def slice_text(s: SliceChoice) -> str:
    """The slice chosen and the ones tried."""
    return "\n".join(slice_lines(s))
