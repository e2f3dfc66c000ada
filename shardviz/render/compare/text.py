"""A :class:`~shardviz.model.Comparison` of strategies as plain text.

Deterministic (no colour codes, no timestamps) so golden files pin it down. The facts it
prints come from :mod:`.compare_facts`, which the HTML, plotly and matplotlib views read too.
"""

from __future__ import annotations

from collections.abc import Sequence

from shardviz.model.compare import Comparison, StrategyResult
from shardviz.model.units import format_bytes, format_seconds
from shardviz.render.compare.view import (
    BYTES_NOTE,
    axes_count,
    axes_cross,
    axes_label,
    axes_moved,
    collective_count,
    common_mesh,
    comparison_axes,
    cross_str,
    cross_total,
    estimate_header,
    estimate_line,
    estimate_of,
    finding_lines,
    has_estimates,
    header_str,
    kind_rows,
    loss_str,
    loss_word,
    memory_parts,
    mesh_str,
    moved_total,
    multi_host,
    reconcile_line,
    reconciled_str,
    schedule_line,
    shown_components,
    step_str,
    target_groups,
    temp_line,
)
from shardviz.render.geometry import mesh_summary
from shardviz.render.report.view import ESTIMATE_WORDS, estimate_seconds_str, format_mfu
from shardviz.render.table import aligned_table


def _memory_table(c: Comparison) -> list[str]:
    comps = shown_components(c)
    header = ["strategy", "mesh", *(x.label for x in comps), "peak", "compiler temp",
              "reconciled"]  # fmt: skip
    rows: list[Sequence[str] | str] = []
    for r in c.results:
        parts = dict(memory_parts(r.memory))
        rows.append(
            [
                c.label(r),
                mesh_str(r.mesh),
                *(format_bytes(parts[x]) for x in comps),
                format_bytes(r.memory.peak),
                format_bytes(r.memory.temp),
                reconciled_str(r.memory),
            ]
        )
    lines = ["Memory per device, by component"]
    lines.extend(aligned_table(header, rows, right=set(range(2, 4 + len(comps))), indent="  "))
    return lines


def _run_table(c: Comparison) -> list[str]:
    hosts = multi_host(c)
    header = ["strategy", "collectives", "moved", "step", "loss check"]
    rows: list[Sequence[str] | str] = []
    for r in c.results:
        row = [c.label(r), str(collective_count(r)), format_bytes(moved_total(r)), step_str(r),
               loss_word(r)]  # fmt: skip
        if hosts:
            row.insert(3, cross_str(r, cross_total(r)))
        rows.append(row)
    if hosts:
        header.insert(3, "across hosts")
    lines = ["Collectives per step, step time (median) and the loss check"]
    lines.extend(aligned_table(header, rows, right=set(range(1, 4 + hosts)), indent="  "))
    return lines


def _axes_table(c: Comparison) -> list[str]:
    """Bytes moved per step by mesh axes, one column per tuple of axes: which axis carries
    the traffic (``—`` where a strategy moves nothing over it)."""
    all_axes = comparison_axes(c)
    if not all_axes:
        return []
    header = ["strategy", *(axes_label(a) for a in all_axes)]
    rows: list[Sequence[str] | str] = []
    for r in c.results:
        cells = [c.label(r)]
        for a in all_axes:
            n = axes_count(r, a)
            cells.append(f"×{n} {format_bytes(axes_moved(r, a))}" if n else "—")
        rows.append(cells)
    lines = ["Bytes moved per step, by mesh axes (count, moved per device)"]
    lines.extend(aligned_table(header, rows, right=set(range(1, 1 + len(all_axes))), indent="  "))
    if multi_host(c):
        lines += ["", "Bytes across hosts per step, by mesh axes (per device; part of moved)"]
        rows = [
            [c.label(r), *(cross_str(r, axes_cross(r, a)) if axes_count(r, a) else "—"
                           for a in all_axes)]
            for r in c.results
        ]  # fmt: skip
        lines.extend(
            aligned_table(header, rows, right=set(range(1, 1 + len(all_axes))), indent="  ")
        )
    return lines


def _estimate_table(c: Comparison) -> list[str]:
    header = ["strategy", "step ≥", "bound", "MFU ≤", "compute", "memory", "collectives", "HBM"]
    rows: list[Sequence[str] | str] = []
    groups = target_groups(c)
    for target, results in groups:
        if len(groups) > 1:
            rows.append(f"  on {target}")
        for r in results:
            e = estimate_of(r)
            assert e is not None
            rows.append(
                [
                    r.strategy,
                    format_seconds(e.step_seconds),
                    e.bound,
                    format_mfu(e.mfu),
                    estimate_seconds_str(e.compute_seconds),
                    estimate_seconds_str(e.memory_seconds),
                    format_seconds(e.collective_seconds),
                    e.fit_text,
                ]
            )
    missing = [c.label(r) for r in c.results if estimate_of(r) is None]
    if missing:
        rows.append(f"  no estimate (no target): {', '.join(missing)}")
    lines = [f"Estimated step per device ({ESTIMATE_WORDS}; HBM: peak against the target's)"]
    lines.extend(aligned_table(header, rows, right={1, 3, 4, 5, 6}, indent="  "))
    return lines


def _strategy_lines(c: Comparison, r: StrategyResult) -> list[str]:
    name = c.label(r)
    head = name if r.title == r.strategy else f"{name} · {r.title}"
    lines = [f"{head} · Mesh {mesh_str(r.mesh)}"]
    if r.description:
        lines.append(f"  {r.description}")
    pipeline = schedule_line(r)
    if pipeline:
        lines.append(f"  {pipeline}")
    m = r.memory
    lines.append(f"  peak {format_bytes(m.peak, exact=True)} per device")
    lines.append(f"  {reconcile_line(m)}")
    lines.append(f"  {temp_line(m)}")
    lines.append(f"  {loss_str(r)} · step {step_str(r)} (median)")
    est = estimate_line(r)
    if est:
        lines.append(f"  {est}")
    n, moved = collective_count(r), moved_total(r)
    if not n:
        lines.append("  collectives: none, every value stays where the specs put it")
        return lines
    lines.append(
        f"  collectives: {n} per step · {format_bytes(moved)} moved per device, by kind and axes:"
    )
    hosts = r.mesh.num_processes > 1
    rows: list[Sequence[str] | str] = []
    for kr in kind_rows(r):
        for axes, count, mv in kr.by_axes:
            same = [s for s in r.collectives if s.kind == kr.kind and tuple(s.axes) == axes]
            row = [kr.kind, axes_label(axes), str(count),
                   format_bytes(sum(s.in_bytes for s in same)), format_bytes(mv)]  # fmt: skip
            if hosts:
                row.append(format_bytes(sum(s.cross_host_bytes for s in same)))
            rows.append(row)
    header = ["kind", "axes", "count", "in", "moved"] + ["across hosts"] * hosts
    lines.extend(aligned_table(header, rows, set(range(2, 5 + hosts)), indent="    "))
    return lines


def comparison_text(c: Comparison) -> str:
    """A comparison as text: a header, the tables (memory per device by component, the peak,
    the compiler's temp, whether the leaves reconcile with the compiler; collectives, step
    time, the loss check; bytes moved by mesh axes), each strategy's temp and collectives by
    kind and mesh axes, then the notes.

    Args:
        c: the comparison (live or hand-built).

    Returns:
        Deterministic lines joined by newlines, no trailing newline.
    """
    lines = [f"Comparison · {header_str(c)}"]
    mesh = common_mesh(c)
    if mesh is not None:
        lines.append(f"  every strategy on {mesh_summary(mesh)}")
    lines.append(f"  {BYTES_NOTE}")
    lines.extend(f"  {x}" for x in estimate_header(c))
    sections = [lines]
    if c.results:
        tables = _memory_table(c) + [""] + _run_table(c)
        by_axes = _axes_table(c)
        if by_axes:
            tables += [""] + by_axes
        if has_estimates(c):
            tables += [""] + _estimate_table(c)
        sections.append(tables)
        sections.extend(_strategy_lines(c, r) for r in c.results)
    else:
        sections.append(["no strategies"])
    notes = [f"  {n}" for n in c.notes]
    notes += [f"  {c.label(r)}: {n}" for r in c.results for n in r.notes]
    if notes:
        sections.append(["Notes", *notes])
    found = [f"  {label}: {text}" for label, text in finding_lines(c)]
    if found:
        sections.append(["Findings (print(result.report.findings) for each in full)", *found])
    return "\n\n".join("\n".join(s) for s in sections)
