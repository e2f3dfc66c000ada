"""The Explorer's fix trials never hold up the next edit: a new report or a new run stops them
before their next compile, a failed run lets them start again, and findings tried once are
shown again without trying (fake trials gated by threading.Event, in place of compiles)."""

from __future__ import annotations

import dataclasses
import threading

from shardviz.analysis.detect import CompilerEvidence
from shardviz.analysis.detect.candidate import Candidate
from shardviz.errors import SpecError
from shardviz.explainer.fix_check import FixTrial, Tried, outcome, untried_findings
from shardviz.model import Finding, FindingCost, Findings, Fix, Report, Where
from shardviz.widgets.explorer.findings_pane import findings_json
from shardviz.widgets.explorer.widget import ExplorerWidget
from shardviz.widgets.session import Connection
from tests.render.findings_fixtures import megatron_with_findings
from tests.render.report_fixtures import megatron_report
from tests.widgets.findings_programs import pane_said

WAIT = 30  # seconds: a ceiling against hangs, never a timing assertion
ERROR = "the fixed program did not compile"


def _candidate(n: int) -> Candidate:
    """A finding on params/w1 with one fix of its own (so each is a trial of its own)."""
    finding = Finding(
        kind="replicated",
        severity="warning",
        title=f"params/w1 is whole on every device (#{n})",
        why="…",
        cost=FindingCost("memory", 1 << 20),
        where=Where(leaf="params/w1"),
    )
    fix = Fix(kind="spec", description=f"place params/w1 as P('model') #{n}", code="P('model')")
    return Candidate(finding, (fix,), goal="peak")


class Trials:
    """A report with ``n`` fixes to try; each trial (a compile in real life) is counted and
    waits for ``gate``, open from the start unless ``gated``."""

    def __init__(self, n: int, gated: bool = True) -> None:
        self.n = n
        self.calls = 0
        self.started = threading.Event()
        self.gate = threading.Event()
        if not gated:
            self.gate.set()

    def tried(self, fix: Fix) -> Tried:
        self.calls += 1
        self.started.set()
        assert self.gate.wait(WAIT)
        return Tried(None, None, error=ERROR)

    def report(self) -> Report:
        base = megatron_report()
        cands = tuple(_candidate(i) for i in range(self.n))
        trial = FixTrial(base.function, ((cands, outcome(base, CompilerEvidence())),), self.tried)
        return dataclasses.replace(base, findings=untried_findings(trial))


class GatedSession:
    """An ExplorerSession stand-in whose run waits for ``gate``, then gives ``report`` (or
    raises ``error``)."""

    def __init__(self, report: Report | None = None, error: Exception | None = None) -> None:
        self.report, self.error = report, error
        self.gate = threading.Event()

    def run(self, config: object, stage) -> Report:
        assert self.gate.wait(WAIT)
        if self.error is not None:
            raise self.error
        assert self.report is not None
        return self.report


def _state(explorer: ExplorerWidget) -> dict:
    return pane_said(explorer.findings)


def _shown_tried(explorer: ExplorerWidget, trials: Trials) -> None:
    """The pane shows the tried findings of ``trials``' report, for the report shown now."""
    state = _state(explorer)
    assert state["state"] != "pending" and state["generation"] == explorer.generation
    assert not explorer.report.findings.pending
    assert explorer.findings == findings_json(explorer.report, explorer.generation)
    assert state["count_text"] == f"{trials.n} findings: {trials.n} warnings"


def test_a_new_report_stops_the_old_reports_trials_after_the_one_in_progress():
    old, new = Trials(5), Trials(2, gated=False)
    w = ExplorerWidget(old.report())
    assert old.started.wait(WAIT)  # the first trial is compiling
    w.show(new.report())
    old.gate.set()
    assert w._diagnoser.join(WAIT)
    assert old.calls == 1 < old.n  # the trial in progress finished; no other began
    assert new.calls == new.n
    _shown_tried(w, new)  # the new report's findings, never overwritten by the old ones


def test_a_new_run_stops_the_trials_before_its_report_is_shown():
    old, new = Trials(5), Trials(2, gated=False)
    w = ExplorerWidget(old.report())
    assert old.started.wait(WAIT)
    session = GatedSession(new.report())
    connection = Connection(w, session)  # type: ignore[arg-type]
    connection.submit("the next edit")  # type: ignore[arg-type]
    assert w.status == "compiling"
    old.gate.set()
    assert w._diagnoser.join(WAIT)  # the old trials ended while the run still waits
    assert old.calls == 1
    shown = w.generation
    assert (_state(w)["state"], _state(w)["generation"]) == ("pending", shown)
    session.gate.set()
    assert connection.wait(WAIT) and w._diagnoser.join(WAIT)
    assert w.generation == shown + 1 and new.calls == new.n
    _shown_tried(w, new)


def test_trials_a_failed_run_stopped_start_again_for_the_report_still_shown():
    old = Trials(3)
    w = ExplorerWidget(old.report())
    assert old.started.wait(WAIT)
    session = GatedSession(error=SpecError("unknown mesh axis 'x'"))
    connection = Connection(w, session)  # type: ignore[arg-type]
    connection.submit("a wrong edit")  # type: ignore[arg-type]
    old.gate.set()
    session.gate.set()
    assert connection.wait(WAIT) and w._diagnoser.join(WAIT)
    assert w.status == "error"
    assert old.calls == 1 + old.n  # one before the run stopped them, then all of them
    _shown_tried(w, old)


def test_findings_tried_once_are_shown_again_without_trying():
    trials = Trials(2, gated=False)
    report = trials.report()
    w = ExplorerWidget(report)
    assert w._diagnoser.join(WAIT) and trials.calls == 2
    w.show(megatron_with_findings(Findings("mlp_block")))
    w.show(report)  # the untried report again: its tried findings at once
    assert trials.calls == 2
    _shown_tried(w, trials)


def test_new_fix_boxes_do_not_start_the_trials_under_way_again():
    trials = Trials(2)
    w = ExplorerWidget(trials.report())
    assert trials.started.wait(WAIT)
    w.set_fix_handler(lambda finding: None, ("params/w1",))
    assert _state(w)["state"] == "pending"
    trials.gate.set()
    assert w._diagnoser.join(WAIT)
    assert trials.calls == trials.n
    assert w.findings == findings_json(w.report, w.generation, ("params/w1",))
