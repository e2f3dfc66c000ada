"""A report's :class:`~shardviz.model.Findings` as plain text: ``print(report.findings)``.

Deterministic (no colour codes) so a golden file pins it down. One block per finding: what
is wrong and why, what it costs, where it is, the fix and the before/after of compiling with
it. The words come from :func:`~.view.findings_view`, which the HTML view reads too.

No line is longer than :data:`LONGEST` (a notebook wraps longer ones mid-word): prose wraps
at word boundaries under its label, a title under the words after its number, and a fix's
code stays code that pastes: a trailing comment goes on ``#`` lines of its own under the
statement and a long statement breaks after a comma inside its brackets. Only a single word
longer than a line (a very long name) is left to run past it.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterator

from shardviz.model.findings import Findings
from shardviz.render.findings.view import FindingsView, FindingView, findings_view, section_view
from shardviz.render.table import aligned_table

#: Columns prose is wrapped at.
WIDTH = 96
#: The longest line the text prints (a fix's code is broken only past it).
LONGEST = 99
#: Indent of a finding's body, and the width of its labels.
BODY = "    "
LABEL = 13


#: A number and the unit or word after it ("5 KiB", "1,024 devices", "12.5% of"): kept on one
#: line; not a number that ends a clause ("file.py:141, next.py"), so a list of places wraps.
_NUMBER_WORD = re.compile(r"\b(\d(?:[\d,.]*\d)?%?) (?=[^\W\d_])")


def _wrap(text: str, indent: str, first: str | None = None) -> list[str]:
    """``text`` wrapped at :data:`WIDTH` columns, every line indented (the first by ``first``);
    a number stays on the line of the word after it."""
    lines = textwrap.wrap(
        _NUMBER_WORD.sub("\\1\0", text),
        width=WIDTH,
        initial_indent=indent if first is None else first,
        subsequent_indent=indent,
        break_long_words=False,
        break_on_hyphens=False,
    )
    return [line.replace("\0", " ") for line in lines] or [
        (indent if first is None else first).rstrip()
    ]


def _labelled(label: str, text: str) -> list[str]:
    """``label`` then ``text`` wrapped under itself (a where row, the cost, a missing fix)."""
    return _wrap(text, BODY + " " * LABEL, first=BODY + label.ljust(LABEL))


def _outside_strings(line: str) -> Iterator[tuple[int, str]]:
    """``(index, character)`` of ``line``'s characters outside its string literals."""
    quote = ""
    escaped = False
    for i, ch in enumerate(line):
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        else:
            yield i, ch


def _split_comment(line: str) -> tuple[str, str]:
    """``line`` as its statement and its trailing ``# comment`` (``""`` when none)."""
    for i, ch in _outside_strings(line):
        if ch == "#":
            return line[:i].rstrip(), line[i:]
    return line, ""


def _breaks(statement: str) -> list[int]:
    """Where ``statement`` may go on to a new line: after each ``, `` inside brackets and
    outside string literals (Python continues such a line without a backslash)."""
    out: list[int] = []
    depth = 0
    for i, ch in _outside_strings(statement):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth > 0 and statement[i + 1 : i + 2] == " ":
            out.append(i + 2)
    return out


def _statement_lines(statement: str, pad: str) -> list[str]:
    """``statement`` at ``pad``, broken after commas inside its brackets so that each line
    fits in :data:`LONGEST` (continuations indented four more); a piece with no break that
    fits is left whole."""
    lines: list[str] = []
    start, indent = 0, pad
    cuts = _breaks(statement)
    while len(indent) + len(statement) - start > LONGEST:
        room = LONGEST - len(indent)
        fits = [c for c in cuts if start < c and c - start - 1 <= room]
        later = [c for c in cuts if start < c]
        cut = fits[-1] if fits else (later[0] if later else None)
        if cut is None:
            break
        lines.append(indent + statement[start:cut].rstrip())
        start, indent = cut, pad + "    "
    lines.append((indent + statement[start:]).rstrip())
    return lines


def _comment_lines(comment: str, pad: str) -> list[str]:
    """A ``# comment`` wrapped on ``#`` lines at ``pad``, continuations indented within the
    comment; a ``# `` inside it stays with its next word and a `quoted span` stays whole."""
    text = comment.removeprefix("#").strip()
    text = text.replace("# ", "#\0")
    text = re.sub(r"`[^`]*`", lambda m: m.group(0).replace(" ", "\0"), text)
    lines = textwrap.wrap(
        text,
        width=LONGEST,
        initial_indent=pad + "# ",
        subsequent_indent=pad + "#   ",
        break_long_words=False,
        break_on_hyphens=False,
    )
    return [line.replace("\0", " ") for line in lines] or [pad + "#"]


def code_lines(code: str, pad: str) -> list[str]:
    """A fix's code at ``pad``, each line within :data:`LONGEST` where it can be: a line
    that fits is kept as written; else its trailing comment goes on ``#`` lines under it and
    its statement breaks after commas inside its brackets. What is printed still runs."""
    lines: list[str] = []
    for line in code.splitlines():
        if len(pad) + len(line) <= LONGEST:
            lines.append((pad + line).rstrip())
            continue
        statement, comment = _split_comment(line)
        if statement:
            lines.extend(_statement_lines(statement, pad))
        if comment:
            lines.extend(_comment_lines(comment, pad))
    return lines


def finding_lines(i: int, f: FindingView) -> list[str]:
    """One finding's block: ``i. severity · kind · title``, why, cost, where, the fix."""
    number = f"{i}. "
    lines = _wrap(f"{f.severity} · {f.kind} · {f.title}", " " * len(number), first=number)
    lines.extend(_wrap(f.why, BODY))
    lines.extend(_labelled("cost", f.cost))
    for row in f.where:
        lines.extend(_labelled(row.label, row.text))
    pad = BODY + " " * LABEL
    if f.fix is None:
        lines.extend(_labelled("fix", f.no_fix))
        return lines
    lines.extend(_labelled("fix", f.fix.description))
    lines.extend(code_lines(f.fix.code, pad))
    c = f.check
    if c is None:
        lines.extend(_labelled("check", "not tried"))
        return lines
    head = f"{c.word}: {c.verdict}" if c.verdict else c.word
    lines.extend(_labelled("check", head))
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
    head = _wrap(f"Findings · {view.function} · {view.count}", "    ", first="")
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
