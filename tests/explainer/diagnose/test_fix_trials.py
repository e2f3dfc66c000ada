"""Findings are plain data: reading, printing or saving a report never compiles; trying the
fixes is work started explicitly (``report.try_fixes()``, ``sv.diagnose``)."""

from __future__ import annotations

import gc
import pickle
from dataclasses import replace

import pytest

import shardviz as sv
import shardviz.explainer.fix_check as fix_check
from shardviz.model import Report
from shardviz.model.findings import Findings

from . import planted


@pytest.fixture
def compiles(monkeypatch):
    """Every fix applied (each one is then compiled), counted."""
    calls: list[object] = []
    real = fix_check.apply_fix

    def counting(call, fix):
        calls.append(fix)
        return real(call, fix)

    monkeypatch.setattr(fix_check, "apply_fix", counting)
    return calls


def _explained(target=None) -> Report:
    fn, args = planted.replicated_program()
    return sv.explain(fn, *args, run=False, target=target)


def test_reading_printing_and_saving_a_report_never_tries_a_fix(compiles):
    report = _explained()
    found = report.findings
    assert found is not None and found.pending and found.untried == 1
    assert [f.untried for f in found] == [True] and found[0].fix is None
    text, html = str(report), report._repr_html_()
    str(found), found._repr_html_(), report.to_json(), found.to_json(), pickle.dumps(report)
    assert compiles == []
    assert "not tried yet" in text and "report.try_fixes()" in text
    assert "not tried yet" in html and "not tried yet" in str(found)


def test_try_fixes_tries_each_fix_once_and_returns_a_new_report(compiles):
    report = _explained()
    tried = report.try_fixes()
    assert len(compiles) == 1
    assert tried is not report and report.findings.pending  # the first is left as it was
    assert not tried.findings.pending and tried.findings.trial == ""
    (f,) = tried.findings.of("replicated")
    assert f.fix is not None and f.check is not None and f.check.helps and not f.untried
    assert tried.try_fixes() is tried and len(compiles) == 1  # nothing left to try
    assert "not tried yet" not in str(tried)


def test_diagnose_tries_the_fixes(compiles):
    fn, args = planted.replicated_program()
    found = sv.diagnose(fn, *args)
    assert not found.pending and found.of("replicated")[0].fix is not None
    assert len(compiles) == 1
    again = sv.diagnose(_explained())
    assert again.of("replicated")[0].check.helps


def test_on_a_target_the_fix_is_timed_there_once_tried(compiles):
    report = _explained(target="v5e")
    assert report.findings.pending and compiles == []
    (f,) = report.try_fixes().findings.of("replicated")
    assert f.check.before.seconds == report.estimate.step_seconds
    assert f.check.after.seconds is not None and f.check.after.seconds > 0


def test_a_report_whose_program_is_gone_says_to_explain_again(monkeypatch):
    report = _explained()
    loaded = Report.from_json(report.to_json())
    assert loaded.findings == report.findings and loaded.findings.pending
    monkeypatch.setattr(fix_check, "TRIALS", type(fix_check.TRIALS)())
    with pytest.raises(sv.ShardvizError, match="explain it again") as err:
        loaded.try_fixes()
    assert "try_fixes()" in str(err.value)


def test_only_the_newest_trials_are_kept(monkeypatch):
    monkeypatch.setattr(fix_check, "KEPT_TRIALS", 2)
    monkeypatch.setattr(fix_check, "TRIALS", type(fix_check.TRIALS)())
    trial = fix_check.FixTrial("f", (), lambda fix: None)
    found = [fix_check.untried_findings(trial) for _ in range(3)]  # all three still alive
    assert list(fix_check.TRIALS) == [f.trial for f in found[1:]]


def test_a_trial_and_the_arguments_it_holds_go_with_its_findings(monkeypatch):
    monkeypatch.setattr(fix_check, "TRIALS", type(fix_check.TRIALS)())
    report = _explained()
    key = report.findings.trial
    assert key in fix_check.TRIALS
    del report
    gc.collect()
    assert key in fix_check.TRIALS  # explain's program cache still holds the report
    sv.clear_cache()
    gc.collect()
    assert key not in fix_check.TRIALS


def test_findings_without_fixes_to_try_are_not_pending():
    plain = Findings("f", notes=("n",))
    assert not plain.pending and plain == replace(plain, trial="another")
    assert Findings("f", untried=1) != Findings("f")
    report = replace(_explained(), findings=plain)
    assert report.try_fixes() is report
