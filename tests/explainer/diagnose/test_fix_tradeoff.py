"""A fix's verdict weighs the bytes moved against the peak (issue 40): a fix that helps with
what its finding is about but makes the other figure worse says what it costs, in percent,
and its check is called a trade-off, not plainly "helps".

The figures are notebook 10's: section 3's regather fix (bytes moved -1.75%, peak +34.9%) and
section 2's forgotten weight (peak -34.6%, bytes moved +16.7%)."""

from __future__ import annotations

from shardviz.analysis.detect.candidate import Candidate
from shardviz.explainer.fix_check import judge
from shardviz.model.findings import Finding, FindingCost, FixCheck, Outcome, Where
from shardviz.render.findings.view import check_word


def _cand(goal: str) -> Candidate:
    finding = Finding(
        kind="regather",
        severity="warning",
        title="w is gathered 4 times per step",
        why="…",
        cost=FindingCost("moved", 458_752),
        where=Where(leaf="w"),
    )
    return Candidate(finding, (), goal=goal)


def _outcome(moved: int, peak: int) -> Outcome:
    return Outcome(
        collectives=4, moved_bytes=moved, peak_bytes=peak, flops_per_device=None, remats=0
    )


REGATHER = (_outcome(1_634_304, 1_196_352), _outcome(1_605_632, 1_613_848))
FORGOTTEN = (_outcome(344_064, 663_552), _outcome(401_408, 434_176))


def test_fewer_bytes_for_a_higher_peak_is_a_trade_off_with_both_changes_in_percent() -> None:
    before, after = REGATHER
    ok, verdict = judge(_cand("moved"), before, after, still=False)
    assert ok  # it does move fewer bytes: offered, with its cost
    assert verdict == (
        "bytes moved 1.6 MiB -> 1.5 MiB (-1.75%), at the cost of peak 1.1 MiB -> 1.5 MiB (+34.9%)"
    )
    assert check_word(FixCheck(before, after, ok, verdict)) == "trade-off"


def test_a_lower_peak_for_more_bytes_moved_is_a_trade_off_too() -> None:
    before, after = FORGOTTEN
    ok, verdict = judge(_cand("peak"), before, after, still=False)
    assert ok
    assert verdict == (
        "peak 648 KiB -> 424 KiB (-34.6%), at the cost of bytes moved 336 KiB -> 392 KiB (+16.7%)"
    )
    assert check_word(FixCheck(before, after, ok, verdict)) == "trade-off"


def test_a_fix_that_makes_nothing_worse_plainly_helps() -> None:
    before, after = _outcome(2_662, 3_686), _outcome(128, 1_229)
    ok, verdict = judge(_cand("moved"), before, after, still=False)
    assert ok and "at the cost" not in verdict
    assert verdict == "bytes moved 2.6 KiB -> 128 B (-95.2%); peak 3.6 KiB -> 1.2 KiB (-66.7%)"
    assert check_word(FixCheck(before, after, ok, verdict)) == "helps"


def test_a_fix_that_does_not_help_lists_the_figures_without_weighing_them() -> None:
    before, after = REGATHER
    ok, verdict = judge(_cand("peak"), before, after, still=False)  # the peak rose
    assert not ok and "at the cost" not in verdict
    assert verdict.startswith("peak 1.1 MiB -> 1.5 MiB (+34.9%); bytes moved")
    assert check_word(FixCheck(before, after, ok, verdict)) == "does not help"


def test_from_nothing_there_is_no_percent() -> None:
    ok, verdict = judge(_cand("peak"), _outcome(0, 20 << 30), _outcome(9 << 20, 11 << 30), False)
    assert ok and "at the cost of bytes moved 0 B -> 9 MiB" in verdict
    assert "%)" not in verdict.split("at the cost of")[1]
