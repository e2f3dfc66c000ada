"""A strategy whose program has a kernel not counted: compare's estimate table marks its step
and MFU, a note under the table names the kernel, and its estimate line says it is not a
bound; the other strategies read as before. Every kernel string escaped in the HTML."""

from __future__ import annotations

from shardviz.render.compare.html import comparison_html
from shardviz.render.compare.text import comparison_text
from shardviz.render.compare.view import NOT_A_BOUND_MARK, comparison_view

from .compare_fixtures import NASTY, QUOTES, comparison_kernels, comparison_kernels_nasty
from .test_html import Doc

MISSING = (
    "not a bound: 3 calls of `splash_mha_bwd` not counted: flops and time for them are "
    "missing (its grid could not be read)"
)


def test_the_view_marks_the_strategy_whose_estimate_is_no_bound() -> None:
    view = comparison_view(comparison_kernels())
    marks = {s.strategy: s.estimate.mark for s in view.strategies if s.estimate is not None}
    assert marks == {"dp": "", "fsdp": NOT_A_BOUND_MARK, "tp": ""}
    fsdp = view.strategies[1].estimate
    assert fsdp is not None and not fsdp.bounded and fsdp.not_a_bound == MISSING
    assert fsdp.at_least.endswith("(not a bound)")
    assert view.not_bounds == ((NOT_A_BOUND_MARK, "fsdp", MISSING),)


def test_text_marks_the_figures_and_names_the_kernel() -> None:
    text = comparison_text(comparison_kernels())
    lines = text.splitlines()
    table = next(b for b in text.split("\n\n") if "Estimated step per device" in b).splitlines()
    row = next(x for x in table if x.startswith("  fsdp  "))
    assert row.count(f" {NOT_A_BOUND_MARK}") == 2  # the step and the MFU
    assert not any(NOT_A_BOUND_MARK in x for x in table if x.startswith(("  dp ", "  tp ")))
    assert f"  {NOT_A_BOUND_MARK} fsdp: {MISSING}" in lines
    line = next(x for x in lines if x.startswith("  estimated on") and "70.9 µs" in x)
    assert "step 70.9 µs (communication-bound, MFU 0.27%)" in line
    assert line.endswith(f"; {MISSING}") and "≥" not in line and "≤" not in line
    dp = next(x for x in lines if x.startswith("  estimated on") and "49.9 µs" in x)
    assert "step ≥ 49.9 µs" in dp and "not a bound" not in dp


def test_html_marks_the_row_and_notes_the_kernel() -> None:
    doc = Doc(comparison_html(comparison_kernels()))
    rows = {r["data-strategy"]: r for r in doc.with_class("sv-cmp-estrow")}
    assert rows["fsdp"].get("data-bounded") == "0"
    assert rows["dp"].get("data-bounded") is None and rows["tp"].get("data-bounded") is None
    marks = doc.with_class("sv-cmp-notbound")
    assert len(marks) == 2 and {m["title"] for m in marks} == {MISSING}
    (note,) = doc.with_class("sv-cmp-notbounds")
    assert f"{NOT_A_BOUND_MARK} fsdp {MISSING}" in doc.all_text


def test_kernel_strings_are_escaped_in_the_comparison() -> None:
    out = comparison_html(comparison_kernels_nasty())
    assert NASTY not in out and QUOTES not in out
    assert "`k&lt;script&gt;alert(1)&lt;/script&gt;a&quot;b&#x27;c&amp;d` not counted" in out
    doc = Doc(out)
    assert f"`k{NASTY}{QUOTES}` not counted" in doc.all_text
    assert all(f"k{NASTY}{QUOTES}" in m["title"] for m in doc.with_class("sv-cmp-notbound"))
