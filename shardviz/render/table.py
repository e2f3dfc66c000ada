"""The aligned plain-text table every text view prints (reports, comparisons, projections,
pytrees): columns padded to their widest cell, a rule under the header, no trailing spaces."""

from __future__ import annotations

from collections.abc import Sequence


def aligned_table(
    header: Sequence[str],
    rows: Sequence[Sequence[str] | str],
    right: set[int],
    indent: str = "",
) -> list[str]:
    """An aligned table, one line per row.

    Args:
        header: the column titles.
        rows: the rows, one ``str`` per cell; a ``str`` in place of a row is printed as-is (a
            group header or a note) and does not widen any column.
        right: the columns aligned right (numbers); the others are aligned left.
        indent: the prefix of every line but the as-is ones.

    Returns:
        The header, a rule of ``─`` under each column, then the rows; trailing spaces cut.
    """
    cells = [r for r in rows if not isinstance(r, str)]
    widths = [max([len(header[j]), *(len(r[j]) for r in cells)]) for j in range(len(header))]

    def fmt(row: Sequence[str]) -> str:
        out = [
            c.rjust(w) if j in right else c.ljust(w)
            for j, (c, w) in enumerate(zip(row, widths, strict=True))
        ]
        return (indent + "  ".join(out)).rstrip()

    lines = [fmt(header), indent + "  ".join("─" * w for w in widths)]
    lines.extend(r if isinstance(r, str) else fmt(r) for r in rows)
    return lines
