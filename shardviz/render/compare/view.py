"""The facts of a :class:`~shardviz.model.Comparison` that every comparison view shows.

Memory by component, collectives by kind and by mesh axes, the step time, the loss check,
estimates on targets and byte ticks for charts: :mod:`.compare_text`, :mod:`.compare_html`,
:mod:`.compare_plotly` and :mod:`.compare_mpl` read them here, so every view shows the same
numbers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from shardviz.model.compare import Comparison, MemoryBreakdown, StrategyResult
from shardviz.model.estimate import Estimate
from shardviz.model.mesh import MeshLayout
from shardviz.model.program import COLLECTIVE_KINDS
from shardviz.model.units import format_bytes, format_seconds, sig3
from shardviz.render.report.view import ESTIMATE_WORDS, format_mfu, headroom_str
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
    """Every component with its bytes, in stacking order; ``other`` fills the rest of the peak
    (never below zero), so the parts add up to :func:`memory_total`."""
    parts = [
        (COMPONENT_BY_KEY["params"], m.params),
        (COMPONENT_BY_KEY["grads"], m.grads),
        (COMPONENT_BY_KEY["optimizer"], m.optimizer),
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


def format_count(n: int) -> str:
    """A parameter count for people: ``786K``, ``7.5B``, ``1T``, ``512``."""
    for scale, unit in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")):
        if abs(n) >= scale:
            return f"{sig3(n / scale)}{unit}"
    return str(n)


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


def reconcile_line(m: MemoryBreakdown) -> str:
    """Both argument figures exactly, and whether they agree."""
    leaves, comp = m.arguments_from_leaves, m.arguments_from_compiler
    if leaves == comp:
        return f"arguments: leaves {leaves:,} B = compiler {comp:,} B (reconciled)"
    diff = comp - leaves
    return (
        f"arguments: leaves {leaves:,} B ≠ compiler {comp:,} B "
        f"(compiler {'+' if diff > 0 else '-'}{abs(diff):,} B; not reconciled)"
    )


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
    """``≥ 144 µs`` (a lower bound), or ``n/a`` without an estimate."""
    e = estimate_of(r)
    return f"≥ {format_seconds(e.step_seconds)}" if e is not None else "n/a"


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
    fits: 6.3 MiB of 16 GiB per device``, or ``None`` without an estimate."""
    e = estimate_of(r)
    if e is None:
        return None
    room = headroom_str(e)
    mfu = f"MFU ≤ {format_mfu(e.mfu)}" if e.mfu is not None else "MFU unknown"
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
        f"estimated on {e.target}: step ≥ {format_seconds(e.step_seconds)} ({e.bound}-bound, "
        f"{mfu}){predicted}; {e.fit_text} per device" + (f", {room}" if room else "") + low
    )


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
    """The top of the memory charts' scale: the tallest bar, or an HBM line near it (within
    :data:`HBM_SCALE` times), so a program close to (or over) HBM shows the line on scale."""
    tallest = max((memory_total(r.memory) for r in c.results), default=1)
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
