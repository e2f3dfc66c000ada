"""Each finding's fix tried for real: applied, compiled again (compile-only), judged.

A fix is offered only if the program it gives is better at what the finding is about (fewer
full rematerializations, fewer bytes moved per step, a lower peak, fewer flops per device,
less communication on the target or less of it exposed in the predicted step, or the
problem gone without anything getting worse). The before/after figures are kept on the
finding (:class:`~shardviz.model.findings.FixCheck`) for the views.

Trying is work done when asked for: explaining a program keeps a :class:`FixTrial` (what to
try, on which program) under a key its findings carry, and :func:`try_fixes` (what
``report.try_fixes()`` calls) does it. Reading findings never compiles. A caller in the
background passes ``stop``, asked before each trial compile, to end the trying early once
nobody will see its result (the Explorer, when the user edits again).
"""

from __future__ import annotations

import time
import uuid
import weakref
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from shardviz.analysis.detect import (
    Candidate,
    CompilerEvidence,
    candidates,
    device_order,
    placement,
)
from shardviz.analysis.detect.fix_code import CodeNames, with_code
from shardviz.analysis.estimate.orders import exposed_communication
from shardviz.errors import ShardvizError, problem
from shardviz.explainer.call import Call
from shardviz.explainer.fix_apply import CannotApply, apply_fix
from shardviz.model import Report
from shardviz.model.findings import (
    Finding,
    Findings,
    FixCheck,
    Outcome,
    StopTrying,
    register_fix_trier,
)
from shardviz.model.units import format_bytes, format_percent, format_seconds

#: Fixes tried per finding at most (the first that helps is kept).
MAX_TRIES = 3
#: Goals whose judgement asks whether the finding is still there after the fix.
STILL_GOALS = frozenset({"remats", "flops", "gone"})
#: Seconds of recompiling all fixes of one program may take before the rest are skipped.
BUDGET_SECONDS = 30.0


class _Stopped(Exception):
    """Raised between two trials once the caller's ``stop()`` says so; :func:`try_fixes`
    then gives the report back untried."""


def _check_stop(stop: StopTrying | None) -> None:
    """Raise :class:`_Stopped` if ``stop`` says the trying should end here."""
    if stop is not None and stop():
        raise _Stopped


@dataclass(frozen=True)
class Tried:
    """A fixed program: its report and evidence (``error`` says why it could not be built)."""

    report: Report | None
    evidence: CompilerEvidence | None
    compiled: Any = None
    error: str = ""


def outcome(report: Report, evidence: CompilerEvidence) -> Outcome:
    """The figures a fix is judged on."""
    return Outcome(
        collectives=len(report.collectives),
        moved_bytes=sum(c.moved_bytes * (c.trips or 1) for c in report.collectives),
        peak_bytes=report.memory.peak_bytes,
        flops_per_device=report.cost.flops_per_device if report.cost else None,
        remats=len(evidence.remats),
        seconds=report.estimate.step_seconds if report.estimate else None,
        communication_seconds=report.estimate.collective_seconds if report.estimate else None,
        predicted_seconds=report.estimate.predicted_seconds if report.estimate else None,
        exposed_communication_seconds=exposed_communication(report),
    )


def _same_problem(a: Finding, b: Finding) -> bool:
    return a.kind == b.kind and (a.where.leaf, a.where.line) == (b.where.leaf, b.where.line)


def judge(cand: Candidate, before: Outcome, after: Outcome, still: bool) -> tuple[bool, str]:
    """Whether the fixed program is better at what ``cand`` is about, and a sentence."""
    moved = _change("bytes moved", before.moved_bytes, after.moved_bytes)
    peak = _change("peak", before.peak_bytes, after.peak_bytes)
    goal = cand.goal
    if goal == "remats":
        ok = after.remats < before.remats and after.moved_bytes <= before.moved_bytes
        lead = f"full rematerializations {before.remats} -> {after.remats}"
    elif goal == "moved":
        ok = after.moved_bytes < before.moved_bytes
        lead = moved
    elif goal == "peak":
        ok = after.peak_bytes < before.peak_bytes
        lead = peak
    elif goal == "communication":
        b, a = before.communication_seconds, after.communication_seconds
        ok = b is not None and a is not None and a < b and after.moved_bytes <= before.moved_bytes
        lead = (
            f"estimated communication {format_seconds(b)} -> {format_seconds(a)} per step"
            if b is not None and a is not None
            else "estimated communication unknown"
        )
    elif goal == "exposed":
        b, a = before.exposed_communication_seconds, after.exposed_communication_seconds
        bs, as_ = before.predicted_seconds, after.predicted_seconds
        if b is None or a is None or bs is None or as_ is None:
            ok, lead = False, "exposed communication unknown"
        else:
            ok = a < b and as_ < bs and after.moved_bytes <= before.moved_bytes
            lead = (
                f"exposed communication {format_seconds(b)} -> {format_seconds(a)} per step "
                f"(predicted step {format_seconds(bs)} -> {format_seconds(as_)})"
            )
    elif goal == "flops":
        b, a = before.flops_per_device, after.flops_per_device
        ok = b is not None and a is not None and a < b
        lead = f"flops per device {b:,.0f} -> {a:,.0f}" if ok else "flops per device unchanged"
    else:  # "gone": the problem is gone and nothing got worse
        ok = (
            not still
            and after.moved_bytes <= before.moved_bytes
            and after.peak_bytes <= before.peak_bytes
        )
        lead = "the problem is gone" if not still else "the problem is still there"
    # A fix for remats or repeated work must also make the finding go away.
    if still and goal in ("remats", "flops"):
        ok = False
    return ok, _weighed(lead, ok, before, after)


def _weighed(lead: str, ok: bool, before: Outcome, after: Outcome) -> str:
    """The verdict: ``lead`` (what the fix is for), then the bytes moved and the peak with
    their change in percent. A fix that helps at the price of the other figure says so
    (``..., at the cost of peak 1.1 MiB -> 1.5 MiB (+34.9%)``), so that a large cost for a
    small gain reads as the trade-off it is."""
    figures = (
        ("bytes moved", before.moved_bytes, after.moved_bytes),
        ("peak", before.peak_bytes, after.peak_bytes),
    )
    words = [(_change(what, b, a), a > b) for what, b, a in figures]
    rest = [w for w, _ in words if w != lead]
    costs = [w for w, worse in words if worse and w != lead]
    if not ok or not costs:
        return "; ".join([lead, *rest])
    gains = [w for w in rest if w not in costs]
    return "; ".join([lead, *gains]) + ", at the cost of " + " and ".join(costs)


def _change(what: str, before: int, after: int) -> str:
    """``peak 1.1 MiB -> 1.5 MiB (+34.9%)``; the percent left out from nothing."""
    if before == after:
        return f"{what} unchanged ({format_bytes(before)})"
    change = ""
    if before:
        change = f" ({'+' if after > before else ''}{format_percent(after / before - 1)})"
    return f"{what} {format_bytes(before)} -> {format_bytes(after)}{change}"


def check_fixes(
    cands: list[Candidate],
    before: Outcome,
    function: str,
    tried_fix: Any,
    budget_s: float = BUDGET_SECONDS,
    stop: StopTrying | None = None,
) -> tuple[Findings, dict[Any, Tried]]:
    """Try each candidate's fixes with ``tried_fix(fix) -> Tried`` (cached per fix), keep
    the first that helps on each finding; the findings, and the fixed program of each fix
    offered. ``stop`` is asked before each trial (raises :class:`_Stopped` when it says so).

    A finding keeps, in ``unfixed``, why none is offered: none of the changes measured
    helped, none could be compiled, or time ran out. One that is reported only with a fix
    (``only_with_fix``) is left out only when its changes were measured and none helped.
    """
    start = time.perf_counter()
    cache: dict[Any, Tried] = {}
    items: list[Finding] = []
    failed: dict[str, list[str]] = {}
    notes: list[str] = []
    skipped = 0
    for cand in cands:
        chosen: tuple[Any, FixCheck] | None = None
        verdicts: list[str] = []
        errors: list[str] = []
        out_of_time = False
        for fix in cand.fixes[:MAX_TRIES]:
            if fix not in cache:
                if time.perf_counter() - start > budget_s:
                    skipped += 1
                    out_of_time = True
                    break
                _check_stop(stop)
                cache[fix] = tried_fix(fix)
            t = cache[fix]
            if t.report is None or t.evidence is None:
                errors.append(t.error)
                failed.setdefault(t.error, [])
                if fix.description not in failed[t.error]:
                    failed[t.error].append(fix.description)
                continue
            after = outcome(t.report, t.evidence)
            # Whether the problem is still there matters only to goals judged on it (running
            # every detector, the target's included, is work the others need not do).
            still = cand.goal in STILL_GOALS and any(
                _same_problem(cand.finding, c.finding) for c in candidates(t.report, t.evidence)
            )
            helps, verdict = judge(cand, before, after, still)
            if helps:
                chosen = (fix, FixCheck(before=before, after=after, helps=True, verdict=verdict))
                break
            verdicts.append(verdict)
            note = (
                f"tried '{fix.description}' for {cand.finding.kind}: it did not help "
                f"({verdict}), so it is not offered"
            )
            if note not in notes:
                notes.append(note)
        finding = cand.finding
        if chosen is not None:
            finding = replace(finding, fix=chosen[0], check=chosen[1])
        elif verdicts:
            if cand.only_with_fix:
                continue
            n = len(verdicts)
            finding = replace(
                finding,
                unfixed=f"none of the {n} change{'s' * (n != 1)} tried helped ({verdicts[0]})"
                if n > 1
                else f"the change tried did not help ({verdicts[0]})",
            )
        elif errors:
            finding = replace(finding, unfixed=f"could not try: {errors[0]}")
        elif out_of_time:
            finding = replace(
                finding, unfixed=f"not tried: checking fixes stopped after {budget_s:.0f} s"
            )
        items.append(finding)
    notes = [_could_not_try(error, fixes) for error, fixes in failed.items()] + notes
    if skipped:
        notes.append(f"{skipped} fix(es) not tried: checking fixes stopped after {budget_s:.0f} s")
    found = Findings(function=function, items=tuple(items), notes=tuple(notes))
    kept = {f.fix: cache[f.fix] for f in items if f.fix is not None and f.fix in cache}
    return found, kept


def _could_not_try(error: str, fixes: list[str]) -> str:
    """One note for every fix that failed the same way: ``could not try 3 fixes ('…', '…',
    …): <error>``."""
    if len(fixes) == 1:
        return f"could not try '{fixes[0]}': {error}"
    named = ", ".join(f"'{d}'" for d in fixes[:2]) + (", …" if len(fixes) > 2 else "")
    return f"could not try {len(fixes)} fixes ({named}): {error}"


def tried_with(call: Call, compile_and_read: Any) -> Any:
    """``tried_fix`` for :func:`check_fixes`: apply the fix to ``call`` and compile with
    ``compile_and_read(fixed_call) -> (compiled, report, evidence)``."""

    def tried(fix: Any) -> Tried:
        try:
            comp, report, evidence = compile_and_read(apply_fix(call, fix))
        except CannotApply as err:
            return Tried(None, None, error=str(err))
        except ShardvizError as err:
            return Tried(None, None, error=str(err).splitlines()[0])
        except Exception as err:  # a fix that does not compile is not offered
            return Tried(None, None, error=f"{type(err).__name__}: {err}".splitlines()[0])
        return Tried(report, evidence, comp)

    return tried


def _with_seconds(report: Report, finding: Finding) -> Finding:
    """``finding``'s cost with its time on the report's target: the estimated seconds of
    its collectives, in proportion to the bytes the finding is about."""
    if finding.cost.kind != "moved" or not finding.where.collectives:
        return finding
    cs = [report.collectives[n - 1] for n in finding.where.collectives]
    if any(c.estimated_seconds is None for c in cs):
        return finding
    total = sum(c.moved_bytes * (c.trips or 1) for c in cs)
    seconds = sum((c.estimated_seconds or 0.0) * (c.trips or 1) for c in cs)
    share = min(1.0, finding.cost.bytes / total) if total else 0.0
    return replace(finding, cost=replace(finding.cost, seconds=seconds * share))


@dataclass(frozen=True)
class FixTrial:
    """The work of trying one program's fixes, kept until asked for.

    ``groups``: candidates and the outcome they are judged against (the over-HBM check's
    are judged against the report without the compiler's remats, as it was written).
    ``estimate(compiled, report)`` times a fixed program on the report's target.
    """

    function: str
    groups: tuple[tuple[tuple[Candidate, ...], Outcome], ...]
    tried_fix: Callable[[Any], Tried]
    estimate: Callable[[Any, Report], Report] | None = None
    #: The names the user's code gives the mesh and the leaves, for the fixes' code.
    names: CodeNames = CodeNames()


#: Trials of recently explained programs, by the key their findings carry, newest last. A
#: trial holds the user's arguments, so it is kept only while the findings carrying its key
#: live, and at most :data:`KEPT_TRIALS` of them.
TRIALS: OrderedDict[str, FixTrial] = OrderedDict()
#: Trials kept at most (a report explained longer ago is explained again to try its fixes).
KEPT_TRIALS = 64


def _kept(trial: FixTrial, findings: Findings) -> Findings:
    """``findings``, with ``trial`` kept under the key they carry while they live."""
    TRIALS[findings.trial] = trial
    weakref.finalize(findings, TRIALS.pop, findings.trial, None)
    while len(TRIALS) > KEPT_TRIALS:
        TRIALS.popitem(last=False)
    return findings


def untried_findings(trial: FixTrial, report: Report | None = None) -> Findings:
    """The findings as the detectors found them, no fix tried yet (nothing compiled); the
    trial is kept under the key they carry. With ``report`` (it has an estimate), each cost
    is timed on its target. A finding offered only with a fix that helps is left out until
    its fixes are tried."""
    items: list[Finding] = []
    untried = 0
    for cands, _ in trial.groups:
        for cand in cands:
            has_fixes = bool(cand.fixes)
            untried += has_fixes
            if not cand.only_with_fix:
                items.append(replace(cand.finding, untried=has_fixes))
    if report is not None and report.estimate is not None:
        items = [_with_seconds(report, f) for f in items]
    found = Findings(trial.function, tuple(items), untried=untried, trial=uuid.uuid4().hex)
    return _kept(trial, found)


def with_target(
    report: Report, estimate: Callable[[Any, Report], Report], tried_fix: Callable[[Any], Tried]
) -> Report:
    """``report`` (estimated on a target) with its findings timed there, an ``over-hbm``
    finding when the peak is over the target's HBM, and fixed programs to be timed there
    too once tried."""
    found = report.findings
    if found is None or report.estimate is None:
        return report
    trial = TRIALS.get(found.trial)
    if trial is None:  # findings made elsewhere: time what is there
        timed = tuple(_with_seconds(report, f) for f in found.items)
        return replace(report, findings=replace(found, items=timed))
    on_target = (*placement.over_hbm(report), *device_order.placement(report))
    more = tuple(with_code(c, trial.names) for c in on_target)
    groups = ((more, outcome(report, CompilerEvidence())), *trial.groups) if more else trial.groups
    targeted = FixTrial(
        trial.function, groups, _estimating(tried_fix, estimate), estimate, trial.names
    )
    return replace(report, findings=untried_findings(targeted, report))


def _estimating(
    tried_fix: Callable[[Any], Tried], estimate: Callable[[Any, Report], Report]
) -> Callable[[Any], Tried]:
    """``tried_fix`` whose fixed programs are estimated on the report's target too (what a
    fix judged on communication time is measured by)."""

    def tried(fix: Any) -> Tried:
        t = tried_fix(fix)
        if t.report is None or t.compiled is None:
            return t
        return replace(t, report=estimate(t.compiled, t.report))

    return tried


def try_fixes(report: Report, stop: StopTrying | None = None) -> Report:
    """``report`` with every finding's fixes tried (see :meth:`shardviz.Report.try_fixes`);
    ``report`` as it is if ``stop()`` said so before one of the trials."""
    try:
        return _tried(report, stop)
    except _Stopped:
        return report


def _tried(report: Report, stop: StopTrying | None) -> Report:
    """:func:`try_fixes`' work; raises :class:`_Stopped` when ``stop`` ends it early."""
    found = report.findings
    if found is None or not found.pending:
        return report
    trial = TRIALS.get(found.trial)
    if trial is None:
        raise ShardvizError(
            problem(
                f"the fixes of {report.function!r}",
                "the program they apply to is no longer kept in this process (a report "
                f"loaded from JSON, or one of more than {KEPT_TRIALS} explained since)",
                "explain it again and try them then: sv.explain(fn, *args).try_fixes(), or "
                "sv.diagnose(fn, *args)",
            )
        )
    items: list[Finding] = []
    notes: list[str] = []
    fixed: dict[Any, Tried] = {}
    for cands, before in trial.groups:
        got, kept = check_fixes(list(cands), before, trial.function, trial.tried_fix, stop=stop)
        items += got.items
        notes += [n for n in got.notes if n not in notes]
        fixed.update(kept)
    if report.estimate is not None:
        items = [_timed(report, f, fixed.get(f.fix), trial.estimate) for f in items]
    return replace(report, findings=Findings(trial.function, tuple(items), tuple(notes)))


def _timed(
    report: Report,
    finding: Finding,
    fixed: Tried | None,
    estimate: Callable[[Any, Report], Report] | None,
) -> Finding:
    """``finding``'s cost timed on the report's target, and its fix's before/after step."""
    assert report.estimate is not None
    finding = _with_seconds(report, finding)
    if finding.check is None or fixed is None or fixed.report is None or estimate is None:
        return finding
    after = estimate(fixed.compiled, fixed.report)
    check = replace(
        finding.check,
        before=replace(finding.check.before, seconds=report.estimate.step_seconds),
        after=replace(
            finding.check.after, seconds=after.estimate.step_seconds if after.estimate else None
        ),
    )
    return replace(finding, check=check)


register_fix_trier(try_fixes)
