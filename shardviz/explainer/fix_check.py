"""Each finding's fix tried for real: applied, compiled again (compile-only), judged.

A fix is offered only if the program it gives is better at what the finding is about (fewer
full rematerializations, fewer bytes moved per step, a lower peak, fewer flops per device,
or the problem gone without anything getting worse). The before/after figures are kept on
the finding (:class:`~shardviz.model.findings.FixCheck`) for the views.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from shardviz.analysis.detect import Candidate, Facts, candidates, placement
from shardviz.errors import ShardvizError
from shardviz.explainer.fix_apply import CannotApply, apply_fix
from shardviz.model import Report
from shardviz.model.findings import Finding, Findings, FixCheck, Outcome
from shardviz.model.units import format_bytes

#: Fixes tried per finding at most (the first that helps is kept).
MAX_TRIES = 3
#: Seconds of recompiling all fixes of one program may take before the rest are skipped.
BUDGET_SECONDS = 30.0


@dataclass(frozen=True)
class Tried:
    """A fixed program: its report and facts (``error`` says why it could not be built)."""

    report: Report | None
    facts: Facts | None
    compiled: Any = None
    error: str = ""


def outcome(report: Report, facts: Facts) -> Outcome:
    """The figures a fix is judged on."""
    return Outcome(
        collectives=len(report.collectives),
        moved_bytes=sum(c.moved_bytes * (c.trips or 1) for c in report.collectives),
        peak_bytes=report.memory.peak_bytes,
        flops_per_device=report.cost.flops_per_device if report.cost else None,
        remats=len(facts.remats),
        seconds=report.estimate.step_seconds if report.estimate else None,
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
    rest = [x for x in (moved, peak) if x != lead]
    # A fix for remats or repeated work must also make the finding go away.
    if still and goal in ("remats", "flops"):
        ok = False
    return ok, f"{lead}; " + "; ".join(rest)


def _change(what: str, before: int, after: int) -> str:
    if before == after:
        return f"{what} unchanged ({format_bytes(before)})"
    return f"{what} {format_bytes(before)} -> {format_bytes(after)}"


def check_fixes(
    cands: list[Candidate],
    before: Outcome,
    function: str,
    tried_fix: Any,
    budget_s: float = BUDGET_SECONDS,
) -> Findings:
    """Try each candidate's fixes with ``tried_fix(fix) -> Tried`` (cached per fix), keep
    the first that helps on each finding, and return the findings."""
    start = time.perf_counter()
    cache: dict[Any, Tried] = {}
    items: list[Finding] = []
    notes: list[str] = []
    skipped = 0
    for cand in cands:
        chosen: tuple[Any, FixCheck] | None = None
        for fix in cand.fixes[:MAX_TRIES]:
            if fix not in cache:
                if time.perf_counter() - start > budget_s:
                    skipped += 1
                    break
                cache[fix] = tried_fix(fix)
            t = cache[fix]
            if t.report is None or t.facts is None:
                notes.append(f"could not try '{fix.description}': {t.error}")
                continue
            after = outcome(t.report, t.facts)
            still = any(
                _same_problem(cand.finding, c.finding) for c in candidates(t.report, t.facts)
            )
            helps, verdict = judge(cand, before, after, still)
            if helps:
                chosen = (fix, FixCheck(before=before, after=after, helps=True, verdict=verdict))
                break
            notes.append(
                f"tried '{fix.description}' for {cand.finding.kind}: it did not help "
                f"({verdict}), so it is not offered"
            )
        finding = cand.finding
        if chosen is not None:
            finding = replace(finding, fix=chosen[0], check=chosen[1])
        elif cand.only_with_fix:
            continue
        items.append(finding)
    if skipped:
        notes.append(f"{skipped} fix(es) not tried: checking fixes stopped after {budget_s:.0f} s")
    found = Findings(function=function, items=tuple(items), notes=tuple(notes))
    kept = {f.fix: cache[f.fix] for f in items if f.fix is not None and f.fix in cache}
    if kept:
        _recent[id(found)] = (found, kept)
        while len(_recent) > RECENT:
            _recent.popitem(last=False)
    return found


def checked_later(
    cands: list[Candidate], before: Outcome, function: str, tried_fix: Any
) -> Findings:
    """:func:`check_fixes`, run the first time the findings are looked at (no compile at all
    when no finding has a fix to try)."""
    if not any(c.fixes for c in cands):
        return check_fixes(cands, before, function, tried_fix)

    def work() -> Findings:
        done = check_fixes(cands, before, function, tried_fix)
        _remember_as(later, done)
        return done

    later = Findings.later(function, work)
    return later


def _remember_as(alias: Findings, found: Findings) -> None:
    """The fixed programs of ``found`` are also ``alias``'s (a lazy twin)."""
    entry = _recent.get(id(found))
    if entry is not None and entry[0] is found:
        mine = _recent.get(id(alias))
        kept = {**(mine[1] if mine is not None and mine[0] is alias else {}), **entry[1]}
        _recent[id(alias)] = (alias, kept)


def tried_with(fn: Any, args: tuple, compile_and_read: Any) -> Any:
    """``tried_fix`` for :func:`check_fixes`: apply the fix to ``fn``/``args`` and compile
    with ``compile_and_read(fn, args) -> (compiled, report, facts)``."""

    def tried(fix: Any) -> Tried:
        try:
            new_fn, new_args = apply_fix(fn, args, fix)
            comp, report, facts = compile_and_read(new_fn, new_args)
        except CannotApply as err:
            return Tried(None, None, error=str(err))
        except ShardvizError as err:
            return Tried(None, None, error=str(err).splitlines()[0])
        except Exception as err:  # a fix that does not compile is not offered
            return Tried(None, None, error=f"{type(err).__name__}: {err}".splitlines()[0])
        return Tried(report, facts, comp)

    return tried


#: The fixed programs of recent diagnoses (by their findings), so an estimate on a target
#: can time them too.
_recent: OrderedDict[int, tuple[Findings, dict[Any, Tried]]] = OrderedDict()
RECENT = 64


def _fixed_program(found: Findings, fix: Any) -> Tried | None:
    entry = _recent.get(id(found))
    if entry is None or entry[0] is not found:
        return None
    return entry[1].get(fix)


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


def on_target(
    report: Report,
    estimate: Callable[[Any, Report], Report],
    tried_fix: Callable[[Any], Tried],
) -> Report:
    """``report``'s findings with times on its target (costs, and each fix's before/after
    step time), plus an ``over-hbm`` finding when the peak is over the target's HBM; worked
    out when the findings are first looked at."""
    found = report.findings
    if found is None or report.estimate is None:
        return report

    def work() -> Findings:
        done = _on_target_now(report, found, estimate, tried_fix)
        _remember_as(later, done)
        return done

    later = Findings.later(found.function, work)
    return replace(report, findings=later)


def _on_target_now(
    report: Report,
    found: Findings,
    estimate: Callable[[Any, Report], Report],
    tried_fix: Callable[[Any], Tried],
) -> Findings:
    assert report.estimate is not None
    step = report.estimate.step_seconds
    sources = [found]
    items = list(found.items)
    notes = found.notes
    hbm = placement.over_hbm(report)
    if hbm:
        extra = check_fixes(hbm, outcome(report, Facts()), found.function, tried_fix)
        sources.append(extra)
        items = [*extra.items, *items]
        notes = (*notes, *extra.notes)
    timed = []
    for finding in items:
        finding = _with_seconds(report, finding)
        fixed = next(
            (t for src in sources if (t := _fixed_program(src, finding.fix)) is not None), None
        )
        if finding.check is not None and fixed is not None and fixed.report is not None:
            after = estimate(fixed.compiled, fixed.report)
            secs = after.estimate.step_seconds if after.estimate else None
            check = replace(
                finding.check,
                before=replace(finding.check.before, seconds=step),
                after=replace(finding.check.after, seconds=secs),
            )
            finding = replace(finding, check=check)
        timed.append(finding)
    items = timed
    out = Findings(function=found.function, items=tuple(items), notes=tuple(notes))
    for src in sources:
        _remember_as(out, src)
    return out
