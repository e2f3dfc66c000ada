"""The words and figures the findings views print, computed once for text and HTML.

:mod:`.text`, :mod:`.html` and the findings section of the report views
read these, so a figure reads the same in ``print(report.findings)``, in a notebook and in
the report.
"""

from __future__ import annotations

from dataclasses import dataclass
from os.path import basename

from shardviz.model._codec import JsonMixin
from shardviz.model.findings import (
    PROGRAM_FINDING_KINDS,
    SEVERITIES,
    Finding,
    FindingCost,
    Findings,
    Fix,
    FixCheck,
    Outcome,
    Where,
    ledger_refs,
)
from shardviz.model.units import format_bytes, format_flops, format_seconds
from shardviz.render.geometry import device_runs
from shardviz.render.report.view import estimate_seconds_str

#: What each cost kind measures, as the views label it.
COST_LABELS = {
    "moved": "moved per step",
    "memory": "memory per device",
    "work": "flops repeated",
}


def severity_counts(findings: Findings) -> list[tuple[str, int]]:
    """``[("error", 1), ("warning", 2)]``: the severities present, most severe first."""
    counts = [(s, sum(1 for f in findings if f.severity == s)) for s in SEVERITIES]
    return [(s, n) for s, n in counts if n]


def count_str(findings: Findings) -> str:
    """``3 findings: 1 error, 2 warnings`` or ``no findings``."""
    n = len(findings)
    if not n:
        return "no findings"
    parts = ", ".join(f"{k} {s}{'s' * (k != 1)}" for s, k in severity_counts(findings))
    return f"{n} finding{'s' * (n != 1)}: {parts}"


def checks_str() -> str:
    """The checks every diagnosis runs, by kind: what "no findings" means (the program's
    kinds; the serving kinds are checked by ``sv.compare`` in a serving mode)."""
    return f"checked for {len(PROGRAM_FINDING_KINDS)} kinds: " + ", ".join(PROGRAM_FINDING_KINDS)


def cost_amount(cost: FindingCost) -> str:
    """``1.5 MiB`` (bytes per device) or, for repeated work, ``16.9 MFLOP`` (``flops``)."""
    if cost.kind == "work":
        return format_flops(cost.flops) if cost.flops else "not counted by the compiler"
    return format_bytes(cost.bytes)


def cost_str(cost: FindingCost) -> str:
    """``moved per step: 1.5 MiB per device · est. 120 µs per step`` (the estimate only with
    a target)."""
    text = f"{COST_LABELS[cost.kind]}: {cost_amount(cost)}"
    if cost.kind != "memory":
        text += " per device"
    if cost.seconds is not None:
        text += f" · est. {format_seconds(cost.seconds)} per step"
    return text


def devices_str(ids: tuple[int, ...]) -> str:
    """``d0-d3, d6``: the devices in order, runs merged."""
    return ", ".join(device_runs(sorted(ids)))


def short_line(line: str) -> str:
    """``/home/ada/train.py:42`` -> ``train.py:42``."""
    return basename(line) if line else ""


@dataclass(frozen=True)
class WhereRow:
    """One labelled fact of a finding's place: ``leaf``, ``params/w1 · P(None, None)``."""

    label: str
    text: str


def where_rows(where: Where) -> list[WhereRow]:
    """The facts a :class:`Where` holds, labelled, the empty ones left out.

    The line of code (``code``) is a row of its own so views can set it as code.
    """
    rows = []
    if where.strategy:
        rows.append(WhereRow("strategy", where.strategy))
    place = " · ".join(x for x in (where.place or where.line, where.chain) if x)
    if place:
        rows.append(WhereRow("line", place))
    if where.code:
        rows.append(WhereRow("code", where.code))
    if where.leaf or where.spec is not None:
        rows.append(WhereRow("leaf", " · ".join(x for x in (where.leaf, where.spec_str) if x)))
    if where.collectives:
        rows.append(WhereRow("collectives", ledger_refs(where.collectives)))
    if where.values:
        rows.append(WhereRow("values", ", ".join(where.values)))
    if where.devices:
        rows.append(WhereRow("devices", devices_str(where.devices)))
    return rows


@dataclass(frozen=True)
class CheckRow:
    """One row of a fix's before/after table; ``key`` names it for tests and HTML hooks."""

    key: str
    label: str
    before: str
    after: str


def check_rows(check: FixCheck) -> list[CheckRow]:
    """The before/after figures of a fix, per device; est. time only when either is known."""
    b, a = check.before, check.after
    rows = [
        CheckRow("collectives", "collectives", str(b.collectives), str(a.collectives)),
        CheckRow("moved", "bytes moved", format_bytes(b.moved_bytes), format_bytes(a.moved_bytes)),
        CheckRow("peak", "peak memory", format_bytes(b.peak_bytes), format_bytes(a.peak_bytes)),
        CheckRow(
            "flops",
            "flops per device",
            format_flops(b.flops_per_device),
            format_flops(a.flops_per_device),
        ),
        CheckRow("remats", "remats", str(b.remats), str(a.remats)),
    ]
    if _has_seconds(b) or _has_seconds(a):
        rows.append(
            CheckRow(
                "seconds",
                "est. time",
                estimate_seconds_str(b.seconds),
                estimate_seconds_str(a.seconds),
            )
        )
    return rows


def _has_seconds(o: Outcome) -> bool:
    return o.seconds is not None


def check_word(check: FixCheck) -> str:
    """``helps``, ``trade-off`` (it helps, but moves more bytes or raises the peak: the
    verdict weighs the two) or ``does not help``."""
    if not check.helps:
        return "does not help"
    b, a = check.before, check.after
    return "trade-off" if a.moved_bytes > b.moved_bytes or a.peak_bytes > b.peak_bytes else "helps"


def fix_summary(f: Finding) -> str:
    """``fix: <description> (checked: <verdict>)`` for the report's compact list; ``""``
    without a fix."""
    if f.fix is None:
        return "fix: not tried yet (report.try_fixes())" if f.untried else ""
    if f.check is None:
        return f"fix: {f.fix.description} (not checked)"
    verdict = f.check.verdict or check_word(f.check)
    if not f.check.helps:
        verdict = f"does not help: {verdict}"
    return f"fix: {f.fix.description} (checked: {verdict})"


#: What a finding whose fixes are not tried yet says where its fix would be.
UNTRIED_WORDS = (
    "not tried yet: report.try_fixes() applies each fix, compiles it (compile-only) and "
    "offers the ones that help"
)


#: A finding for which shardviz knows no change to try.
NO_CHANGE_WORDS = "none known: shardviz has no change to try for this"


def no_fix_words(untried: bool = False, unfixed: str = "") -> str:
    """What a finding without a fix means: none tried yet (``untried``), what happened to
    the changes tried (``unfixed``: none helped, or none could be tried), or none known."""
    if untried:
        return UNTRIED_WORDS
    return f"none offered: {unfixed}" if unfixed else NO_CHANGE_WORDS


def untried_str(findings: Findings) -> str:
    """``fixes not tried yet for 2 findings: report.try_fixes() ...``; ``""`` once tried."""
    n = findings.untried
    if not n:
        return ""
    return (
        f"fixes not tried yet for {n} finding{'s' * (n != 1)}: report.try_fixes() compiles "
        "each (compile-only) and offers those that help; sv.diagnose(fn, *args) does both"
    )


# --------------------------------------------------------------------------------------------
# The view: every word and figure above, computed once per finding and read by the text, the
# HTML and the Explorer's payload.


@dataclass(frozen=True)
class CheckView(JsonMixin):
    """A fix's before/after, as every view shows it."""

    helps: bool
    word: str  # "helps" / "trade-off" / "does not help"
    verdict: str
    rows: tuple[CheckRow, ...]


@dataclass(frozen=True)
class FindingView(JsonMixin):
    """One finding's words: what the text block, the HTML section and the pane item show."""

    kind: str
    severity: str
    title: str
    why: str
    cost: str
    where: tuple[WhereRow, ...]
    #: ``file:line`` and ledger numbers, for the report's one-line list.
    place: str
    #: The fix (``None``: none helps, or none tried yet: :attr:`no_fix` says which).
    fix: Fix | None
    no_fix: str
    check: CheckView | None
    #: ``fix: <description> (checked: <verdict>)`` for the report's one-line list.
    summary: str


@dataclass(frozen=True)
class FindingsView(JsonMixin):
    """What every view of a :class:`Findings` shows, computed once (:func:`findings_view`)."""

    function: str
    count: str
    counts: tuple[tuple[str, int], ...]
    checked: str
    #: ``fixes not tried yet for 2 findings: ...``, or ``""`` once tried.
    untried: str
    items: tuple[FindingView, ...]
    notes: tuple[str, ...]


def check_view(check: FixCheck) -> CheckView:
    return CheckView(check.helps, check_word(check), check.verdict, tuple(check_rows(check)))


def finding_view(f: Finding) -> FindingView:
    """The words of one finding."""
    refs = ledger_refs(f.where.collectives)
    return FindingView(
        kind=f.kind,
        severity=f.severity,
        title=f.title,
        why=f.why,
        cost=cost_str(f.cost),
        where=tuple(where_rows(f.where)),
        place=" · ".join(x for x in (f.where.place or short_line(f.where.line), refs) if x),
        fix=f.fix,
        no_fix=no_fix_words(f.untried, f.unfixed) if f.fix is None else "",
        check=check_view(f.check) if f.check is not None else None,
        summary=fix_summary(f),
    )


def section_view(findings: Findings | None) -> FindingsView | None:
    """What a report's Findings section shows; ``None`` when there is nothing to show (not
    diagnosed, or nothing found and no fix left to try), so such reports print as before."""
    if findings is None or not (findings or findings.pending):
        return None
    return findings_view(findings)


def findings_view(findings: Findings) -> FindingsView:
    """Everything the findings views show, from the findings alone."""
    return FindingsView(
        function=findings.function,
        count=count_str(findings),
        counts=tuple(severity_counts(findings)),
        checked=checks_str(),
        untried=untried_str(findings),
        items=tuple(finding_view(f) for f in findings),
        notes=findings.notes,
    )
