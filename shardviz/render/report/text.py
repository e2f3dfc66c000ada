"""A compiled program's :class:`~shardviz.model.Report` as plain text.

Deterministic (no colour codes, no timestamps) so golden files pin it down. The facts it
prints come from :mod:`.report_facts`, which :mod:`.report_html` reads too.
"""

from __future__ import annotations

from collections.abc import Sequence

from shardviz.model.program import Cost, MemoryReport, OpTiming, Report
from shardviz.model.units import format_bytes, format_flops, format_seconds, sig3
from shardviz.render.findings.text import findings_section_lines
from shardviz.render.report.view import (
    MAX_LEAVES,
    MAX_OPS,
    MemoryPart,
    assignment_str,
    axes_groups,
    check_word,
    compiler_peak_str,
    cost_rows,
    estimate_notes,
    estimate_rows,
    estimate_title,
    format_diff,
    format_float_bytes,
    has_estimates,
    host_rows,
    host_spread,
    hosts_headline,
    kind_totals,
    layout_hint,
    ledger_headline,
    measured_step,
    memory_parts,
    mesh_line,
    multi_host,
    no_source_words,
    on_one_device,
    one_device_cost,
    profile_rows,
    reshard_links,
    role_totals,
    short_location,
    shown_intermediates,
    status_line,
    sum_rule_str,
    target_line,
    value_str,
)
from shardviz.render.table import aligned_table
from shardviz.render.timeline import timeline_lines


def _header_lines(report: Report) -> list[str]:
    lines = [
        f"Report · {report.function} · {report.platform}",
        f"  {mesh_line(report)}",
        f"  {status_line(report)}",
    ]
    target = target_line(report)
    if target:
        lines.append(f"  {target}")
    lines.extend(f"  note: {n}" for n in report.notes)
    return lines


def _ledger_lines(report: Report) -> list[str]:
    cs = report.collectives
    lines = [f"Collectives · {ledger_headline(report)} (all bytes per device; moved: ring model)"]
    if not cs:
        lines.append("  none: every value stays where the partition specs put it")
        return lines
    est = has_estimates(report)
    hosts = multi_host(report)
    header = ["#", "kind", "operand", "in", "moved", "group", "origin", "source", "chain"]
    if hosts:
        lines[0] += f" · {hosts_headline(report)}"
        header.insert(5, "across hosts")
    if est:
        lines[0] += " · est.: estimated seconds on the target, a lower bound"
        header.insert(5 + hosts, "est.")
    rows: list[Sequence[str] | str] = []
    sub = " " * 6
    for group in axes_groups(report):
        rows.append(f"  {group.title} · {group.summary}")
        for lr in group.ledger:
            c = lr.collective
            kind = c.kind + (f" #{c.combined[0]}/{c.combined[1]}" if c.combined else "")
            row = [
                str(lr.index),
                kind,
                lr.operand,
                lr.in_bytes,
                lr.moved,
                str(c.group_size),
                c.origin,
                lr.location,
                lr.chain,
            ]
            if hosts:
                row.insert(5, lr.across_hosts)
            if est:
                row.insert(5 + hosts, lr.estimate)
            rows.append(row)
            detail = [f"{c.name}", lr.devices]
            if hosts:
                detail.append(lr.hosts)
            if lr.no_source:
                detail.append(lr.no_source)
            elif c.source is not None and c.source.text:
                detail.append(f"line: {c.source.text}")
            if c.reshard:
                detail.append(f"reshards {c.reshard}")
            if c.note:
                detail.append(c.note)
            if c.estimate_formula:
                detail.append(f"est. {c.estimate_formula}")
            rows.append(sub + " · ".join(detail))
            if c.why is not None:
                rows.append(sub + f"why: {c.why.summary}")
    right = set(range(3, 6 + est + hosts)) | {0}
    lines.extend(aligned_table(header, rows, right=right, indent="  "))
    lines.append("  by kind:")
    totals = kind_totals(cs)
    width = max(len(t.kind) for t in totals)
    lines.extend(f"    {t.kind.ljust(width)}  {t.summary}" for t in totals)
    return lines


def _intermediate_lines(report: Report) -> list[str]:
    ins = report.intermediates
    n = len(ins)
    r = len(report.reshards)
    lines = [
        f"Intermediates · {n} in program order · {r} reshard point{'s' * (r != 1)} (*)"
        + (" where the partitioner moves data" if r else "")
    ]
    if not ins:
        return lines
    links = reshard_links(report)
    kinds = {i: c.kind for i, c in enumerate(report.collectives, 1)}
    header = ["", "#", "name", "op", "value", "spec", "source", "by collective"]
    rows: list[Sequence[str] | str] = []
    for item in shown_intermediates(report):
        if isinstance(item, int):
            rows.append(f"  {'':3}… {item} more without a reshard")
            continue
        j, s = item
        by = ", ".join(f"#{i} {kinds[i]}" for i in links.get(s.name, []))
        rows.append(
            [
                "*" if s.reshard else "",
                str(j),
                s.name,
                s.op,
                value_str(s.dtype, s.shape),
                s.spec_str,
                short_location(s.source),
                by,
            ]
        )
    lines.extend(aligned_table(header, rows, right={1}, indent="  "))
    if any(isinstance(row, list) and row[6] == "?" for row in rows):
        lines.append(f"  ?: {no_source_words('value')}")
    hint = layout_hint(report)
    if hint:
        lines.append(f"  {hint[0]}: {hint[1]}")
    return lines


def _memory_lines(m: MemoryReport, platform: str) -> list[str]:
    lines = [f"Memory per device · peak {format_bytes(m.peak_bytes)} = {m.peak_definition}"]
    parts = [*memory_parts(m), MemoryPart("peak", m.peak_bytes, m.peak_definition)]
    width = max(len(p.name) for p in parts)
    short = [format_bytes(p.bytes) for p in parts]
    exact = [f"{p.bytes:,} B" for p in parts]
    sw, ew = max(map(len, short)), max(map(len, exact))
    for p, a, b in zip(parts, short, exact, strict=True):
        lines.append(f"  {p.name.ljust(width)}  {a.rjust(sw)}  {b.rjust(ew)}  {p.meaning}")
    if m.compiler_peak_bytes is not None and m.compiler_peak_bytes != m.peak_bytes:
        lines.append(f"  {compiler_peak_str(m, platform)}")
    lines.extend(f"  {x}" for x in (sum_rule_str(m), assignment_str(m)) if x)
    if m.by_leaf:
        lines.append("  by leaf (largest device):")
        rows: list[Sequence[str] | str] = [
            [leaf.path, leaf.role, format_bytes(leaf.bytes)] for leaf in m.by_leaf[:MAX_LEAVES]
        ]
        if len(m.by_leaf) > MAX_LEAVES:
            rest = m.by_leaf[MAX_LEAVES:]
            rows.append(
                f"    … {len(rest)} more leaves, {format_bytes(sum(x.bytes for x in rest))}"
            )
        lines.extend(aligned_table(["leaf", "role", "bytes"], rows, right={2}, indent="    "))
        totals = role_totals(m)
        lines.append(
            "    by role: " + " · ".join(f"{r} {format_bytes(b)} ({n})" for r, n, b in totals)
        )
    if m.device_stats:
        lines.append("  live device statistics:")
        rows = [
            [
                f"d{d.device_id}",
                format_bytes(d.bytes_in_use),
                format_bytes(d.peak_bytes_in_use),
                format_bytes(d.bytes_limit) if d.bytes_limit is not None else "n/a",
            ]
            for d in m.device_stats
        ]
        lines.extend(
            aligned_table(
                ["device", "in use", "peak in use", "limit"], rows, {1, 2, 3}, indent="    "
            )
        )
    return lines


def _cost_lines(report: Report) -> list[str]:
    c = report.cost
    if c is None:
        return ["Cost · not available from this backend"]
    lines = ["Cost per step (the compiler's estimate, loops counted)"]
    if on_one_device(report):
        flops, accessed = one_device_cost(c)
        lines.append(f"  flops           {format_flops(flops)} on the one device")
        lines.append(f"  bytes accessed  {format_float_bytes(accessed)} on the one device")
    else:
        lines.extend(_cost_split(c))
    if c.flops_per_device and c.bytes_accessed_per_device:
        lines.append(
            f"  intensity       {sig3(c.flops_per_device / c.bytes_accessed_per_device)} "
            "FLOP per byte accessed"
        )
    lines.extend(
        f"  {name.ljust(14)}  {value} · {meaning}" for name, value, meaning in cost_rows(c)
    )
    return lines


def _cost_split(c: Cost) -> list[str]:
    """Per device and global, side by side."""
    lines = []
    lines.append(
        f"  flops           {format_flops(c.flops_per_device)} per device · "
        f"{format_flops(c.flops_global)} global"
    )
    lines.append(
        f"  bytes accessed  {format_float_bytes(c.bytes_accessed_per_device)} per device · "
        f"{format_float_bytes(c.bytes_accessed_global)} global"
    )
    return lines


def _estimate_lines(report: Report) -> list[str]:
    e = report.estimate
    assert e is not None
    lines = [estimate_title(report)]
    rows = estimate_rows(e, measured_step(report))
    nw = max(len(r.name) for r in rows)
    vw = max(len(r.value) for r in rows)
    lines.extend(f"  {r.name.ljust(nw)}  {r.value.ljust(vw)}  {r.meaning}".rstrip() for r in rows)
    lines.extend(f"  {k}: {n}" for k, n in estimate_notes(report))
    return lines


def _timing_lines(report: Report) -> list[str]:
    t = report.timing
    if t is None:
        return ["Timing · not measured" + ("" if report.ran else " (compile-only)")]
    lines = ["Timing (wall clock)"]
    lines.append(f"  compile    {format_seconds(t.compile_seconds)}")
    lines.append(f"  first run  {format_seconds(t.first_run_seconds)}")
    step = f"  step       {format_seconds(t.step_seconds)} median of {t.steps} steps"
    if t.step_samples:
        step += (
            f" (min {format_seconds(min(t.step_samples))}, "
            f"max {format_seconds(max(t.step_samples))})"
        )
    lines.append(step)
    if report.hosts:
        spread = host_spread(report)
        lines.append(
            "  per host (each process timed its own step)" + (f" · {spread}" if spread else "")
        )
        lines.extend(
            f"    {p}  {d}  step {st}  live peak {pk}" for p, d, st, pk in host_rows(report)
        )
    return lines


def _check_lines(report: Report) -> list[str]:
    c = report.check
    if c is None:
        return ["Check · not run" + ("" if report.ran else " (compile-only)")]
    return [
        f"Check vs {c.reference}: {check_word(report)}",
        f"  max abs diff {format_diff(c.max_abs_diff)} · max rel diff "
        f"{format_diff(c.max_rel_diff)} · tolerance {format_diff(c.tolerance)}"
        + (f" ({c.tolerance_rule})" if c.tolerance_rule else ""),
    ]


def _profile_lines(profile: Sequence[OpTiming]) -> list[str]:
    illustrative = any(op.illustrative for op in profile)
    head = f"Profile · {len(profile)} ops measured"
    if illustrative:
        head += " · ILLUSTRATIVE: measured on CPU, durations do not predict accelerator time"
    lines = [head]
    if not profile:
        return lines
    rows: list[Sequence[str] | str] = []
    ranked = profile_rows(profile)
    for op, total, share in ranked[:MAX_OPS]:
        rows.append(
            [
                op.name,
                str(op.count),
                format_seconds(op.seconds),
                format_seconds(total),
                f"{share * 100:.1f}%",
            ]
        )
    if len(ranked) > MAX_OPS:
        rows.append(f"    … {len(ranked) - MAX_OPS} more ops")
    lines.extend(
        aligned_table(
            ["op", "count", "median", "total", "share"], rows, right={1, 2, 3, 4}, indent="  "
        )
    )
    return lines


def report_text(report: Report) -> str:
    """A report as text: header, the collective ledger grouped by mesh axes, intermediates in
    program order with reshard points starred, memory per device, cost, timing, the check,
    and the profile when there is one.

    Args:
        report: the report (live or hand-built).

    Returns:
        Deterministic lines joined by newlines, no trailing newline.
    """
    sections = [
        _header_lines(report),
        *[s for s in (findings_section_lines(report.findings),) if s],
        _ledger_lines(report),
        _intermediate_lines(report),
        _memory_lines(report.memory, report.platform),
        _cost_lines(report),
        *([_estimate_lines(report)] if report.estimate is not None else []),
        _timing_lines(report),
        _check_lines(report),
    ]
    if report.profile is not None:
        sections.append(_profile_lines(report.profile))
    if report.timeline:
        sections.append(timeline_lines(report))
    return "\n\n".join("\n".join(s) for s in sections)
