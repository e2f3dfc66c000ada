"""A report's step estimated on a target: compute, HBM traffic and collectives, a lower bound.

:func:`estimate_report` turns a :class:`~shardviz.model.program.Report` and a target into an
:class:`~shardviz.model.estimate.Estimate` and the ledger with each collective's estimated
seconds; :func:`with_estimate` returns the report with both filled in (what ``explain`` and
``compare`` call). No jax import.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from shardviz.analysis.estimate.caveats import loop_notes, preview_notes
from shardviz.analysis.estimate.collectives import collective_time
from shardviz.analysis.estimate.host_link import host_link
from shardviz.analysis.estimate.placement import Placement, place
from shardviz.analysis.estimate.predict import Prediction, predict_with, rates_of
from shardviz.model.estimate import BOUNDS, Estimate
from shardviz.model.hardware import Hardware, Target
from shardviz.model.program import Collective, Cost, OpWork, Report
from shardviz.model.targets import target_for, target_of_mesh
from shardviz.model.units import format_bytes, format_flops, format_percent

TargetLike = Target | Hardware | str


def resolve_target(report: Report, target: TargetLike | None = None) -> Target | None:
    """The target to estimate for: the one given (sized to the report's mesh), else the one the
    mesh's own devices describe (real or deviceless TPU/GPU), else ``None`` (CPU, no target)."""
    n = report.mesh.size if report.mesh is not None else 1  # no mesh: one device
    if target is not None:
        return target_for(target, n)
    if report.target is not None:
        return report.target
    return target_of_mesh(report.mesh)


def estimate_collectives(
    collectives: tuple[Collective, ...], placement: Placement, target: Target
) -> tuple[Collective, ...]:
    """The ledger with ``estimated_seconds`` and ``estimate_formula`` filled in.

    The parts of a combined all-reduce (``name#k``) run as one: the whole is estimated once
    (one latency floor) and each part gets its share by bytes.
    """
    combined: dict[str, list[Collective]] = {}
    memo: dict = {}  # what the ledger's groups and pairs cost on this placement, kept
    for c in collectives:
        if c.combined is not None:
            combined.setdefault(c.hlo_name, []).append(c)
    whole: dict[str, tuple[float, str, int]] = {}
    for base, parts in combined.items():
        total_in = sum(p.in_bytes for p in parts)
        total_out = sum(p.out_bytes for p in parts)
        merged = dataclasses.replace(parts[0], in_bytes=total_in, out_bytes=total_out)
        t = collective_time(merged, placement, target, memo)
        whole[base] = (t.seconds, f"{len(parts)} combined: {t.formula}", max(total_in, 1))
    out = []
    for c in collectives:
        if c.combined is not None:
            seconds, formula, total = whole[c.hlo_name]
            share = c.in_bytes / total
            out.append(dataclasses.replace(c, estimated_seconds=seconds * share,
                                           estimate_formula=f"{share:.0%} of {formula}"))  # fmt: skip
        else:
            t = collective_time(c, placement, target, memo)
            out.append(
                dataclasses.replace(c, estimated_seconds=t.seconds, estimate_formula=t.formula)
            )
    return tuple(out)


def _collective_total(
    collectives: tuple[Collective, ...], trip_counts: Mapping[str, int | None] | None
) -> tuple[float, list[str]]:
    notes = []
    total = 0.0
    unknown = []
    for c in collectives:
        runs = 1
        if trip_counts is not None:
            got = trip_counts.get(c.hlo_name, 1)
            if got is None:
                unknown.append(c.hlo_name)
            else:
                runs = got
        total += (c.estimated_seconds or 0.0) * runs
    if trip_counts is None and collectives:
        notes.append("each collective counted once (loop trip counts not given)")
    if unknown:
        names = ", ".join(sorted(set(unknown))[:3]) + ("..." if len(set(unknown)) > 3 else "")
        notes.append(f"loop count unknown for {names}: counted once (a lower bound)")
    return total, notes


def matmul_peak(
    ops: tuple[OpWork, ...],
    hw: Hardware,
    per_chip: int,
    peaks: Mapping[str, float],
    notes: list[str],
) -> float:
    """The peak FLOP/s per device the step's matmuls run at: the bf16 peak, or, where some
    take fp8 or int8 operands, their flops over their time at each precision's own peak
    (``peaks``: :meth:`~shardviz.model.Hardware.peaks` for one device). Says which, and what
    MFU against the bf16 peak would be, in ``notes``."""
    base = peaks[""]
    total = sum(op.flops * op.runs for op in ops)
    narrow: dict[str, float] = {}
    for op in ops:
        for precision, f in op.narrow_flops:
            narrow[precision] = narrow.get(precision, 0.0) + f * op.runs
    if not narrow or total <= 0:
        return base
    seconds = (total - sum(narrow.values())) / base
    for precision, f in sorted(narrow.items()):
        seconds += f / peaks[precision]
        published = hw.published_peak(precision)
        at = (
            f"at {hw.name}'s {precision} peak, {format_flops(published)}/s a chip"
            if published
            else f"at the bf16 peak ({hw.name} publishes no {precision} peak)"
        )
        notes.append(f"{precision} matmuls: {format_percent(f / total)} of the matmul flops, {at}")
    peak = total / seconds
    if abs(peak - base) > 1e-9 * base:
        notes.append(
            f"MFU and HFU against the matmuls' own peak, {format_flops(peak * per_chip)}/s a "
            f"chip; against the bf16 peak they would be {peak / base:.2f}x as high"
        )
    return peak


def _compute_and_memory(
    report: Report, predicted: Prediction | None, peak: float, hbm_bw: float, notes: list[str]
) -> tuple[float | None, float | None, float | None]:
    """(hardware flops per device, compute seconds, memory seconds) for the bound.

    With the compiled schedule, compute and memory are every op's matmul flops and HBM
    bytes added up: the per-op work the prediction runs one op after another, so the bound
    is never above it. The compiler's own bytes accessed (it also counts what a fusion keeps
    in registers, and on TPU what sits in VMEM) is said apart in a note. Without the
    schedule, the compiler's flops and bytes accessed per step."""
    n = report.mesh.size if report.mesh is not None else 1
    flops = bytes_accessed = None
    cost = report.cost
    if cost is not None:
        flops, bytes_accessed = cost.flops_per_device, cost.bytes_accessed_per_device
        if flops is None and cost.flops_global is not None:
            flops = cost.flops_global / n
            notes.append(f"per-device flops unknown: global flops / {n} devices")
        if bytes_accessed is None and cost.bytes_accessed_global is not None and predicted is None:
            bytes_accessed = cost.bytes_accessed_global / n
            notes.append(f"per-device bytes accessed unknown: global / {n} devices")
    if predicted is not None:
        per_op = predicted.memory_seconds * hbm_bw
        apart = (
            f" (the compiler's bytes accessed: {format_bytes(bytes_accessed)})"
            if bytes_accessed is not None
            else ""
        )
        notes.append(
            f"HBM bytes per step: each op's reads and writes, {format_bytes(per_op)}{apart}"
        )
        return flops, predicted.compute_seconds, predicted.memory_seconds
    if flops is None:
        notes.append("no flop count from the compiler: compute time unknown")
    compute = None if flops is None else flops / peak
    memory = None if bytes_accessed is None else bytes_accessed / hbm_bw
    return flops, compute, memory


def estimate_report(
    report: Report,
    target: TargetLike | None = None,
    *,
    trip_counts: Mapping[str, int | None] | None = None,
) -> tuple[Estimate | None, tuple[Collective, ...]]:
    """Estimate ``report``'s step on ``target`` (a lower bound: perfect overlap, peak rates).

    Args:
        report: a report from ``explain`` (or built by hand).
        target: a preset (``"v5e"``), a topology (``"v5e:4x4"``, ``"h100:2x8"``), a
            :class:`Hardware` or a :class:`Target`; ``None`` uses the mesh's own devices
            (real or deviceless TPU/GPU) and gives no estimate on plain CPU devices.
        trip_counts: runs per execution by collective name, as
            :func:`shardviz.capture.hlo.collectives.collective_trip_counts` gives them; without
            it each collective counts once.

    Returns:
        The estimate (``None`` without a target) and the ledger with each collective's
        ``estimated_seconds`` (unchanged without a target).
    """
    estimate, collectives, _ = _estimate(report, resolve_target(report, target), trip_counts)
    return estimate, collectives


def _estimate(
    report: Report, resolved: Target | None, trip_counts: Mapping[str, int | None] | None
) -> tuple[Estimate | None, tuple[Collective, ...], Target | None]:
    if resolved is None:
        return None, report.collectives, None
    notes: list[str] = []
    hw = resolved.hardware
    per_chip = resolved.devices_per_chip
    peak, hbm_bw, hbm = (
        hw.peak_flops_bf16 / per_chip,
        hw.hbm_bandwidth / per_chip,
        hw.hbm_bytes // per_chip,
    )
    if per_chip > 1:
        notes.append(
            f"{per_chip} devices share each chip: peak, HBM and bandwidth split between them"
        )
    if report.platform == "cpu":
        notes.append(f"compiled for CPU; estimated as if the same mesh ran on {resolved.label}")

    collectives, resolved = _placed_collectives(report, resolved, notes)
    collective_seconds, more = _collective_total(collectives, trip_counts)
    notes += more

    rates = rates_of(resolved)
    host_bw, peaks = rates.host_bandwidth, dict(rates.peaks)
    cost = report.cost
    ops = cost.ops if cost is not None else ()
    predicted = predict_with(ops, collectives, trip_counts, rates)
    if predicted is not None and hw.matmul_efficiency:
        notes.append(
            f"predicted with the matmuls at {format_percent(hw.matmul_efficiency)} of the peak, "
            f"what {hw.name}'s measured steps sustain ({hw.source('matmul_efficiency')}); the "
            "bound and MFU take the peak"
        )
    flops, compute, memory = _compute_and_memory(report, predicted, peak, hbm_bw, notes)
    # MFU and HFU against the peak the step's matmuls run at: fp8 ones at the fp8 peak.
    peak = matmul_peak(ops, hw, per_chip, peaks, notes)
    # The link hides under the longest of the step's other parts (they overlap, as the bound
    # assumes), named as such; unknown when neither compute nor HBM time is.
    others = {"compute": compute, "memory": memory, "communication": collective_seconds}
    under = max((k for k, v in others.items() if v is not None), key=lambda k: others[k] or 0.0)
    link = host_link(
        report.host_transfers,
        host_bw or 0.0,
        None if compute is None and memory is None else others[under],
        under,
    )
    step, bound = _bound(
        {
            "compute": compute, "memory": memory, "communication": collective_seconds,
            "host link": link.seconds if link else None,
        }
    )  # fmt: skip
    # HFU counts every op's flops (the compiler's, recomputation included), not only the
    # matmul flops the compute term times on the matrix units.
    busy = flops / peak if flops is not None else compute
    hfu = busy / step if busy is not None and step > 0 else None
    model_flops = _model_flops(cost, flops, notes)
    mfu = model_flops / (peak * step) if model_flops is not None and step > 0 else None
    unknown = tuple(lp.where for lp in cost.unknown_loops) if cost is not None else ()
    # A kernel whose flops are unknown is named, never left silently at zero: the step and
    # MFU are then no bound.
    uncounted = tuple(k.describe() for k in cost.uncounted_kernels) if cost is not None else ()
    kernels = cost.kernels if cost is not None else ()
    overcounted = tuple(k.describe() for k in kernels if k.upper_bound)

    if report.host_transfers and hw.host_bandwidth is None:
        notes.append(f"{hw.name} has no host link figure: host transfers not timed")
    mem = report.memory
    # The report's peak is already each backend's right figure (capture.memory.peak_rule):
    # the TPU compiler's own peak, larger, also counts on-chip VMEM, which is not HBM.
    peak_bytes = mem.peak_bytes
    notes += preview_notes(report, resolved) + loop_notes(cost)
    estimate = Estimate(
        target=resolved.label,
        compute_seconds=compute,
        memory_seconds=memory,
        collective_seconds=collective_seconds,
        step_seconds=step,
        bound=bound,
        mfu=mfu,
        hbm_bytes=hbm,
        peak_bytes=peak_bytes,
        hbm_headroom_bytes=hbm - peak_bytes,
        notes=tuple(notes),
        hfu=hfu,
        model_flops=model_flops,
        hardware_flops=flops,
        peak_flops_per_second=peak,
        lower_bound=unknown,
        uncounted=uncounted,
        overcounted=overcounted,
        predicted_seconds=predicted.seconds if predicted else None,
        predicted_exposed_seconds=predicted.exposed_seconds if predicted else None,
        predicted_exposed=predicted.exposed if predicted else (),
        host_seconds=link.seconds if link else None,
        host_exposed_seconds=link.exposed_seconds if link else None,
        host_text=link.text if link else "",
        host_under=link.under_words if link else "",
    )
    return estimate, collectives, resolved


def _placed_collectives(
    report: Report, resolved: Target, notes: list[str]
) -> tuple[tuple[Collective, ...], Target]:
    """The report's collectives timed on the target's links, the mesh placed on its chips
    (the target then says how, where the placement was assumed)."""
    collectives = report.collectives
    if report.mesh is None:
        if collectives:
            notes.append("no mesh in the report: collectives not estimated")
        return collectives, resolved
    placement = place(report.mesh, resolved)
    if placement.assumed:
        resolved = resolved.with_placement(placement.assumed)
        notes.append(placement.assumed)
    return estimate_collectives(collectives, placement, resolved), resolved


def _bound(parts: Mapping[str, float | None]) -> tuple[float, str]:
    """The step's bound (the longest of its known parts, which overlap) and what bounds it,
    the first of :data:`BOUNDS` on a tie."""
    known = {k: v for k, v in parts.items() if v is not None}
    step = max(known.values())
    return step, next(k for k in BOUNDS if k in known and known[k] == step)


def _model_flops(cost: Cost | None, flops: float | None, notes: list[str]) -> float | None:
    """The model's flops per device (its matmuls, recomputation once), or the compiler's
    flops where no matmul was counted, said so."""
    model_flops = cost.model_flops_per_device if cost is not None else None
    if model_flops is None and flops is not None:
        notes.append("no matmul count: MFU from the compiler's flops (recomputation included)")
        return flops
    return model_flops


def with_estimate(
    report: Report,
    target: TargetLike | None = None,
    *,
    trip_counts: Mapping[str, int | None] | None = None,
) -> Report:
    """``report`` with ``target``, ``estimate`` and each collective's estimate filled in
    (unchanged when there is no target: CPU devices and none given)."""
    estimate, collectives, resolved = _estimate(report, resolve_target(report, target), trip_counts)
    if resolved is None:
        return report
    return dataclasses.replace(report, target=resolved, estimate=estimate, collectives=collectives)
