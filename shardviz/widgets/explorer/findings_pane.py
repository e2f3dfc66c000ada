"""The Explorer's Findings pane: the findings' own view object, and what each finding links to.

Pure (no jax, no anywidget). The pane syncs the JSON of :class:`~shardviz.render.findings.view.
FindingsView`, the view ``print(report.findings)`` and the saved HTML print, so a finding reads
the same in all three; the front end derives no word of it.

Beside the view, the pane says what only the Explorer knows, per finding (``links``): what
it lights up in the other panes, as positions and ids of the shown report's state
(:mod:`.payload`): ledger positions (0-based, the ``#`` numbers minus one), array ids
(``arg:<leaf>``, ``mid:<value>``) and device ids, names the report does not hold left out;
and whether its fix can be tried in this Explorer, and how (:func:`fix_route`): a spec box,
the mesh shape control, or compiling the fixed program.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, Literal

from shardviz.model._codec import to_data
from shardviz.model.findings import SEVERITIES, Finding, Findings, Fix
from shardviz.model.program import Report
from shardviz.render.findings.html import SEVERITY_COLORS
from shardviz.render.findings.view import checks_str, findings_view
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
    "error_json",
    "findings_json",
    "findings_pending",
    "findings_state",
    "fix_route",
    "fix_words",
    "highlights",
    "link",
    "pending_json",
]

#: Bumped when the pane's state changes shape (the front end checks it). 2: the findings'
#: view object itself, and the links beside it.
FINDINGS_VERSION = 2

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


def link(
    f: Finding, report: Report, ids: dict[tuple[str, str], str], boxes: Collection[str] | None
) -> dict[str, Any]:
    """What finding ``f`` links to in this Explorer: ``route`` (:func:`fix_route`, ``""``
    without a fix), ``how`` (:func:`fix_words`, ``""`` without a fix) and ``highlight``
    (:func:`highlights`)."""
    route = fix_route(f.fix, boxes) if f.fix is not None else ""
    return {
        "route": route,
        "how": fix_words(f.fix, route) if f.fix is not None else "",
        "highlight": highlights(f, report, ids),
    }


def _state(state: str, words: str, generation: int) -> dict[str, Any]:
    return {
        "version": FINDINGS_VERSION,
        "generation": generation,
        "state": state,
        "words": words,
        "checked": checks_str(),
        "severity_colors": {s: list(SEVERITY_COLORS[s]) for s in SEVERITIES},
        "view": None,
        "links": [],
    }


def findings_state(
    report: Report, generation: int = 0, boxes: Collection[str] | None = None
) -> dict[str, Any]:
    """The Findings pane of ``report`` as it is (nothing is compiled: fixes not tried yet show
    as such; the Explorer tries them first, off the kernel's thread).

    Args:
        report: the report shown.
        generation: the Explorer's ``generation`` of that report (the front end drops the
            state of another one).
        boxes: the leaf paths the Explorer's spec boxes control, or ``None`` when it has no
            function to recompile (then no fix can be tried; see :func:`fix_route`).

    Returns:
        Keys: ``version``, ``generation``, ``state`` (``"done"``, or ``"none"`` when not
        diagnosed; :func:`pending_json` and :func:`error_json` give ``"pending"`` and
        ``"error"``), ``words`` (what the pane says when there is no view: not diagnosed,
        pending, or what went wrong), ``checked`` (the kinds looked for),
        ``severity_colors`` (severity -> ``[text, background, border]``, the static view's),
        ``view`` (:class:`~shardviz.render.findings.view.FindingsView` as JSON, or ``None``)
        and ``links`` (per item of the view, :func:`link`).
    """
    findings = report.findings
    if findings is None:
        return _state("none", NOT_DIAGNOSED_WORDS, generation)
    out = _state("done", "", generation)
    ids = _ids_by_name(report)
    out["view"] = to_data(findings_view(findings))
    out["links"] = [link(f, report, ids, boxes) for f in findings]
    return out


def findings_json(report: Report, generation: int = 0, boxes: Collection[str] | None = None) -> str:
    """:func:`findings_state` as JSON text (``<``, ``>``, ``&`` escaped)."""
    return dumps(findings_state(report, generation, boxes))


def pending_json(generation: int) -> str:
    """The pane while the findings are worked out in the background."""
    return dumps(_state("pending", PENDING_WORDS, generation))


def error_json(generation: int, message: str) -> str:
    """The pane when working out the findings failed: what went wrong, in words."""
    return dumps(_state("error", f"could not look for findings: {message}", generation))
