"""The Explorer's Findings pane as plain JSON: ready-made words and what each finding lights up.

Pure (no jax, no anywidget). The words come from :func:`shardviz.render.findings.view.
findings_view`, the view the text and HTML print, so a finding reads the same in ``print(report.
findings)``, the saved HTML and the live widget; the front end derives none of them.

Each finding also says what to highlight in the other panes, as positions and ids of the
shown report's payload (:mod:`.explorer.payload`): ledger positions (0-based, the ``#``
numbers minus one), array ids (``arg:<leaf>``, ``mid:<value>``) and device ids; names the
report does not hold are left out. And whether its fix can be tried in this Explorer, and
how (:func:`fix_route`): a spec box, the mesh shape control, or compiling the fixed program.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, Literal

from shardviz.model.findings import SEVERITIES, Finding, Findings, Fix
from shardviz.model.program import Report
from shardviz.render.findings.html import SEVERITY_COLORS
from shardviz.render.findings.view import FindingView, checks_str, findings_view
from shardviz.widgets.explorer.payload import (
    ARGUMENT,
    INTERMEDIATE,
    OUTPUT,
    array_entries,
    dumps,
)

__all__ = [
    "FINDINGS_VERSION",
    "FixRoute",
    "findings_json",
    "findings_payload",
    "error_json",
    "findings_pending",
    "fix_route",
    "fix_words",
    "highlights",
    "pending_json",
]

#: Bumped when the findings payload's shape changes (the front end checks it).
FINDINGS_VERSION = 1

#: How the Explorer tries a fix: set a spec box, set the mesh shape, or compile the fixed
#: program itself; ``""`` when it cannot (no function to recompile).
FixRoute = Literal["box", "mesh", "program", ""]

#: What the pane says while the fixes are compiled (off the kernel's thread).
PENDING_WORDS = "looking for findings… (each fix is compiled, compile-only)"
#: What it says for a report explained without diagnosis.
NOT_DIAGNOSED_WORDS = "not diagnosed: explain(..., diagnose=True) looks for findings"
#: Why a fix has no "try this fix" button in an Explorer built from a report.
NO_TRY_WORDS = "to try it here, open the Explorer on the function: shardviz.Explorer(fn, *args)"


def findings_pending(findings: Findings | None) -> bool:
    """Whether some of ``findings``' fixes are not tried yet (``report.try_fixes()`` tries
    them, compiling each). Reading findings never compiles."""
    return findings is not None and findings.pending


def fix_route(fix: Fix, boxes: Collection[str] | None) -> FixRoute:
    """How an Explorer whose spec boxes control the leaves ``boxes`` tries ``fix``.

    ``None`` for ``boxes`` means there is no function to recompile (an Explorer built from a
    report): ``""``. A spec for a leaf a box controls goes into that box, a mesh reshape into
    the mesh shape control; everything else (a constraint, a dropped constraint, a spec for
    a leaf no box controls) is compiled as the fixed program.
    """
    if boxes is None:
        return ""
    if fix.kind == "spec" and fix.leaf in boxes:
        return "box"
    if fix.kind == "mesh" and fix.mesh_shape:
        return "mesh"
    return "program"


def fix_words(fix: Fix, route: FixRoute) -> str:
    """What "try this fix" will do, in words (the button's tooltip and the line beside it)."""
    if route == "box":
        return f"sets the {fix.leaf} box to the new spec and recompiles"
    if route == "mesh":
        shape = " x ".join(str(n) for n in fix.mesh_shape)
        return f"sets the mesh shape to {shape} and recompiles"
    if route == "program":
        return "compiles the fixed program (compile-only) and shows it"
    return NO_TRY_WORDS


def _ids_by_name(report: Report) -> dict[tuple[str, str], str]:
    """``(role, name) -> array id`` of each array's first entry."""
    out: dict[tuple[str, str], str] = {}
    for e in array_entries(report):
        out.setdefault((e.role, e.name), e.id)
    return out


def highlights(f: Finding, report: Report, ids: dict[tuple[str, str], str]) -> dict[str, Any]:
    """What a finding lights up in the other panes of ``report``'s Explorer.

    Keys: ``collectives`` (ledger positions, 0-based), ``leaf`` (the array id of the finding's
    leaf: an argument leaf, else an intermediate or output of that name, else ``None``),
    ``values`` (array ids of its intermediates), ``arrays`` (``leaf`` then ``values``, each
    once: what the arrays pane lists) and ``devices`` (device ids of the report's mesh).
    """
    n = len(report.collectives)
    collectives = sorted({k - 1 for k in f.where.collectives if 1 <= k <= n})
    leaf = None
    if f.where.leaf:
        for role in (ARGUMENT, INTERMEDIATE, OUTPUT):
            leaf = ids.get((role, f.where.leaf))
            if leaf is not None:
                break
    values = [ids[(INTERMEDIATE, v)] for v in f.where.values if (INTERMEDIATE, v) in ids]
    arrays = list(dict.fromkeys([*([leaf] if leaf else []), *values]))
    mesh = report.mesh
    known = set(mesh.device_ids) if mesh is not None else None
    devices = sorted({d for d in f.where.devices if known is None or d in known})
    return {
        "collectives": collectives,
        "leaf": leaf,
        "values": list(dict.fromkeys(values)),
        "arrays": arrays,
        "devices": devices,
    }


def _fix_item(f: Finding, boxes: Collection[str] | None) -> dict[str, Any] | None:
    fix = f.fix
    if fix is None:
        return None
    route = fix_route(fix, boxes)
    return {
        "kind": fix.kind,
        "description": fix.description,
        "code": fix.code,
        "route": route,
        "how": fix_words(fix, route),
    }


def _check_item(view: FindingView) -> dict[str, Any] | None:
    c = view.check
    if c is None:
        return None
    return {
        "helps": c.helps,
        "word": c.word,
        "verdict": c.verdict,
        "rows": [[r.key, r.label, r.before, r.after, r.before != r.after] for r in c.rows],
    }


def finding_item(
    index: int,
    f: Finding,
    view: FindingView,
    report: Report,
    ids: dict[tuple[str, str], str],
    boxes: Collection[str] | None,
) -> dict[str, Any]:
    """One finding's words (its :class:`FindingView`) and links (see :func:`findings_payload`)."""
    return {
        "index": index,
        "kind": view.kind,
        "severity": view.severity,
        "title": view.title,
        "why": view.why,
        "cost": view.cost,
        "where": [[row.label, row.text] for row in view.where],
        "fix": _fix_item(f, boxes),
        "no_fix": view.no_fix,
        "check": _check_item(view),
        "highlight": highlights(f, report, ids),
    }


def _base(state: str, text: str, generation: int) -> dict[str, Any]:
    return {
        "version": FINDINGS_VERSION,
        "generation": generation,
        "state": state,
        "count_text": text,
        "checked": checks_str(),
        "counts": [],
        "severity_colors": {s: list(SEVERITY_COLORS[s]) for s in SEVERITIES},
        "items": [],
        "notes": [],
    }


def findings_payload(
    report: Report, generation: int = 0, boxes: Collection[str] | None = None
) -> dict[str, Any]:
    """The Findings pane of ``report`` as it is (nothing is compiled: fixes not tried yet show
    as such; the Explorer tries them first, off the kernel's thread).

    Args:
        report: the report shown.
        generation: the Explorer's ``generation`` of that report (the front end drops a
            findings payload of another one).
        boxes: the leaf paths the Explorer's spec boxes control, or ``None`` when it has no
            function to recompile (then no fix can be tried; see :func:`fix_route`).

    Returns:
        Keys: ``version``, ``generation``, ``state`` (``"done"``, or ``"none"`` when not
        diagnosed; :func:`pending_json` and :func:`error_json` give ``"pending"`` and
        ``"error"``), ``count_text`` (``3 findings: 1 error, 2 warnings`` or ``no findings``),
        ``checked`` (the kinds looked for), ``counts`` (``[severity, n]``, most severe first),
        ``severity_colors`` (severity -> ``[text, background, border]``, the static view's),
        ``items`` (per finding, most severe first: ``index``, ``kind``, ``severity``,
        ``title``, ``why``, ``cost``, ``where`` (``[label, text]`` rows), ``fix`` (``None``
        or ``kind``, ``description``, ``code``, ``route`` (:func:`fix_route`) and ``how``),
        ``no_fix`` (words for a finding without a fix), ``check`` (``None`` or ``helps``,
        ``word``, ``verdict`` and ``rows`` of ``[key, label, before, after, changed]``) and
        ``highlight`` (:func:`highlights`)) and ``notes``.
    """
    findings = report.findings
    if findings is None:
        return _base("none", NOT_DIAGNOSED_WORDS, generation)
    view = findings_view(findings)
    out = _base("done", view.count, generation)
    ids = _ids_by_name(report)
    out["counts"] = [[s, n] for s, n in view.counts]
    out["items"] = [
        finding_item(i, f, v, report, ids, boxes)
        for i, (f, v) in enumerate(zip(findings, view.items, strict=True))
    ]
    out["notes"] = [n for n in (view.untried,) if n] + list(view.notes)
    return out


def findings_json(report: Report, generation: int = 0, boxes: Collection[str] | None = None) -> str:
    """:func:`findings_payload` as JSON text (``<``, ``>``, ``&`` escaped)."""
    return dumps(findings_payload(report, generation, boxes))


def pending_json(generation: int) -> str:
    """The pane while the findings are worked out in the background."""
    return dumps(_base("pending", PENDING_WORDS, generation))


def error_json(generation: int, message: str) -> str:
    """The pane when working out the findings failed: what went wrong, in words."""
    return dumps(_base("error", f"could not look for findings: {message}", generation))
