"""What happens to a finding whose fixes cannot be tried or do not help: it says so, once."""

from __future__ import annotations

from shardviz.analysis.detect import Facts
from shardviz.analysis.detect.candidate import Candidate
from shardviz.explainer.fix_check import Tried, check_fixes, outcome
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
    return Tried(dp_report(), Facts())


BEFORE = outcome(dp_report(), Facts())


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
