"""Serving comparisons and slice choices as plain text (deterministic, for goldens)."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from shardviz.model.serving import ServingComparison, SliceChoice
from shardviz.render.findings.text import finding_lines
from shardviz.render.findings.view import finding_view
from shardviz.render.serving.view import (
    COLUMNS,
    expert_lines,
    findings_head,
    result_row,
    slice_lines,
    summary_line,
)
from shardviz.render.table import aligned_table

__all__ = ["serving_text", "slice_text"]


def serving_text(c: ServingComparison) -> str:
    """The summary, one row per strategy, a mixture of experts' reads, the notes and the
    findings (each as
    ``print(report.findings)`` shows a program's)."""
    rows: list[Sequence[str] | str] = []
    notes: list[str] = []
    for r in c.results:
        row = result_row(r)
        rows.append(list(row.cells))
        notes += [f"  {r.strategy}: {n}" for n in row.notes]
    lines = [summary_line(c), ""]
    lines += aligned_table(COLUMNS, rows, right=set(range(2, len(COLUMNS))), indent="  ")
    experts = expert_lines(c)
    if experts:
        lines += ["", *textwrap.wrap(experts[0], 96)]
        for paragraph in experts[1:]:
            lines += textwrap.wrap(paragraph, 96, initial_indent="  ", subsequent_indent="    ")
    if notes:
        lines += ["", "Notes", *notes]
    if c.findings:
        lines += ["", findings_head(c)]
        for i, f in enumerate(c.findings, 1):
            lines += ["", *finding_lines(i, finding_view(f))]
    return "\n".join(lines)


def slice_text(s: SliceChoice) -> str:
    """The slice chosen and the ones tried."""
    return "\n".join(slice_lines(s))
