"""Every planted program's findings print within 99 characters a line (``print(found)`` in a
notebook wraps longer lines mid-word), without losing a word of what they say."""

from __future__ import annotations

import pytest

from shardviz.render.findings.text import LONGEST

from . import planted

PROGRAMS = (
    "involuntary_remat",
    "replicated",
    "regather",
    "reshard_chain",
    "uneven",
    "loop_collective",
    "loop_accumulation",
    "idle_axis",
    "over_hbm",
    "full_reduce",
)


@pytest.mark.parametrize("name", PROGRAMS)
def test_planted_findings_print_no_line_over_99(name: str) -> None:
    found = getattr(planted, name)().findings
    text = str(found)
    assert len(found) > 0, name
    assert [line for line in text.splitlines() if len(line) > LONGEST] == []
    words = text.split()
    for f in found:
        # the title and the fix's code (the lines that ran past 100) keep every word in order
        for said in (f.title, f.why, f.fix.code if f.fix else ""):
            assert _in_order(said.split(), words), said


def _in_order(needles: list[str], words: list[str]) -> bool:
    """``needles`` appear in ``words`` in order (a wrapped comment repeats its ``#``)."""
    it = iter(words)
    return all(any(w == n for w in it) for n in needles)
