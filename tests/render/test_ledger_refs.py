"""A finding's ledger numbers, elided: runs of three or more as ``#3-#9``, at most eight pieces,
then ``and N more``; the same words in every place the findings views print them (text, HTML,
the Explorer's Findings pane, the report's one-line Findings list)."""

from __future__ import annotations

import dataclasses

from shardviz.model import Findings
from shardviz.model.findings import ledger_refs
from shardviz.render.findings.html import findings_html
from shardviz.render.findings.text import findings_text
from shardviz.render.findings.view import finding_view, where_rows
from shardviz.render.report.html import report_html
from shardviz.render.report.text import report_text
from shardviz.widgets.explorer.findings_pane import findings_state

from .findings_fixtures import loop_collective, megatron_with_findings

#: 91 ledger numbers: a run #3-#9, then every other number from #12.
MANY = (*range(3, 10), *range(12, 180, 2))
MANY_WORDS = "#3-#9, #12, #14, #16, #18, #20, #22, #24 and 77 more"


def test_few_numbers_are_listed_as_they_are() -> None:
    assert ledger_refs(()) == ""
    assert ledger_refs((7,)) == "#7"
    assert ledger_refs((2, 3)) == "#2, #3"
    assert ledger_refs((12, 3, 3, 5)) == "#3, #5, #12"  # sorted, each once


def test_runs_of_three_or_more_merge() -> None:
    assert ledger_refs((3, 4, 5)) == "#3-#5"
    assert ledger_refs((*range(3, 10), 12)) == "#3-#9, #12"
    assert ledger_refs(tuple(range(1, 92))) == "#1-#91"


def test_long_lists_stop_after_eight_pieces() -> None:
    assert len(MANY) == 91
    assert ledger_refs(MANY) == MANY_WORDS
    eight = tuple(range(1, 17, 2))
    assert ledger_refs(eight) == "#1, #3, #5, #7, #9, #11, #13, #15"
    assert ledger_refs((*eight, 17)) == "#1, #3, #5, #7, #9, #11, #13, #15 and 1 more"
    assert ledger_refs(MANY, cap=2) == "#3-#9, #12 and 83 more"


def _flat(text: str) -> str:
    """The text with its line wraps undone (the text views wrap long rows)."""
    return " ".join(text.split())


def test_every_findings_view_prints_the_elided_numbers() -> None:
    base = loop_collective()
    f = dataclasses.replace(base, where=dataclasses.replace(base.where, collectives=MANY))
    found = Findings("mlp_block", (f,))
    view = finding_view(f)
    assert ("collectives", MANY_WORDS) in [(r.label, r.text) for r in where_rows(f.where)]
    assert view.place == f"train.py:44 · {MANY_WORDS}"
    assert f"collectives {MANY_WORDS}" in _flat(findings_text(found))
    assert MANY_WORDS in findings_html(found)
    report = megatron_with_findings(found)
    (item,) = findings_state(report)["view"]["items"]
    assert {"label": "collectives", "text": MANY_WORDS} in item["where"]
    # The report's one-line Findings list, in text and HTML.
    assert f"(train.py:44 · {MANY_WORDS})" in _flat(report_text(report))
    assert MANY_WORDS in report_html(report)
    for text in (findings_text(found), findings_html(found), report_text(report)):
        assert "#26" not in text and "#179" not in text
