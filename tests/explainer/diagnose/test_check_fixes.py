"""What happens to a finding whose fixes cannot be tried or do not help: it says so, once."""

from __future__ import annotations

from dataclasses import replace

from shardviz.analysis.detect import CompilerEvidence
from shardviz.analysis.detect.candidate import Candidate
from shardviz.explainer.fix_check import FixTrial, Tried, check_fixes, outcome, untried_findings
from shardviz.model import Report
from shardviz.model.findings import Finding, FindingCost, Fix, Where
from shardviz.render.findings.view import findings_view
from tests.render.report_fixtures import dp_report

ERROR = "ValueError: Received incompatible devices for jitted computation"


def _finding(leaf: str) -> Finding:
    return Finding(
        kind="replicated",
        severity="warning",
        title=f"{leaf} is whole on every device",
        why="…",
        cost=FindingCost("memory", 1 << 20),
        where=Where(leaf=leaf),
    )


def _fix(leaf: str, n: int = 0) -> Fix:
    return Fix(
        kind="spec", description=f"place {leaf} as P('data') #{n}", code="P('data')", leaf=leaf
    )


def _cand(leaf: str, fixes: int = 1, only_with_fix: bool = True) -> Candidate:
    fs = tuple(_fix(leaf, n) for n in range(fixes))
    return Candidate(_finding(leaf), fs, goal="peak", only_with_fix=only_with_fix)


def _failing(fix: Fix) -> Tried:
    return Tried(None, None, error=ERROR)


def _unchanged(fix: Fix) -> Tried:
    return Tried(dp_report(), CompilerEvidence())


BEFORE = outcome(dp_report(), CompilerEvidence())


def test_a_finding_whose_fixes_cannot_be_tried_is_kept_and_says_why():
    found, kept = check_fixes([_cand(f"w{i}") for i in range(28)], BEFORE, "step", _failing)
    assert len(found) == 28 and not kept
    assert all(f.fix is None and f.unfixed == f"could not try: {ERROR}" for f in found)
    # One note for the 28 failures, not 28 notes.
    assert found.notes == (f"could not try 28 fixes ('place w0 as P('data') #0', 'place w1 as "
                           f"P('data') #0', …): {ERROR}",)  # fmt: skip
    words = findings_view(found).items[0].no_fix
    assert words == f"none offered: could not try: {ERROR}"
    assert "no change shardviz tried helps" not in words


def test_only_a_measured_change_that_does_not_help_drops_an_only_with_fix_finding():
    found, _ = check_fixes([_cand("w", fixes=2)], BEFORE, "step", _unchanged)
    assert len(found) == 0
    assert len(found.notes) == 2 and all("did not help" in n for n in found.notes)


def test_a_finding_reported_anyway_says_how_many_changes_were_measured():
    found, _ = check_fixes([_cand("w", fixes=2, only_with_fix=False)], BEFORE, "step", _unchanged)
    (f,) = found
    assert f.unfixed.startswith("none of the 2 changes tried helped (")
    assert findings_view(found).items[0].no_fix.startswith("none offered: none of the 2 changes")


def test_no_change_to_try_is_not_called_tried():
    found, _ = check_fixes([_cand("w", fixes=0, only_with_fix=False)], BEFORE, "step", _failing)
    (f,) = found
    assert f.unfixed == "" and not found.notes
    assert (
        findings_view(found).items[0].no_fix == "none known: shardviz has no change to try for this"
    )


def test_out_of_time_says_not_tried():
    found, _ = check_fixes([_cand("w")], BEFORE, "step", _failing, budget_s=-1.0)
    (f,) = found
    assert f.unfixed.startswith("not tried: checking fixes stopped")
    assert found.notes[-1].startswith("1 fix(es) not tried")


def _untried(n: int, tried: list[Fix]) -> Report:
    """dp_report with ``n`` findings whose fixes are not tried yet; each trial is recorded in
    ``tried`` and fails (a stand-in for a compile)."""

    def trial(fix: Fix) -> Tried:
        tried.append(fix)
        return _failing(fix)

    cands = tuple(_cand(f"w{i}", only_with_fix=False) for i in range(n))
    return replace(
        dp_report(), findings=untried_findings(FixTrial("step", ((cands, BEFORE),), trial))
    )


def test_try_fixes_stops_before_the_next_trial_and_gives_the_report_back_untried():
    tried: list[Fix] = []
    report = _untried(5, tried)
    back = report.try_fixes(stop=lambda: len(tried) >= 2)
    assert len(tried) == 2  # asked before each trial: the third never began
    assert back is report and back.findings.pending


def test_try_fixes_never_stopped_tries_every_fix_and_one_stopped_at_once_tries_none():
    tried: list[Fix] = []
    report = _untried(5, tried)
    assert report.try_fixes(stop=lambda: True) is report and tried == []
    back = report.try_fixes(stop=lambda: False)
    assert len(tried) == 5 and not back.findings.pending
    assert all(f.unfixed == f"could not try: {ERROR}" for f in back.findings)
