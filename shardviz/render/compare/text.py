"""A :class:`~shardviz.model.Comparison` of strategies as plain text.

Deterministic (no colour codes, no timestamps) so golden files pin it down. The words and
figures it prints come from :func:`~.view.comparison_view`, which the HTML, plotly and
matplotlib views read too.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence

from shardviz.model.compare import Comparison
from shardviz.render.compare.host import roles_str
from shardviz.render.compare.view import ComparisonView, StrategyView, comparison_view
from shardviz.render.report.view import ESTIMATE_WORDS
from shardviz.render.table import aligned_table


def _memory_table(view: ComparisonView) -> list[str]:
    comps = view.components
    header = ["strategy", "mesh", *(x.label for x in comps), "peak", "compiler temp",
              "reconciled"]  # fmt: skip
    rows: list[Sequence[str] | str] = [
        [s.label, s.mesh, *(p.text for p in s.memory), s.peak_str, s.temp_str, s.reconciled_str]
        for s in view.strategies
    ]
    lines = ["Memory per device, by component"]
    lines.extend(aligned_table(header, rows, right=set(range(2, 4 + len(comps))), indent="  "))
    return lines


def _host_table(view: ComparisonView) -> list[str]:
    """HBM peak beside host memory, the bytes each way over the host link per step, and
    the link's time on the target (only when some strategy uses host memory)."""
    if not view.host:
        return []
    header = ["strategy", "HBM peak", "host", "host by role", "host link per step", "link time",
              "step with host link"]  # fmt: skip
    rows: list[Sequence[str] | str] = [
        [h.label, h.hbm_str, h.host_str, roles_str(h), h.moved_str, h.link_str, h.step_str]
        for h in view.host
    ]
    lines = ["HBM and host memory per device, and the host link per step"]
    lines.extend(aligned_table(header, rows, right={1, 2}, indent="  "))
    return lines


def _run_table(view: ComparisonView) -> list[str]:
    hosts = view.multi_host
    header = ["strategy", "collectives", "moved", "step", "loss check"]
    rows: list[Sequence[str] | str] = []
    for s in view.strategies:
        row = [s.label, str(s.count), s.moved_str, s.step_str, s.loss_word]
        if hosts:
            row.insert(3, s.cross_str)
        rows.append(row)
    if hosts:
        header.insert(3, "across hosts")
    lines = ["Collectives per step, step time (median) and the loss check"]
    lines.extend(aligned_table(header, rows, right=set(range(1, 4 + hosts)), indent="  "))
    return lines


def _axes_table(view: ComparisonView) -> list[str]:
    """Bytes moved per step by mesh axes, one column per tuple of axes: which axis carries
    the traffic (``—`` where a strategy moves nothing over it)."""
    if not view.axes:
        return []
    header = ["strategy", *(a.label for a in view.axes)]
    right = set(range(1, 1 + len(view.axes)))
    rows: list[Sequence[str] | str] = [
        [s.label, *(f"×{t.count} {t.moved_str}" if t.count else "—" for t in s.by_axes)]
        for s in view.strategies
    ]
    lines = ["Bytes moved per step, by mesh axes (count, moved per device)"]
    lines.extend(aligned_table(header, rows, right=right, indent="  "))
    if view.multi_host:
        lines += ["", "Bytes across hosts per step, by mesh axes (per device; part of moved)"]
        rows = [
            [s.label, *(t.cross_str if t.count else "—" for t in s.by_axes)]
            for s in view.strategies
        ]
        lines.extend(aligned_table(header, rows, right=right, indent="  "))
    return lines


def _estimate_table(view: ComparisonView) -> list[str]:
    header = ["strategy", "step ≥", "bound", "MFU ≤", "compute", "memory", "collectives", "HBM"]
    rows: list[Sequence[str] | str] = []
    for group in view.target_groups:
        if len(view.target_groups) > 1:
            rows.append(f"  on {group.target}")
        for s in view.members(group):
            e = s.estimate
            assert e is not None
            mark = f" {e.mark}" if e.mark else ""
            rows.append([s.strategy, e.step_str + mark, e.bound, e.mfu_str + mark, e.compute_str,
                         e.memory_str, e.collectives_str, e.fit_text])  # fmt: skip
    if view.no_estimate:
        rows.append(f"  no estimate (no target): {', '.join(view.no_estimate)}")
    lines = [f"Estimated step per device ({ESTIMATE_WORDS}; HBM: peak against the target's)"]
    lines.extend(aligned_table(header, rows, right={1, 3, 4, 5, 6}, indent="  "))
    lines.extend(f"  {mark} {label}: {text}" for mark, label, text in view.not_bounds)
    return lines


def _shared_whys(view: ComparisonView) -> dict[str, list[str]]:
    """Reasons that several strategies' argument figures differ for (a TPU's layout padding
    for every strategy): said once in the notes, not in each strategy's block."""
    by_why: dict[str, list[str]] = {}
    for s in view.strategies:
        if not s.reconciled and s.reconcile_why:
            by_why.setdefault(s.reconcile_why, []).append(s.label)
    return {why: labels for why, labels in by_why.items() if len(labels) > 1}


def _strategy_lines(s: StrategyView, shared: Mapping[str, list[str]]) -> list[str]:
    lines = [f"{s.heading} · Mesh {s.mesh}"]
    if s.description:
        lines.append(f"  {s.description}")
    if s.schedule_line:
        lines.append(f"  {s.schedule_line}")
    lines.append(f"  peak {s.peak_exact} per device")
    reconcile = s.reconcile_figures if s.reconcile_why in shared else s.reconcile_line
    lines.append(f"  {reconcile}")
    lines.append(f"  {s.temp_line}")
    lines.append(f"  {s.loss_str} · step {s.step_str} (median)")
    if s.estimate is not None and s.estimate.line:
        lines.append(f"  {s.estimate.line}")
    if not s.count:
        lines.append("  collectives: none, every value stays where the specs put it")
        return lines
    lines.append(
        f"  collectives: {s.count} per step · {s.moved_str} moved per device, by kind and axes:"
    )
    rows: list[Sequence[str] | str] = []
    for x in s.rows:
        row = [x.kind, x.axes_label, str(x.count), x.in_str, x.moved_str]
        if s.hosts:
            row.append(x.cross_str)
        rows.append(row)
    header = ["kind", "axes", "count", "in", "moved"] + ["across hosts"] * s.hosts
    lines.extend(aligned_table(header, rows, set(range(2, 5 + s.hosts)), indent="    "))
    return lines


def comparison_text(c: Comparison | ComparisonView) -> str:
    """A comparison as text: a header, the tables (memory per device by component, the peak,
    the compiler's temp, whether the leaves reconcile with the compiler; collectives, step
    time, the loss check; bytes moved by mesh axes), each strategy's temp and collectives by
    kind and mesh axes, then the notes.

    Args:
        c: the comparison (live or hand-built), or its view (:func:`comparison_view`).

    Returns:
        Deterministic lines joined by newlines, no trailing newline.
    """
    view = c if isinstance(c, ComparisonView) else comparison_view(c)
    lines = [f"Comparison · {view.header}"]
    if view.mesh_line is not None:
        lines.append(f"  {view.mesh_line}")
    lines.append(f"  {view.bytes_note}")
    lines.extend(f"  {x}" for x in view.estimate_header)
    sections = [lines]
    if view.strategies:
        tables = _memory_table(view) + [""] + _run_table(view)
        if view.host:
            tables += [""] + _host_table(view)
        by_axes = _axes_table(view)
        if by_axes:
            tables += [""] + by_axes
        if view.has_estimates:
            tables += [""] + _estimate_table(view)
        sections.append(tables)
        shared = _shared_whys(view)
        sections.extend(_strategy_lines(s, shared) for s in view.strategies)
    else:
        shared = {}
        sections.append(["no strategies"])
    notes = [f"  {n}" for n in view.notes]
    notes += [
        textwrap.fill(
            f"{', '.join(labels)}: arguments, compiler above the leaves: {why}",
            width=99,
            initial_indent="  ",
            subsequent_indent="    ",
            break_on_hyphens=False,
        )
        for why, labels in shared.items()
    ]
    notes += [f"  {s.label}: {n}" for s in view.strategies for n in s.notes]
    if notes:
        sections.append(["Notes", *notes])
    found = [f"  {label}: {text}" for label, text in view.findings]
    if found:
        sections.append(["Findings (print(result.report.findings) for each in full)", *found])
    return "\n\n".join("\n".join(s) for s in sections)
