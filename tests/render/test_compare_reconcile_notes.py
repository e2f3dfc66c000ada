"""The comparison's "reconciled" footnote says a reason once (issue 40: with four strategies
on a TPU it printed the layout-padding sentence four times): strategies with the same
figures share a line, a reason several lines share follows them once naming them all, and a
reason one line has stays inside it."""

from __future__ import annotations

import dataclasses
import itertools

from shardviz.model.compare import Comparison, StrategyResult
from shardviz.render.compare.html import comparison_html
from shardviz.render.compare.view import TPU_PADDING, comparison_view

from .compare_fixtures import NASTY, comparison, dp_result, fsdp_result, tp_result


def _padded(r: StrategyResult, extra: int, platform: str = "tpu", name: str = "") -> StrategyResult:
    """``r`` on ``platform`` with the compiler's argument bytes ``extra`` above its leaves'."""
    m = r.memory
    memory = dataclasses.replace(m, arguments_from_compiler=m.arguments_from_leaves + extra)
    report = dataclasses.replace(r.report, platform=platform)
    out = dataclasses.replace(r, memory=memory, report=report)
    return dataclasses.replace(out, strategy=name, title=name) if name else out


def _notes_block(html: str) -> str:
    block = html[html.index('class="sv-cmp-line sv-cmp-reconnotes"') :]
    return block[: block.index("</div></div>")]


def test_four_strategies_padded_alike_share_one_line_and_one_reason() -> None:
    dp = dp_result()
    same = tuple(_padded(dp, 891_008, name=n) for n in ("dp", "zero1", "zero2", "zero3"))
    c = Comparison("mlp", 1, "float32", same)
    (note,) = comparison_view(c).reconcile_notes
    assert note.labels == ("dp", "zero1", "zero2", "zero3")
    assert f"compiler +891,008 B; not reconciled: {TPU_PADDING})" in note.text
    block = _notes_block(comparison_html(c))
    assert block.count("lays each array out in tiles") == 1
    assert "<b>dp, zero1, zero2, zero3</b> arguments: leaves" in block


def test_different_figures_each_have_their_line_and_the_reason_once_after_them() -> None:
    results = (_padded(dp_result(), 1024), _padded(fsdp_result(), 2048), tp_result())
    c = Comparison("mlp", 1, "float32", results)
    notes = comparison_view(c).reconcile_notes
    assert [n.labels for n in notes] == [("dp",), ("fsdp",), ("dp", "fsdp")]
    assert notes[0].text.endswith("(compiler +1,024 B; not reconciled)")
    assert notes[1].text.endswith("(compiler +2,048 B; not reconciled)")
    assert notes[2].text == f"compiler above the leaves: {TPU_PADDING}"
    block = _notes_block(comparison_html(c))
    assert block.count("lays each array out in tiles") == 1
    assert 'data-strategy="dp, fsdp"' in block and 'data-strategy="tp"' not in block
    # each badge's tooltip still carries its own figures and the reason
    view = comparison_view(c)
    assert all(TPU_PADDING in s.reconcile_line for s in view.strategies if not s.reconciled)


def test_a_reason_one_strategy_has_stays_in_its_line_and_none_is_invented() -> None:
    # on a GPU no reason is known; a compiler figure below the leaves' has none either
    results = (_padded(dp_result(), 64, "gpu"), _padded(fsdp_result(), -64), tp_result())
    c = Comparison("mlp", 1, "float32", results)
    notes = comparison_view(c).reconcile_notes
    assert [n.labels for n in notes] == [("dp",), ("fsdp",)]
    assert all("tiles" not in n.text for n in notes)
    assert notes[1].text.endswith("(compiler -64 B; not reconciled)")
    one = Comparison("mlp", 1, "float32", (_padded(dp_result(), 64), tp_result()))
    (note,) = comparison_view(one).reconcile_notes
    assert note.labels == ("dp",) and note.text.endswith(f": {TPU_PADDING})")
    assert comparison_view(comparison()).reconcile_notes == ()


def test_strategy_names_are_escaped_in_the_footnote() -> None:
    results = tuple(_padded(dp_result(), 8, name=n) for n in (NASTY, "dp"))
    block = _notes_block(comparison_html(Comparison("mlp", 1, "float32", results)))
    assert NASTY not in block and "&lt;script&gt;" in block


def test_the_text_says_a_shared_reason_once_in_its_notes() -> None:
    from shardviz.render.compare.text import comparison_text

    results = (_padded(dp_result(), 1024), _padded(fsdp_result(), 2048), tp_result())
    text = comparison_text(Comparison("mlp", 1, "float32", results))
    flat = " ".join(text.split())  # the notes wrap at 99 characters
    assert flat.count(TPU_PADDING) == 1  # not once per strategy block
    notes = text[text.index("\nNotes\n") :]
    assert "dp, fsdp: arguments, compiler above the leaves:" in notes
    assert "arguments: leaves" in text and "(compiler +1,024 B; not reconciled)" in text
    lines = notes.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("  dp, fsdp:"))
    rest = itertools.takewhile(lambda x: x.startswith("    "), lines[start + 1 :])
    mine = [lines[start], *rest]
    assert len(mine) > 1 and all(len(line) < 100 for line in mine)
    # one strategy with the reason keeps it in its own block
    alone = comparison_text(Comparison("mlp", 1, "float32", (_padded(dp_result(), 1024),)))
    assert " ".join(alone.split()).count(TPU_PADDING) == 1
    assert "compiler above the leaves" not in alone
