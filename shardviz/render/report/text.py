"""A compiled program's :class:`~shardviz.model.Report` as plain text.

Deterministic (no colour codes, no timestamps) so golden files pin it down. Every word and
figure comes from :func:`~.sections.report_view`, which the HTML view reads too.
"""

from __future__ import annotations

from collections.abc import Sequence

from shardviz.model.program import Report
from shardviz.render.findings.text import findings_section_lines
from shardviz.render.report.sections import (
    CheckSection,
    CostSection,
    EstimateSection,
    HeaderSection,
    HostMemory,
    IntermediatesSection,
    LedgerSection,
    MemorySection,
    ProfileSection,
    ReportView,
    TimingSection,
    report_view,
)
from shardviz.render.report.transfers import transfers_lines
from shardviz.render.table import aligned_table
from shardviz.render.timeline import timeline_lines


def _header_lines(h: HeaderSection) -> list[str]:
    lines = [
        f"Report · {h.function} · {h.platform}",
        f"  {h.mesh}",
        f"  {h.status}",
    ]
    if h.target:
        lines.append(f"  {h.target}")
    lines.extend(f"  note: {n}" for n in h.notes)
    return lines


def _ledger_lines(ledger: LedgerSection) -> list[str]:
    lines = [f"Collectives · {ledger.headline} (all bytes per device; moved: ring model)"]
    if not ledger.count:
        lines.append("  none: every value stays where the partition specs put it")
        return lines
    est = ledger.estimates
    hosts = ledger.multi_host
    loops = ledger.loops
    header = ["#", "kind", "operand", "in", "moved", "group", "origin", "source", "chain"]
    if loops:
        lines[0] += " · runs: a step's runs of each, moved counts one"
        header.insert(5, "runs")
    if hosts:
        lines[0] += f" · {ledger.hosts_headline}"
        header.insert(5 + loops, "across hosts")
    if est:
        lines[0] += " · est.: estimated seconds on the target, a lower bound"
        header.insert(5 + loops + hosts, "est.")
    rows: list[Sequence[str] | str] = []
    sub = " " * 6
    for group in ledger.groups:
        rows.append(f"  {group.title} · {group.summary}")
        for lr in group.ledger:
            c = lr.collective
            kind = c.kind + (f" #{c.combined[0]}/{c.combined[1]}" if c.combined else "") + lr.times
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
            if loops:
                row.insert(5, lr.runs)
            if hosts:
                row.insert(5 + loops, lr.across_hosts)
            if est:
                row.insert(5 + loops + hosts, lr.estimate)
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
            if lr.like_it:
                detail.append(lr.like_it)
            rows.append(sub + " · ".join(detail))
            if c.why is not None:
                rows.append(sub + f"why: {c.why.summary}")
    right = set(range(3, 6 + est + hosts + loops)) | {0}
    lines.extend(aligned_table(header, rows, right=right, indent="  "))
    lines.append("  by kind:")
    totals = ledger.kinds
    width = max(len(t.kind) for t in totals)
    lines.extend(f"    {t.kind.ljust(width)}  {t.summary}" for t in totals)
    return lines


def _intermediate_lines(ins: IntermediatesSection) -> list[str]:
    r = ins.reshards
    lines = [
        f"Intermediates · {ins.count} in program order · {r} reshard point{'s' * (r != 1)} (*)"
        + (" where the partitioner moves data" if r else "")
    ]
    if not ins.count:
        return lines
    header = ["", "#", "name", "op", "value", "spec", "source", "by collective"]
    rows: list[Sequence[str] | str] = []
    for item in ins.listed:
        if isinstance(item, int):
            rows.append(f"  {'':3}… {item} more without a reshard")
            continue
        s = item.value
        rows.append(
            [
                "*" if s.reshard else "",
                str(item.index),
                s.name + item.times,
                s.op,
                item.shape,
                s.spec_str,
                item.location,
                ", ".join(f"#{i} {kind}" for i, kind in item.by),
            ]
        )
    lines.extend(aligned_table(header, rows, right={1}, indent="  "))
    if any(isinstance(row, list) and row[6] == "?" for row in rows):
        lines.append(f"  ?: {ins.no_source}")
    if ins.hint:
        lines.append(f"  {ins.hint[0]}: {ins.hint[1]}")
    return lines


def _host_lines(h: HostMemory) -> list[str]:
    lines = [f"  {h.line}", f"    from {h.source}"]
    if h.mismatch:
        lines.append(f"    differs: {h.mismatch}")
    lines.extend(f"    on host: {p} ({role}, {kind}) {text}" for p, role, kind, text in h.leaves)
    return lines


def _memory_lines(m: MemorySection) -> list[str]:
    lines = [f"Memory per device · peak {m.peak} = {m.peak_definition}"]
    width = max(len(p.name) for p in m.parts)
    sw = max(len(p.text) for p in m.parts)
    ew = max(len(p.exact) for p in m.parts)
    for p in m.parts:
        lines.append(
            f"  {p.name.ljust(width)}  {p.text.rjust(sw)}  {p.exact.rjust(ew)}  {p.meaning}"
        )
    if m.compiler_peak:
        lines.append(f"  {m.compiler_peak}")
    lines.extend(f"  {x}" for x in m.notes)
    if m.host is not None:
        lines.extend(_host_lines(m.host))
    if m.leaves:
        lines.append("  by leaf (largest device):")
        head = ["leaf", "role", "bytes"] + (["memory"] if m.any_host_leaf else [])
        rows: list[Sequence[str] | str] = [
            [x.path, x.role, x.text] + ([x.memory] if m.any_host_leaf else []) for x in m.leaves
        ]
        if m.more_leaves:
            rows.append(f"    {m.more_leaves}")
        lines.extend(aligned_table(head, rows, right={2}, indent="    "))
        lines.append("    by role: " + " · ".join(r.label for r in m.roles))
    if m.devices:
        lines.append("  live device statistics:")
        lines.extend(
            aligned_table(
                ["device", "in use", "peak in use", "limit"],
                [list(d) for d in m.devices],
                {1, 2, 3},
                indent="    ",
            )
        )
    return lines


def _cost_lines(c: CostSection) -> list[str]:
    if not c.available:
        return ["Cost · not available from this backend"]
    lines = [f"Cost per step (the compiler's estimate, {c.loops})"]
    if c.one_device:
        lines.append(f"  flops           {c.flops} on the one device")
        lines.append(f"  bytes accessed  {c.accessed} on the one device")
    else:
        lines.append(f"  flops           {c.flops} per device · {c.flops_global} global")
        lines.append(f"  bytes accessed  {c.accessed} per device · {c.accessed_global} global")
    if c.intensity:
        lines.append(f"  intensity       {c.intensity} FLOP per byte accessed")
    lines.extend(f"  {name.ljust(14)}  {value} · {meaning}" for name, value, meaning in c.more)
    if c.kernels:
        lines.append(f"  {c.kernels_heading}:")
        width = max(len(k.name) for k in c.kernels)
        lines.extend(f"    {k.name.ljust(width)}  {k.flops} · {k.meaning}" for k in c.kernels)
    return lines


def _estimate_lines(e: EstimateSection) -> list[str]:
    lines = [e.title]
    nw = max(len(r.name) for r in e.rows)
    vw = max(len(r.value) for r in e.rows)
    lines.extend(f"  {r.name.ljust(nw)}  {r.value.ljust(vw)}  {r.meaning}".rstrip() for r in e.rows)
    lines.extend(f"  {k}: {n}" for k, n in e.notes)
    return lines


def _timing_lines(t: TimingSection) -> list[str]:
    if not t.measured:
        return ["Timing · not measured" + ("" if t.ran else " (compile-only)")]
    lines = ["Timing (wall clock)"]
    lines.append(f"  compile    {t.compile}")
    lines.append(f"  first run  {t.first_run}")
    step = f"  step       {t.step} median of {t.steps} steps"
    if t.spread:
        step += f" ({t.spread})"
    lines.append(step)
    if t.hosts:
        spread = t.host_spread
        lines.append(
            "  per host (each process timed its own step)" + (f" · {spread}" if spread else "")
        )
        lines.extend(f"    {p}  {d}  step {st}  live peak {pk}" for p, d, st, pk in t.hosts)
    return lines


def _check_lines(c: CheckSection) -> list[str]:
    if not c.checked:
        return ["Check · not run" + ("" if c.ran else " (compile-only)")]
    return [
        f"Check vs {c.reference}: {c.word}",
        f"  max abs diff {c.max_abs} · max rel diff {c.max_rel} · tolerance {c.tolerance}"
        + (f" ({c.rule})" if c.rule else ""),
        *([f"  fails at {c.failing}"] if c.failing else []),
    ]


def _profile_lines(p: ProfileSection) -> list[str]:
    head = f"Profile · {p.count} ops measured"
    if p.illustrative:
        head += " · ILLUSTRATIVE: measured on CPU, durations do not predict accelerator time"
    lines = [head]
    if not p.count:
        return lines
    rows: list[Sequence[str] | str] = [
        [op.name, str(op.count), op.median, op.total, op.percent] for op in p.rows
    ]
    if p.more:
        rows.append(f"    … {p.more} more ops")
    lines.extend(
        aligned_table(
            ["op", "count", "median", "total", "share"], rows, right={1, 2, 3, 4}, indent="  "
        )
    )
    return lines


def report_text(report: Report, view: ReportView | None = None) -> str:
    """A report as text: header, the collective ledger grouped by mesh axes, intermediates in
    program order with reshard points starred, memory per device, cost, timing, the check,
    and the profile when there is one.

    Args:
        report: the report (live or hand-built).
        view: its :func:`~.sections.report_view`, when the caller has it already.

    Returns:
        Deterministic lines joined by newlines, no trailing newline.
    """
    v = view if view is not None else report_view(report)
    sections = [
        _header_lines(v.header),
        *[s for s in (findings_section_lines(v.findings),) if s],
        _ledger_lines(v.ledger),
        *([transfers_lines(v.transfers)] if v.transfers is not None else []),
        _intermediate_lines(v.intermediates),
        _memory_lines(v.memory),
        _cost_lines(v.cost),
        *([_estimate_lines(v.estimate)] if v.estimate is not None else []),
        _timing_lines(v.timing),
        _check_lines(v.check),
    ]
    if v.profile is not None:
        sections.append(_profile_lines(v.profile))
    if report.timeline:
        sections.append(timeline_lines(report))
    return "\n\n".join("\n".join(s) for s in sections)
