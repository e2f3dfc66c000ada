"""A report's :class:`~shardviz.model.Findings` as plain text: ``print(report.findings)``.

Deterministic (no colour codes) so a golden file pins it down. One block per finding: what
is wrong and why, what it costs, where it is, the fix and the before/after of compiling with
it. The words come from :func:`~.view.findings_view`, which the HTML view reads too.
"""

from __future__ import annotations

import textwrap

from shardviz.model.findings import Findings
from shardviz.render.findings.view import FindingsView, FindingView, findings_view, section_view
from shardviz.render.table import aligned_table

#: Columns prose is wrapped at.
WIDTH = 96
#: Indent of a finding's body, and the width of its labels.
BODY = "    "
LABEL = 13


def _wrap(text: str, indent: str, first: str | None = None) -> list[str]:
    """``text`` wrapped at :data:`WIDTH` columns, every line indented (the first by ``first``)."""
    return textwrap.wrap(
        text,
        width=WIDTH,
        initial_indent=indent if first is None else first,
        subsequent_indent=indent,
        break_long_words=False,
        break_on_hyphens=False,
    ) or [(indent if first is None else first).rstrip()]


def _labelled(label: str, text: str) -> str:
    return (BODY + label.ljust(LABEL) + text).rstrip()


def finding_lines(i: int, f: FindingView) -> list[str]:
    """One finding's block: ``i. severity · kind · title``, why, cost, where, the fix."""
    lines = [f"{i}. {f.severity} · {f.kind} · {f.title}"]
    lines.extend(_wrap(f.why, BODY))
    lines.append(_labelled("cost", f.cost))
    for row in f.where:
        lines.append(_labelled(row.label, row.text))
    pad = BODY + " " * LABEL
    if f.fix is None:
        lines.append(_labelled("fix", f.no_fix))
        return lines
    lines.extend(_wrap(f.fix.description, pad, first=BODY + "fix".ljust(LABEL)))
    lines.extend(f"{pad}{code}".rstrip() for code in f.fix.code.splitlines())
    c = f.check
    if c is None:
        lines.append(_labelled("check", "not tried"))
        return lines
    head = f"{c.word}: {c.verdict}" if c.verdict else c.word
    lines.extend(_wrap(head, pad, first=BODY + "check".ljust(LABEL)))
    lines.append(f"{pad}compiled before and after (compile-only), per device:")
    rows = [[r.label, r.before, r.after] for r in c.rows]
    lines.extend(aligned_table(["", "before", "after"], rows, right={1, 2}, indent=pad))
    return lines


def findings_text(findings: Findings | FindingsView) -> str:
    """Findings as text: a header (the function, how many of each severity, what was checked
    for), one block per finding, then the notes.

    Args:
        findings: the findings (from a report or built by hand), or their view.

    Returns:
        Deterministic lines joined by newlines, no trailing newline.
    """
    view = findings if isinstance(findings, FindingsView) else findings_view(findings)
    head = [f"Findings · {view.function} · {view.count}"]
    head.extend(_wrap(view.checked, "  "))
    if view.untried:
        head.extend(_wrap(view.untried, "  "))
    sections = [head]
    sections.extend(finding_lines(i, f) for i, f in enumerate(view.items, 1))
    if view.notes:
        notes = ["Notes"]
        for n in view.notes:
            notes.extend(_wrap(n, "    ", first="  - "))
        sections.append(notes)
    return "\n\n".join("\n".join(s) for s in sections)


def findings_section_lines(findings: Findings | FindingsView | None) -> list[str]:
    """The report's compact Findings section: one line per finding (severity, kind, title,
    ledger numbers) and its fix with the check's verdict; ``[]`` when there is nothing to
    show (not diagnosed, or no findings) so reports without findings print as before."""
    view = findings if isinstance(findings, FindingsView) else section_view(findings)
    if view is None:
        return []
    lines = [f"Findings · {view.count} · details: print(report.findings)"]
    if view.untried:
        lines.append(f"  {view.untried}")
    for i, f in enumerate(view.items, 1):
        lines.append(
            f"  {i}. {f.severity} · {f.kind} · {f.title}" + (f" ({f.place})" if f.place else "")
        )
        if f.summary:
            lines.append(f"     {f.summary}")
    return lines
