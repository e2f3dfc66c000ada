"""The words and figures of a :class:`~shardviz.model.Comparison`, computed once for every view.

Memory by component, collectives by kind and by mesh axes, the step time, the loss check,
estimates on targets and byte ticks for charts. :func:`comparison_view` gathers them into one
:class:`ComparisonView` (a :class:`StrategyView` per result); :mod:`.text`, :mod:`.html`,
:mod:`.plotly` and :mod:`.mpl` read that view, so every view shows the same numbers. The
functions it is built from stay public so tests can check each fact on its own.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from shardviz.model._codec import JsonMixin
from shardviz.model.compare import Comparison, MemoryBreakdown, StrategyResult
from shardviz.model.estimate import Estimate
from shardviz.model.mesh import MeshLayout
from shardviz.model.program import COLLECTIVE_KINDS, Report
from shardviz.model.schedule import Schedule
from shardviz.model.units import format_bytes, format_count, format_mfu, format_seconds
from shardviz.render.colors import KIND_COLORS, OTHER_KIND
from shardviz.render.compare.host import HostView, host_views
from shardviz.render.geometry import mesh_summary
from shardviz.render.report.view import (
    ESTIMATE_WORDS,
    at_least_str,
    estimate_seconds_str,
    headroom_str,
)
from shardviz.render.schedule.text import short_how

# --------------------------------------------------------------------------------------------
# Memory by component


@dataclass(frozen=True)
class Component:
    """One part of a device's memory: its key (``data-component``), label, meaning, colour."""

    key: str
    label: str
    meaning: str
    color: str


#: The components, bottom of the stack first; colours are fixed so every view agrees.
COMPONENTS: tuple[Component, ...] = (
    Component("params", "params", "parameters", "#0969da"),
    Component("grads", "grads", "gradients (in the compiler's temp)", "#54aeff"),
    Component("optimizer", "optimizer", "optimizer state", "#8250df"),
    Component("batch", "batch", "the batch (inputs)", "#1a7f37"),
    Component("activations", "temp beyond grads", "the compiler's temp (scratch: activations "
              "kept for the backward pass, intermediates) beyond the gradients; 0 when the whole "
              "temp is smaller than the gradients (the compiler fuses them into the update and "
              "never holds them whole): the activations are then inside the temp, not absent",
              "#fb8f44"),
    Component("other", "outputs/other", "the rest of the peak: mostly outputs not written into "
              "donated arguments (the new parameters and optimizer state when the step does not "
              "donate them)", "#afb8c1"),
)  # fmt: skip
COMPONENT_BY_KEY = {c.key: c for c in COMPONENTS}


def memory_parts(m: MemoryBreakdown) -> list[tuple[Component, int]]:
    """Every component with its bytes in HBM, in stacking order; ``other`` fills the rest of
    the peak (never below zero), so the parts add up to :func:`memory_total`. Host memory is
    not stacked (see :mod:`.host`)."""
    parts = [  # HBM only: parameters or optimizer state kept in host memory are apart
        (COMPONENT_BY_KEY["params"], m.params - m.host_params),
        (COMPONENT_BY_KEY["grads"], m.grads),
        (COMPONENT_BY_KEY["optimizer"], m.optimizer - m.host_optimizer),
        (COMPONENT_BY_KEY["batch"], m.batch),
        (COMPONENT_BY_KEY["activations"], m.activations),
    ]
    known = sum(b for _, b in parts)
    parts.append((COMPONENT_BY_KEY["other"], max(0, m.peak - known)))
    return parts


def memory_total(m: MemoryBreakdown) -> int:
    """The height of a strategy's stacked bar: the peak, or the sum of the parts if larger."""
    return sum(b for _, b in memory_parts(m))


def shown_components(c: Comparison) -> list[Component]:
    """Components some strategy has bytes of (``other`` left out when it is zero everywhere)."""
    return [
        comp
        for comp in COMPONENTS
        if comp.key != "other" or any(dict(memory_parts(r.memory))[comp] for r in c.results)
    ]


def temp_line(m: MemoryBreakdown) -> str:
    """What the compiler's temp holds, said plainly: ``temp 3.8 MiB (the compiler's scratch):
    the gradients 132.4 KiB + 3.7 MiB of activations and intermediates``, or, when the temp is
    smaller than the gradients, that it holds both and no figure splits them."""
    head = f"temp {format_bytes(m.temp)} (the compiler's scratch)"
    if m.temp >= m.grads:
        return (
            f"{head}: the gradients {format_bytes(m.grads)} + {format_bytes(m.temp - m.grads)} "
            "of activations and intermediates"
        )
    return (
        f"{head}: gradients, activations and intermediates together; smaller than the "
        f"gradients ({format_bytes(m.grads)}), so the compiler never holds them whole (it fuses "
        "them into the update) and no figure splits the temp between them"
    )


# --------------------------------------------------------------------------------------------
# Collectives by kind and by mesh axes


def axes_label(axes: Sequence[str]) -> str:
    """``data``, ``data,model``, or ``no axis``."""
    return ",".join(axes) if axes else "no axis"


@dataclass(frozen=True)
class KindRow:
    """All collectives of one kind in a strategy's step, with their split by mesh axes."""

    kind: str
    count: int
    in_bytes: int
    moved_bytes: int
    by_axes: tuple[tuple[tuple[str, ...], int, int], ...]  # (axes, count, moved bytes)


def _kind_order(kinds: set[str]) -> list[str]:
    known = [k for k in COLLECTIVE_KINDS if k in kinds]
    return known + sorted(kinds - set(COLLECTIVE_KINDS))


def kind_rows(r: StrategyResult) -> list[KindRow]:
    """The strategy's collectives per kind (canonical kind order, unknown kinds last)."""
    out = []
    for kind in _kind_order({s.kind for s in r.collectives}):
        ss = [s for s in r.collectives if s.kind == kind]
        axes: dict[tuple[str, ...], list[int]] = {}
        for s in ss:
            acc = axes.setdefault(tuple(s.axes), [0, 0])
            acc[0] += s.count
            acc[1] += s.moved_bytes
        out.append(
            KindRow(
                kind,
                sum(s.count for s in ss),
                sum(s.in_bytes for s in ss),
                sum(s.moved_bytes for s in ss),
                tuple((a, n, b) for a, (n, b) in axes.items()),
            )
        )
    return out


def axes_totals(r: StrategyResult) -> list[tuple[tuple[str, ...], int, int]]:
    """``(axes, count, moved bytes)`` per tuple of mesh axes, in order of first appearance."""
    acc: dict[tuple[str, ...], list[int]] = {}
    for s in r.collectives:
        a = acc.setdefault(tuple(s.axes), [0, 0])
        a[0] += s.count
        a[1] += s.moved_bytes
    return [(axes, n, b) for axes, (n, b) in acc.items()]


def comparison_axes(c: Comparison) -> list[tuple[str, ...]]:
    """Every tuple of mesh axes some strategy's collectives run over: single axes first (in
    mesh order), then several axes together, then groups that match no axis (``()``)."""
    order: dict[str, int] = {}
    for r in c.results:
        for name in r.mesh.axis_names:
            order.setdefault(name, len(order))
    found = {tuple(s.axes) for r in c.results for s in r.collectives}

    def key(axes: tuple[str, ...]) -> tuple[int, list[int], tuple[str, ...]]:
        rank = 2 if not axes else 0 if len(axes) == 1 else 1
        return rank, [order.get(a, len(order)) for a in axes], axes

    return sorted(found, key=key)


#: Bar colours of the tuples of mesh axes, in :func:`comparison_axes` order; "no axis" is grey.
AXES_COLORS = ("#0969da", "#bf3989", "#1a7f37", "#bc4c00", "#8250df", "#1b7c83", "#9a6700")
NO_AXIS_COLOR = "#8c959f"


def axes_color(c: Comparison, axes: tuple[str, ...]) -> str:
    """The bar colour of a tuple of mesh axes in this comparison's by-axes charts."""
    if not axes:
        return NO_AXIS_COLOR
    named = [a for a in comparison_axes(c) if a]
    i = named.index(axes) if axes in named else len(named)
    return AXES_COLORS[i % len(AXES_COLORS)]


def kind_color(kind: str) -> str:
    """The bar colour of a collective kind (the report view's colour for it)."""
    return KIND_COLORS.get(kind, OTHER_KIND)[0]


def axes_moved(r: StrategyResult, axes: tuple[str, ...]) -> int:
    """Bytes moved per device per step by the strategy's collectives over exactly ``axes``."""
    return sum(s.moved_bytes for s in r.collectives if tuple(s.axes) == axes)


def axes_count(r: StrategyResult, axes: tuple[str, ...]) -> int:
    return sum(s.count for s in r.collectives if tuple(s.axes) == axes)


def comparison_kinds(c: Comparison) -> list[str]:
    """Every collective kind some strategy uses, canonical order."""
    return _kind_order({s.kind for r in c.results for s in r.collectives})


def kind_moved(r: StrategyResult, kind: str) -> int:
    return sum(s.moved_bytes for s in r.collectives if s.kind == kind)


def kind_count(r: StrategyResult, kind: str) -> int:
    return sum(s.count for s in r.collectives if s.kind == kind)


def collective_count(r: StrategyResult) -> int:
    return sum(s.count for s in r.collectives)


def moved_total(r: StrategyResult) -> int:
    return sum(s.moved_bytes for s in r.collectives)


# --------------------------------------------------------------------------------------------
# Across hosts (only when some strategy's mesh spans several hosts)


def multi_host(c: Comparison) -> bool:
    """Whether some strategy's mesh spans several hosts: only then do the views add what
    crosses hosts."""
    return any(r.mesh.num_processes > 1 for r in c.results)


def cross_total(r: StrategyResult) -> int:
    """Bytes per device per step that cross hosts (part of :func:`moved_total`)."""
    return sum(s.cross_host_bytes for s in r.collectives)


def axes_cross(r: StrategyResult, axes: tuple[str, ...]) -> int:
    """Bytes per device per step crossing hosts in the collectives over exactly ``axes``."""
    return sum(s.cross_host_bytes for s in r.collectives if tuple(s.axes) == axes)


def cross_str(r: StrategyResult, n: int) -> str:
    """``n`` bytes across hosts as a cell: ``—`` on a mesh within one host."""
    return format_bytes(n) if r.mesh.num_processes > 1 else "—"


# --------------------------------------------------------------------------------------------
# Time, the check, names and numbers


def step_time(r: StrategyResult) -> float | None:
    """The median step in seconds: the result's own figure, else its report's timing."""
    if r.step_seconds is not None:
        return r.step_seconds
    t = r.report.timing
    return t.step_seconds if t is not None else None


def step_str(r: StrategyResult) -> str:
    s = step_time(r)
    return format_seconds(s) if s is not None else "n/a"


def loss_word(r: StrategyResult) -> str:
    """``OK``, ``MISMATCH`` or ``n.a.`` (no reference loss to compare with)."""
    if r.loss_matches is None:
        return "n.a."
    return "OK" if r.loss_matches else "MISMATCH"


def loss_str(r: StrategyResult) -> str:
    """``loss 2.30259 vs 2.30259 on one device: OK`` (parts missing are left out)."""
    if r.loss is None and r.reference_loss is None:
        return f"loss not compared: {loss_word(r)}"
    text = f"loss {_num(r.loss)}"
    if r.reference_loss is not None:
        text += f" vs {_num(r.reference_loss)} unsharded"
    else:
        text += ", no unsharded reference"
    return f"{text}: {loss_word(r)}"


def _num(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.6g}"


def mesh_str(mesh: MeshLayout) -> str:
    """``data 2 × model 4``; ``1 device`` for a mesh without axes."""
    if not mesh.axis_names:
        return "1 device"
    return " × ".join(f"{n} {s}" for n, s in zip(mesh.axis_names, mesh.axis_sizes, strict=True))


def common_mesh(c: Comparison) -> MeshLayout | None:
    """The mesh every strategy ran on, or ``None`` when they differ (or there are none)."""
    meshes = {r.mesh for r in c.results}
    return meshes.pop() if len(meshes) == 1 else None


def reconciled_str(m: MemoryBreakdown) -> str:
    """``yes``, or ``no: compiler +64 B`` (the compiler's argument bytes minus the leaves')."""
    if m.reconciled:
        return "yes"
    diff = m.arguments_from_compiler - m.arguments_from_leaves
    return f"no: compiler {'+' if diff > 0 else '-'}{format_bytes(abs(diff))}"


#: Why a TPU compiler's argument bytes exceed the leaves': said beside the "no" badge.
TPU_PADDING = (
    "a TPU lays each array out in tiles (8 x 128 numbers for the last two dimensions), so "
    "small arrays take more bytes than their shapes: the leaves count the shapes"
)


def reconcile_why(m: MemoryBreakdown, platform: str = "") -> str:
    """Why the argument figures differ, when it is known: on TPU, a compiler figure above the
    leaves' is its layout padding (:data:`TPU_PADDING`); else ``""``."""
    diff = m.arguments_from_compiler - m.arguments_from_leaves
    return TPU_PADDING if platform == "tpu" and diff > 0 else ""


def reconcile_figures(m: MemoryBreakdown) -> str:
    """Both argument figures exactly, and whether they agree (no reason given)."""
    leaves, comp = m.arguments_from_leaves, m.arguments_from_compiler
    if leaves == comp:
        return f"arguments: leaves {leaves:,} B = compiler {comp:,} B (reconciled)"
    diff = comp - leaves
    return (
        f"arguments: leaves {leaves:,} B ≠ compiler {comp:,} B "
        f"(compiler {'+' if diff > 0 else '-'}{abs(diff):,} B; not reconciled)"
    )


def _with_why(figures: str, why: str) -> str:
    """``figures`` with ``why`` said inside its closing parenthesis."""
    return f"{figures[:-1]}: {why})" if why else figures


def reconcile_line(m: MemoryBreakdown, platform: str = "") -> str:
    """Both argument figures exactly, and whether they agree; on TPU, a compiler figure
    above the leaves' says why (its layout padding)."""
    return _with_why(reconcile_figures(m), reconcile_why(m, platform))


def header_str(c: Comparison) -> str:
    n = len(c.results)
    return (
        f"{c.model} · {c.num_params:,} parameters ({format_count(c.num_params)}) · "
        f"{c.param_dtype} · {n} strateg{'ies' if n != 1 else 'y'}"
    )


#: What every byte figure means, said once in each view.
BYTES_NOTE = "bytes are per device (the device holding the most); moved: the ring model, per step"


# --------------------------------------------------------------------------------------------
# Estimates on targets

#: An HBM line joins a memory chart's scale when it is at most this many times the tallest bar
#: (further out, the bars would shrink to slivers: the line is marked off the scale instead).
HBM_SCALE = 4.0


def estimate_of(r: StrategyResult) -> Estimate | None:
    """The estimate of a strategy's step on its target (``None`` without a target)."""
    return r.report.estimate


def has_estimates(c: Comparison) -> bool:
    """Whether some strategy has an estimate (the views then show the estimate columns)."""
    return any(estimate_of(r) is not None for r in c.results)


def est_step_str(r: StrategyResult) -> str:
    """``≥ 144 µs`` (a lower bound; ``144 µs (not a bound)`` where a kernel was not counted),
    or ``n/a`` without an estimate."""
    e = estimate_of(r)
    return at_least_str(e) if e is not None else "n/a"


#: What marks a figure that is no bound (a kernel not counted) in the comparison's tables;
#: a note under the table names the kernels.
NOT_A_BOUND_MARK = "†"


def fit_word(r: StrategyResult) -> str:
    """``fits``, ``does not fit``, ``unknown`` (no peak) or ``n/a`` (no estimate)."""
    e = estimate_of(r)
    if e is None:
        return "n/a"
    if e.fits is None:
        return "unknown"
    return "fits" if e.fits else "does not fit"


def hbm_fit_str(r: StrategyResult) -> str:
    """``fits: 6.3 MiB of 16 GiB`` / ``does not fit: needs 21 GiB of 16 GiB``, or ``n/a``."""
    e = estimate_of(r)
    return e.fit_text if e is not None else "n/a"


def estimate_line(r: StrategyResult) -> str | None:
    """``estimated on TPU v5e 2x4 (…): step ≥ 144 µs (communication-bound, MFU ≤ 0.5%);
    fits: 6.3 MiB of 16 GiB per device``, or ``None`` without an estimate. Where a kernel
    was not counted the figures lose their signs and the line ends ``not a bound: 3 calls of
    `splash_mha_fwd` not counted: …``."""
    e = estimate_of(r)
    if e is None:
        return None
    room = headroom_str(e)
    at_least, at_most = ("≥ ", "≤ ") if e.bounded else ("", "")
    mfu = f"MFU {at_most}{format_mfu(e.mfu)}" if e.mfu is not None else "MFU unknown"
    low = (
        f"; a lower bound: loops of unknown count ({', '.join(e.lower_bound)}) counted once"
        if e.lower_bound
        else ""
    )
    predicted = (
        f", predicted {format_seconds(e.predicted_seconds)}"
        if e.predicted_seconds is not None
        else ""
    )
    return (
        f"estimated on {e.target}: step {at_least}{format_seconds(e.step_seconds)} "
        f"({e.bound}-bound, "
        f"{mfu}){predicted}; {e.fit_text} per device" + (f", {room}" if room else "") + low
        + (f"; {e.not_a_bound}" if e.not_a_bound else "")
    )  # fmt: skip


def target_groups(c: Comparison) -> list[tuple[str, list[StrategyResult]]]:
    """The results with an estimate grouped by target (its full label), targets in order of
    first appearance, results in their order within each."""
    out: dict[str, list[StrategyResult]] = {}
    for r in c.results:
        e = estimate_of(r)
        if e is not None:
            out.setdefault(e.target, []).append(r)
    return list(out.items())


def estimate_header(c: Comparison) -> list[str]:
    """What the estimates are, said once at the top: the target when there is one, and that
    CPU compiles are estimated as if the mesh were the target."""
    groups = target_groups(c)
    if not groups:
        return []
    lines = []
    if len(groups) == 1:
        lines.append(f"every estimate on {groups[0][0]} ({ESTIMATE_WORDS})")
    else:
        names = ", ".join(t for t, _ in groups)
        lines.append(f"estimated on {len(groups)} targets: {names} ({ESTIMATE_WORDS})")
    if any(r.report.platform == "cpu" for _, rs in groups for r in rs):
        lines.append(
            "compiled on CPU devices: estimated as if each mesh were its target; the estimates "
            "describe the target, not this machine"
        )
    return lines


def hbm_lines(c: Comparison) -> list[int]:
    """The distinct HBM sizes per device of the strategies' targets, smallest first."""
    return sorted({e.hbm_bytes for r in c.results if (e := estimate_of(r)) is not None})


def memory_chart_top(c: Comparison) -> int:
    """The top of the memory charts' scale: the tallest bar (HBM stack or host memory bar),
    or an HBM line near it (within
    :data:`HBM_SCALE` times), so a program close to (or over) HBM shows the line on scale."""
    tallest = max((max(memory_total(r.memory), r.memory.host) for r in c.results), default=1)
    near = [h for h in hbm_lines(c) if h <= HBM_SCALE * tallest]
    return max([tallest, *near])


# --------------------------------------------------------------------------------------------
# Chart scales


def byte_ticks(top: int, most: int = 6) -> list[int]:
    """Round tick values in binary units from 0 to at least ``top``, at most ``most`` ticks.

    ``byte_ticks(7 * 2**20)`` (7 MiB) gives 0, 2, 4, 6 and 8 MiB, in bytes.
    """
    top = max(int(top), 1)
    unit = 1
    while unit * 1024 <= top:
        unit *= 1024
    span = top / unit
    steps = (0.25, 0.5, 1, 2, 2.5, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000)
    step: float = steps[-1]
    for s in steps:
        if unit == 1 and s != int(s):
            continue
        if math.ceil(span / s - 1e-9) + 1 <= most:
            step = s
            break
    step_bytes = round(step * unit)
    n = math.ceil(top / step_bytes - 1e-9)
    return [i * step_bytes for i in range(n + 1)]


def tick_label(v: int) -> str:
    """A byte tick as charts label it: ``0``, ``2 MiB``."""
    return "0" if v == 0 else format_bytes(v)


@dataclass(frozen=True)
class Scale:
    """A chart's byte scale: the tallest value it must hold, its ticks and their labels."""

    top: int
    ticks: tuple[int, ...]
    labels: tuple[str, ...]
    #: The last tick (at least 1): the bytes at the chart's edge.
    end: int


def byte_scale(top: int) -> Scale:
    """The scale of a chart whose tallest value is ``top`` bytes (:func:`byte_ticks`)."""
    ticks = tuple(byte_ticks(top))
    return Scale(top, ticks, tuple(tick_label(v) for v in ticks), ticks[-1] or 1)


def finding_lines(c: Comparison) -> list[tuple[str, str]]:
    """``(strategy label, "severity · kind · title")`` for every finding of every strategy's
    report (what :func:`shardviz.diagnose` says about it; nothing for undiagnosed reports)."""
    out = []
    for r in c.results:
        for f in r.report.findings or ():
            fix = f" · fix: {f.fix.description}" if f.fix is not None else ""
            out.append((c.label(r), f"{f.severity} · {f.kind} · {f.title}{fix}"))
    return out


def schedule_line(r: StrategyResult) -> str:
    """``pipeline: 1f1b, shard_map · 4 stages x 8 microbatches · bubble 27.3% of the schedule
    (theory (S-1)/(M+S-1) 27.3%)`` for a pipeline strategy (the kind, how it is written and
    whether it is checkpointed first), else ``""``."""
    s = r.schedule
    if s is None:
        return ""
    measured = "" if s.measured_bubble is None else f" · measured {s.measured_bubble:.1%}"
    return (
        f"pipeline: {short_how(s)} · {s.stages} stages x {s.microbatches} microbatches · bubble "
        f"{s.schedule_bubble_fraction:.1%} of the schedule (theory (S-1)/(M+S-1) "
        f"{s.theory_bubble_fraction:.1%}){measured}"
    )


# --------------------------------------------------------------------------------------------
# The view: every word and figure above, computed once per comparison and read by the text,
# the HTML, the plotly and the matplotlib views.


@dataclass(frozen=True)
class PartView(JsonMixin):
    """One component of a strategy's memory: its bytes, short and exact."""

    component: Component
    bytes: int
    text: str  # ``3 MiB``
    exact: str  # ``3 MiB (3,145,728 B)``


@dataclass(frozen=True)
class CollectiveRow:
    """A strategy's collectives of one kind over one tuple of mesh axes (a row of its table)."""

    kind: str
    axes: tuple[str, ...]
    axes_label: str
    count: int
    in_bytes: int
    in_str: str
    moved: int
    moved_str: str
    cross: int
    #: Bytes across hosts, or ``—`` on a mesh within one host.
    cross_str: str


@dataclass(frozen=True)
class Traffic:
    """A strategy's collectives of one kind, or over one tuple of mesh axes: a bar of a
    transfer chart, a cell of the by-axes table. ``rows`` is the other split (by axes for a
    kind, by kind for axes): places in :attr:`StrategyView.rows`, read with
    :meth:`StrategyView.split`."""

    label: str
    count: int
    moved: int
    moved_str: str
    moved_exact: str
    cross: int
    #: Bytes across hosts, or ``—`` on a mesh within one host.
    cross_str: str
    rows: tuple[int, ...]


@dataclass(frozen=True)
class Series:
    """A collective kind, or a tuple of mesh axes, some strategy moves bytes by: one bar per
    strategy on a transfer chart. ``key`` is its data attribute's value (``all-reduce``,
    ``data,model``; ``""``: no axis)."""

    key: str
    label: str
    color: str
    axes: tuple[str, ...]


@dataclass(frozen=True)
class EstimateView(JsonMixin):
    """A strategy's estimate on its target, as every view words it."""

    target: str
    step_seconds: float
    step_str: str  # ``144 µs``
    at_least: str  # ``≥ 144 µs``
    bound: str
    mfu_str: str
    compute_str: str
    memory_str: str
    collectives_str: str
    fits: bool | None
    fit_word: str  # fits / does not fit / unknown
    fit_text: str  # ``fits: 6.3 MiB of 16 GiB``
    fit_figures: str  # ``6.3 MiB of 16 GiB``
    #: :func:`estimate_line`: the whole estimate in one line.
    line: str
    hbm_bytes: int
    hbm_str: str
    hbm_exact: str
    #: ``not a bound: 3 calls of `splash_mha_fwd` not counted: …`` where a kernel was not
    #: counted (then the step and MFU are no bound), else ``""``; ``mark``
    #: (:data:`NOT_A_BOUND_MARK` or ``""``) follows those figures in the tables.
    not_a_bound: str = ""
    mark: str = ""

    @property
    def bounded(self) -> bool:
        """Whether the step and MFU are bounds (every kernel counted)."""
        return not self.not_a_bound


@dataclass(frozen=True)
class StrategyView(JsonMixin):
    """One strategy's words and figures: its rows, bars, cards and lines in every view."""

    strategy: str
    label: str  # ``fsdp``, or ``fsdp @ TPU v5e 2x4`` across targets
    heading: str  # the label, and the title when it differs from the strategy
    title: str
    description: str
    target_name: str | None  # ``v5e:2x4`` (the data attribute), ``None`` without a target
    target_label: str  # ``TPU v5e 2x4``, or ``""``
    mesh: str
    #: Whether its mesh spans several hosts.
    hosts: bool
    #: The shown components (:attr:`ComparisonView.components`), in stacking order.
    memory: tuple[PartView, ...]
    memory_total: int
    peak: int
    peak_str: str
    peak_exact: str
    temp: int
    temp_str: str
    temp_line: str
    #: The temp is smaller than the gradients (the views then say what it holds).
    temp_below_grads: bool
    reconciled: bool
    reconciled_str: str
    reconcile_line: str
    #: :attr:`reconcile_line` in two: the figures, and why they differ (``""`` unknown).
    reconcile_figures: str
    reconcile_why: str
    arguments_leaves: str  # ``1,234 B``
    arguments_compiler: str
    count: int
    moved: int
    moved_str: str
    cross: int
    cross_str: str
    #: By kind, then axes (each strategy's table and cards).
    rows: tuple[CollectiveRow, ...]
    #: One per :attr:`ComparisonView.kinds`, in its order.
    by_kind: tuple[Traffic, ...]
    #: One per :attr:`ComparisonView.axes`, in its order.
    by_axes: tuple[Traffic, ...]
    #: The tuples of axes this strategy's collectives run over, in order of first appearance.
    axes_used: tuple[Traffic, ...]
    step_seconds: float | None
    step_str: str
    loss_word: str
    loss_str: str
    estimate: EstimateView | None
    schedule: Schedule | None
    schedule_line: str
    notes: tuple[str, ...]
    report: Report
    #: What the collapsed full report is captioned with: title, description, "the full report".
    report_caption: str

    def split(self, t: Traffic) -> tuple[CollectiveRow, ...]:
        """The rows a cell of :attr:`by_kind`, :attr:`by_axes` or :attr:`axes_used` splits
        into, in the order of :attr:`rows`."""
        return tuple(self.rows[i] for i in t.rows)


@dataclass(frozen=True)
class TargetGroup:
    """The strategies estimated on one target (its full label), by their place in
    :attr:`ComparisonView.strategies` (so a view holds each strategy's words once)."""

    target: str
    indices: tuple[int, ...]


@dataclass(frozen=True)
class ComparisonView(JsonMixin):
    """What every view of a :class:`Comparison` shows, computed once (:func:`comparison_view`)."""

    model: str
    params: str  # ``786,432``
    params_short: str  # ``786K``
    dtype: str
    strategies_word: str  # ``3 strategies``
    header: str  # the text view's header line
    title: str  # the charts' title
    #: ``every strategy on …``; ``None`` when the strategies' meshes differ.
    mesh_line: str | None
    bytes_note: str
    estimate_header: tuple[str, ...]
    has_estimates: bool
    #: Some strategy's mesh spans several hosts (the views then add what crosses hosts).
    multi_host: bool
    #: The results are on several targets (labelled by it).
    by_target: bool
    components: tuple[Component, ...]
    kinds: tuple[Series, ...]
    axes: tuple[Series, ...]
    strategies: tuple[StrategyView, ...]
    target_groups: tuple[TargetGroup, ...]
    #: Labels of the strategies without an estimate (when some have one).
    no_estimate: tuple[str, ...]
    memory_scale: Scale
    kinds_scale: Scale
    axes_scale: Scale
    hbm_lines: tuple[int, ...]
    #: Host memory and the host link per strategy (empty when none uses host memory).
    host: tuple[HostView, ...]
    #: Some target's HBM is above the memory scale's last tick.
    hbm_off_scale: bool
    slowest_step: float
    slowest_estimate: float
    notes: tuple[str, ...]
    #: ``(strategy label, "severity · kind · title")`` per finding.
    findings: tuple[tuple[str, str], ...]
    #: ``(mark, strategy label, "not a bound: 3 calls of `…` not counted: …")`` for each
    #: strategy with a kernel not counted: the note under the estimates, naming the kernels
    #: (``mark``: :data:`NOT_A_BOUND_MARK`, as its figures carry it).
    not_bounds: tuple[tuple[str, str, str], ...] = ()
    #: The footnote under the memory table: argument bytes that do not reconcile, each
    #: reason said once (:func:`reconcile_notes`).
    reconcile_notes: tuple[ReconcileNote, ...] = ()

    def members(self, group: TargetGroup) -> tuple[StrategyView, ...]:
        """The strategies of one of :attr:`target_groups`, in their order."""
        return tuple(self.strategies[i] for i in group.indices)


def part_view(component: Component, n: int) -> PartView:
    """A component's ``n`` bytes, short and exact."""
    return PartView(component, n, format_bytes(n), format_bytes(n, exact=True))


def collective_rows(r: StrategyResult) -> tuple[CollectiveRow, ...]:
    """The strategy's collectives by kind (:func:`kind_rows`), each split by mesh axes."""
    rows = []
    for kr in kind_rows(r):
        for axes, count, moved in kr.by_axes:
            same = [s for s in r.collectives if s.kind == kr.kind and tuple(s.axes) == axes]
            ins = sum(s.in_bytes for s in same)
            cross = sum(s.cross_host_bytes for s in same)
            rows.append(
                CollectiveRow(kr.kind, axes, axes_label(axes), count, ins, format_bytes(ins),
                              moved, format_bytes(moved), cross, cross_str(r, cross))
            )  # fmt: skip
    return tuple(rows)


def traffic(
    r: StrategyResult, label: str, count: int, moved: int, cross: int, rows: Sequence[int]
) -> Traffic:
    """A :class:`Traffic` cell of the strategy with its words (``rows``: places in its rows)."""
    return Traffic(label, count, moved, format_bytes(moved), format_bytes(moved, exact=True),
                   cross, cross_str(r, cross), tuple(rows))  # fmt: skip


def kind_traffic(r: StrategyResult, kind: str, rows: Sequence[CollectiveRow]) -> Traffic:
    """The strategy's collectives of ``kind``, split by mesh axes (``rows``: the strategy's)."""
    cross = sum(s.cross_host_bytes for s in r.collectives if s.kind == kind)
    split = [i for i, x in enumerate(rows) if x.kind == kind]
    return traffic(r, kind, kind_count(r, kind), kind_moved(r, kind), cross, split)


def axes_traffic(
    r: StrategyResult, axes: tuple[str, ...], rows: Sequence[CollectiveRow]
) -> Traffic:
    """The strategy's collectives over exactly ``axes``, split by kind (``rows``: the
    strategy's)."""
    split = [i for i, x in enumerate(rows) if x.axes == axes]
    count, moved, cross = axes_count(r, axes), axes_moved(r, axes), axes_cross(r, axes)
    return traffic(r, axes_label(axes), count, moved, cross, split)


def estimate_view(r: StrategyResult) -> EstimateView | None:
    """The words of the strategy's estimate, or ``None`` without one."""
    e = estimate_of(r)
    if e is None:
        return None
    return EstimateView(
        target=e.target,
        step_seconds=e.step_seconds,
        step_str=format_seconds(e.step_seconds),
        at_least=est_step_str(r),
        bound=e.bound,
        mfu_str=format_mfu(e.mfu),
        compute_str=estimate_seconds_str(e.compute_seconds),
        memory_str=estimate_seconds_str(e.memory_seconds),
        collectives_str=format_seconds(e.collective_seconds),
        fits=e.fits,
        fit_word=fit_word(r),
        fit_text=hbm_fit_str(r),
        fit_figures=hbm_fit_str(r).split(": ", 1)[-1],
        line=estimate_line(r) or "",
        hbm_bytes=e.hbm_bytes,
        hbm_str=format_bytes(e.hbm_bytes),
        hbm_exact=format_bytes(e.hbm_bytes, exact=True),
        not_a_bound=e.not_a_bound,
        mark="" if e.bounded else NOT_A_BOUND_MARK,
    )


def heading_str(c: Comparison, r: StrategyResult) -> str:
    """``dp``, or ``dp · Data parallel`` when the title says more than the strategy's name."""
    name = c.label(r)
    return name if r.title == r.strategy else f"{name} · {r.title}"


def report_caption(r: StrategyResult) -> str:
    """``Data parallel · everything replicated · the full report``."""
    what = [x for x in (r.title, r.description) if x and x != r.strategy]
    return " · ".join([*what, "the full report"])


def strategy_view(
    c: Comparison,
    r: StrategyResult,
    components: Sequence[Component],
    kinds: Sequence[str],
    all_axes: Sequence[tuple[str, ...]],
) -> StrategyView:
    """One strategy's words and figures; ``components``, ``kinds`` and ``all_axes`` are the
    comparison's (its memory parts and transfer cells line up with them)."""
    m = r.memory
    parts = dict(memory_parts(m))
    rows = collective_rows(r)
    moved, cross = moved_total(r), cross_total(r)
    return StrategyView(
        strategy=r.strategy,
        label=c.label(r),
        heading=heading_str(c, r),
        title=r.title,
        description=r.description,
        target_name=r.target.name if r.target is not None else None,
        target_label=r.target_label,
        mesh=mesh_str(r.mesh),
        hosts=r.mesh.num_processes > 1,
        memory=tuple(part_view(comp, parts[comp]) for comp in components),
        memory_total=memory_total(m),
        peak=m.peak,
        peak_str=format_bytes(m.peak),
        peak_exact=format_bytes(m.peak, exact=True),
        temp=m.temp,
        temp_str=format_bytes(m.temp),
        temp_line=temp_line(m),
        temp_below_grads=m.temp < m.grads,
        reconciled=m.reconciled,
        reconciled_str=reconciled_str(m),
        reconcile_line=reconcile_line(m, r.report.platform),
        reconcile_figures=reconcile_figures(m),
        reconcile_why=reconcile_why(m, r.report.platform),
        arguments_leaves=f"{m.arguments_from_leaves:,} B",
        arguments_compiler=f"{m.arguments_from_compiler:,} B",
        count=collective_count(r),
        moved=moved,
        moved_str=format_bytes(moved),
        cross=cross,
        cross_str=cross_str(r, cross),
        rows=rows,
        by_kind=tuple(kind_traffic(r, k, rows) for k in kinds),
        by_axes=tuple(axes_traffic(r, a, rows) for a in all_axes),
        axes_used=tuple(axes_traffic(r, a, rows) for a, _, _ in axes_totals(r)),
        step_seconds=step_time(r),
        step_str=step_str(r),
        loss_word=loss_word(r),
        loss_str=loss_str(r),
        estimate=estimate_view(r),
        schedule=r.schedule,
        schedule_line=schedule_line(r),
        notes=r.notes,
        report=r.report,
        report_caption=report_caption(r),
    )


def kind_series(kinds: Sequence[str]) -> tuple[Series, ...]:
    """The collective kinds as chart series, each in the report view's colour for it."""
    return tuple(Series(k, k, kind_color(k), ()) for k in kinds)


def axes_series(c: Comparison, all_axes: Sequence[tuple[str, ...]]) -> tuple[Series, ...]:
    """The tuples of mesh axes as chart series, in :func:`axes_color` colours."""
    return tuple(Series(",".join(a), axes_label(a), axes_color(c, a), a) for a in all_axes)


def view_groups(strategies: Sequence[StrategyView]) -> tuple[TargetGroup, ...]:
    """The strategies with an estimate grouped by target, as :func:`target_groups` groups
    the results: targets in order of first appearance, strategies in their order."""
    out: dict[str, list[int]] = {}
    for i, s in enumerate(strategies):
        if s.estimate is not None:
            out.setdefault(s.estimate.target, []).append(i)
    return tuple(TargetGroup(t, tuple(ii)) for t, ii in out.items())


@dataclass(frozen=True)
class ReconcileNote:
    """One line of the footnote under the memory table: the strategies it is about and what
    it says of their argument bytes."""

    strategies: tuple[str, ...]
    labels: tuple[str, ...]
    text: str


def reconcile_notes(strategies: Sequence[StrategyView]) -> tuple[ReconcileNote, ...]:
    """The strategies whose argument bytes do not reconcile, each reason said once: those
    with the same figures share a line; a reason several lines share (a TPU's layout padding
    for every strategy) follows them once, naming them; a reason one line has stays in it."""
    by_why: dict[str, dict[str, list[StrategyView]]] = {}
    for s in strategies:
        if not s.reconciled:
            by_why.setdefault(s.reconcile_why, {}).setdefault(s.reconcile_figures, []).append(s)
    notes: list[ReconcileNote] = []
    for why, by_figures in by_why.items():
        alone = len(by_figures) == 1
        for figures, group in by_figures.items():
            text = _with_why(figures, why) if alone else figures
            notes.append(ReconcileNote(*_named(group), text))
        if why and not alone:
            everyone = [s for group in by_figures.values() for s in group]
            notes.append(ReconcileNote(*_named(everyone), f"compiler above the leaves: {why}"))
    return tuple(notes)


def _named(group: Sequence[StrategyView]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    return tuple(s.strategy for s in group), tuple(s.label for s in group)


def strategies_word(n: int) -> str:
    """``3 strategies``, ``1 strategy``."""
    return f"{n} strateg{'ies' if n != 1 else 'y'}"


def comparison_view(c: Comparison) -> ComparisonView:
    """Everything the comparison views show, from the comparison alone."""
    components = tuple(shown_components(c))
    kinds = comparison_kinds(c)
    all_axes = comparison_axes(c)
    strategies = tuple(strategy_view(c, r, components, kinds, all_axes) for r in c.results)
    mesh = common_mesh(c)
    memory = byte_scale(memory_chart_top(c))
    hbm = tuple(hbm_lines(c))
    word = strategies_word(len(c.results))
    short = format_count(c.num_params)
    estimates = [s.estimate for s in strategies if s.estimate is not None]
    return ComparisonView(
        model=c.model,
        params=f"{c.num_params:,}",
        params_short=short,
        dtype=c.param_dtype,
        strategies_word=word,
        header=header_str(c),
        title=f"{c.model} · {short} parameters · {c.param_dtype} · {word}",
        mesh_line=f"every strategy on {mesh_summary(mesh)}" if mesh is not None else None,
        bytes_note=BYTES_NOTE,
        estimate_header=tuple(estimate_header(c)),
        has_estimates=has_estimates(c),
        multi_host=multi_host(c),
        by_target=c.by_target,
        components=components,
        kinds=kind_series(kinds),
        axes=axes_series(c, all_axes),
        strategies=strategies,
        target_groups=view_groups(strategies),
        no_estimate=tuple(s.label for s in strategies if s.estimate is None),
        memory_scale=memory,
        kinds_scale=byte_scale(max((t.moved for s in strategies for t in s.by_kind), default=1)),
        axes_scale=byte_scale(max((t.moved for s in strategies for t in s.by_axes), default=1)),
        hbm_lines=hbm,
        host=host_views(c),
        hbm_off_scale=any(h > memory.end for h in hbm),
        slowest_step=max((s.step_seconds or 0.0 for s in strategies), default=0.0),
        slowest_estimate=max((e.step_seconds for e in estimates), default=0.0),
        notes=c.notes,
        findings=tuple(finding_lines(c)),
        not_bounds=tuple(
            (s.estimate.mark, s.label, s.estimate.not_a_bound)
            for s in strategies
            if s.estimate is not None and s.estimate.not_a_bound
        ),
        reconcile_notes=reconcile_notes(strategies),
    )
