"""The aligned plain-text table every text view prints."""

from __future__ import annotations

from shardviz.render.table import aligned_table


def test_columns_fit_the_widest_cell_and_numbers_align_right() -> None:
    lines = aligned_table(["name", "n"], [["a", "100"], ["long name", "2"]], right={1})
    assert lines == [
        "name         n",
        "─────────  ───",
        "a          100",
        "long name    2",
    ]


def test_notes_are_printed_as_is_and_do_not_widen_columns() -> None:
    rows = [["x", "1"], "  a note much wider than every column", ["y", "22"]]
    lines = aligned_table(["k", "v"], rows, right=set(), indent="  ")
    assert lines == [
        "  k  v",
        "  ─  ──",
        "  x  1",
        "  a note much wider than every column",
        "  y  22",
    ]


def test_no_trailing_spaces_and_an_empty_table() -> None:
    assert aligned_table(["a", "b"], [["1", ""]], right=set()) == ["a  b", "─  ─", "1"]
    assert aligned_table(["a"], [], right=set(), indent="  ") == ["  a", "  ─"]
