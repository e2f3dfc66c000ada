"""What the views of a :class:`~shardviz.model.search.Search` print, computed once for the text
and the HTML view: the status lines, one row of cells per plan, and the best plan's specs.

:func:`search_view` gathers them into one :class:`SearchView`; :mod:`.text` and :mod:`.html`
build it once per render and read only its fields, so a figure reads the same in both.
"""

from __future__ import annotations

from dataclasses import dataclass

from shardviz.model._codec import JsonMixin
from shardviz.model.array import format_spec
from shardviz.model.program import Report
from shardviz.model.roles import searched_role
from shardviz.model.search import Plan, Search, short_how
from shardviz.model.units import format_bytes, format_seconds
from shardviz.render.geometry import mesh_summary

#: Plans listed in a view before the rest are summarised (the text) or folded (the HTML).
SHOWN_PLANS = 25

#: The plan table's columns; numbers are right-aligned.
PLAN_HEADER = ("rank", "plan", "peak", "fits", "moved", "work/device", "est. step", "how")
RIGHT = {0, 2, 4, 5, 6}
#: The heading of the plan table in text.
PLANS_TITLE = "Plans tried, best first (peak and bytes moved per device, per step)"
#: What to do with the best plan's specs, after their heading.
SPECS_HINT = "(use search.best.rules with compare)"
#: What a leaf whose optimizer state is split like it shows in the optimizer column.
LIKE_THE_LEAF = "like the leaf"


def title(s: Search) -> str:
    """``Plan search · mlp train step``."""
    return f"Plan search · {s.function}"


def status_lines(s: Search) -> list[str]:
    """What was searched, for how long, under which limit, and how plans were ranked."""
    n = s.tried
    plans = f"{n} plan{'s' if n != 1 else ''}"
    if s.stopped == "max_plans":
        why = f"stopped: the cap of {plans} (max_plans) was reached"
    elif s.budget_ran_out:
        why = f"stopped: the budget of {s.budget_seconds:g} s ran out"
    elif s.stopped == "memory":
        why = "stopped: no plan fits the memory limit"
    elif n == 0:
        why = "nothing was left to compile"
    else:
        why = "stopped: no move from the best plans ranked better (converged)"
    lines = []
    if s.mesh is not None:
        lines.append(f"on {mesh_summary(s.mesh)}")
    lines.append(f"{plans} compiled (compile-only) in {s.elapsed_seconds:.1f} s; {why}")
    limit = (
        f"memory limit {format_bytes(s.memory_limit)} per device (peak)"
        if s.memory_limit is not None
        else "no memory limit"
    )
    if s.host_memory_limit is not None:
        limit += f"; host memory limit {format_bytes(s.host_memory_limit)} per device"
    lines.append(limit + (f"; estimates on {s.target}" if s.target else "; no target"))
    lines.append(s.ranking)
    return lines


def best_line(s: Search) -> str:
    """The best plan in one line, or why there is none."""
    b = s.best
    if b is None:
        return "best: none (no plan that compiled fits the memory limit; see the notes)"
    return f"best: {b.label}, found after {b.found_seconds:.1f} s: {how_str(b)}"


def fits_word(p: Plan) -> str:
    """``yes``, ``no`` or ``-`` (no limit)."""
    return "-" if p.fits is None else "yes" if p.fits else "no"


def work_str(p: Plan) -> str:
    """Per-device flops against an even split: ``1.02x``; ``n/a`` when unknown."""
    w = p.work_ratio
    return "n/a" if w is None else f"{w:.2f}x"


def plan_cells(rank: int, p: Plan) -> list[str]:
    """One row of the plan table (in :data:`PLAN_HEADER` order)."""
    if not p.compiled:
        return [
            str(rank),
            p.label,
            "-",
            "-",
            "-",
            "-",
            "-",
            f"{short_how(p.how)} (failed: {p.error})",
        ]
    return [
        str(rank),
        p.label,
        format_bytes(p.peak_bytes) if p.peak_bytes is not None else "n/a",
        fits_word(p),
        format_bytes(p.moved_bytes) if p.moved_bytes is not None else "n/a",
        work_str(p),
        format_seconds(p.estimated_seconds) if p.estimated_seconds is not None else "-",
        how_str(p),
    ]


def how_str(p: Plan) -> str:
    """The plan's ``how`` kept to a readable line (long lists of leaves summarised:
    :func:`~shardviz.model.search.short_how`), with its host memory per device when it keeps
    anything there."""
    how = short_how(p.how)
    if not p.host_bytes:
        return how
    return f"{how} (host {format_bytes(p.host_bytes)} per device)"


@dataclass(frozen=True)
class SpecRow:
    """One leaf of the best plan: its spec, and its optimizer state's when that differs."""

    path: str
    spec: str
    optimizer: str


def _mirror(inner: str, opt_paths: list[str]) -> str | None:
    return next((o for o in opt_paths if o.endswith("/" + inner)), None)


def spec_rows(s: Search, p: Plan) -> list[SpecRow]:
    """The parameter and data leaves of ``p`` with their specs; a parameter's optimizer
    state (the first optimizer leaf ending in its path) is shown when its spec differs.
    Roles are the search's (by argument, or by a state object's field: ``state/params``)."""
    roles = s.roles or {}
    read = {path: searched_role(path, roles) for path in p.specs}
    opt_paths = [x for x in p.specs if read[x][0] == "optimizer"]
    rows = []
    for path, spec in p.specs.items():
        role, inner = read[path]
        if role == "optimizer":
            continue
        other = ""
        if role == "params":
            mirror = _mirror(inner, opt_paths)
            if mirror is not None and p.specs[mirror] != spec:
                other = format_spec(p.specs[mirror])
        rows.append(SpecRow(path, format_spec(spec), other))
    return rows


# --------------------------------------------------------------------------------------------
# The view: every word above, computed once per search and read by the text and the HTML.


@dataclass(frozen=True)
class PlanView(JsonMixin):
    """One plan's row: its cells (in :data:`PLAN_HEADER` order) and what the HTML marks."""

    rank: int
    label: str
    cells: tuple[str, ...]
    #: The search's best plan.
    best: bool
    #: Over the memory limit, or not compiled.
    unfit: bool
    #: ``"1"``, ``"0"`` or ``""`` (no limit): the HTML's ``data-fits``.
    fits: str
    peak_bytes: int | None
    moved_bytes: int | None


@dataclass(frozen=True)
class SpecsView(JsonMixin):
    """The best plan's specs: a heading, the column names and one row of cells per leaf."""

    #: ``Best plan #3: the specs``.
    title: str
    hint: str
    header: tuple[str, ...]
    rows: tuple[SpecRow, ...]
    #: Each row's cells, in :attr:`header` order (the optimizer column only when any differs).
    cells: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class SearchView(JsonMixin):
    """What every view of a :class:`Search` shows, computed once (:func:`search_view`)."""

    function: str
    title: str
    status: tuple[str, ...]
    best: str
    plans_title: str
    header: tuple[str, ...]
    #: Every plan, best first (the views show the first ``shown`` and count or fold the rest).
    plans: tuple[PlanView, ...]
    #: The best plan's specs, ``None`` when no plan is best.
    specs: SpecsView | None
    notes: tuple[str, ...]
    #: The best plan's label and compile-only report (folded under the HTML), when it has one.
    best_label: str
    best_report: Report | None


def fits_attr(p: Plan) -> str:
    """``1``, ``0`` or ``""`` (no limit): whether the plan fits, for the HTML's ``data-fits``."""
    return "" if p.fits is None else "1" if p.fits else "0"


def plan_view(rank: int, p: Plan, best: Plan | None) -> PlanView:
    """One plan's row at ``rank``; ``best`` is the search's best plan (or ``None``)."""
    return PlanView(
        rank=rank,
        label=p.label,
        cells=tuple(plan_cells(rank, p)),
        best=p is best,
        unfit=p.fits is False or not p.compiled,
        fits=fits_attr(p),
        peak_bytes=p.peak_bytes,
        moved_bytes=p.moved_bytes,
    )


def specs_view(s: Search, p: Plan) -> SpecsView:
    """The specs of ``p`` (the best plan): the optimizer column only when some leaf's optimizer
    state is split unlike the leaf."""
    rows = tuple(spec_rows(s, p))
    with_opt = any(r.optimizer for r in rows)
    header = ("leaf", "spec", *(("optimizer state",) if with_opt else ()))
    cells = tuple(
        (r.path, r.spec, *((r.optimizer or LIKE_THE_LEAF,) if with_opt else ())) for r in rows
    )
    where = " (optimizer state in pinned host memory)" if p.on_host else ""
    if p.remat is not None:
        where += f" (remat {p.remat!r})"
    return SpecsView(f"Best plan {p.label}: the specs{where}", SPECS_HINT, header, rows, cells)


def search_view(s: Search) -> SearchView:
    """Everything the search views show, from the search alone."""
    b = s.best
    return SearchView(
        function=s.function,
        title=title(s),
        status=tuple(status_lines(s)),
        best=best_line(s),
        plans_title=PLANS_TITLE,
        header=PLAN_HEADER,
        plans=tuple(plan_view(rank, p, b) for rank, p in enumerate(s.plans, start=1)),
        specs=specs_view(s, b) if b is not None else None,
        notes=s.notes,
        best_label=b.label if b is not None else "",
        best_report=b.report if b is not None else None,
    )
