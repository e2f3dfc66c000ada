"""A predicted step: every op's own time, plus the communication the schedule leaves exposed.

The bound in :mod:`.step` takes the largest of compute, memory and communication as if all
three overlapped perfectly. The prediction follows the compiled schedule instead
(:attr:`shardviz.model.Cost.ops`): each op takes its compute time or its HBM time,
whichever is larger (a roofline per op, at peak rates), ops run one after another, and an
async transfer (a collective, a prefetch, a host offload) is hidden by the ops the
compiler scheduled while it is in flight, in the room they leave on the resource it uses;
what they do not cover is added. A synchronous collective is exposed whole. Both use the
same per-op flops and bytes (:func:`op_parts`), so the bound is never above the prediction.
Where a chip's measured steps show its matmuls sustaining less than its peak
(:attr:`shardviz.model.Hardware.matmul_efficiency`), the prediction times them at that
fraction of it; the bound keeps the peak. No jax import.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from shardviz.model import Collective, OpWork, Target

__all__ = ["Prediction", "Rates", "predict_step", "predict_with", "rates_of"]


@dataclass(frozen=True)
class Prediction:
    """A step as the schedule runs it, per device: ``ops_seconds`` (the ops, one after
    another) plus ``exposed_seconds`` (transfers their ops do not hide) is ``seconds``.
    ``exposed`` lists the largest exposed transfers, (name, seconds per step).

    ``compute_seconds``, ``memory_seconds`` and ``host_seconds``: every op's matmul flops at
    peak (whatever the efficiency the ops are timed at), HBM bytes at full bandwidth and host
    bytes over the host link, added up per step (transfers included): the same per-op work,
    each resource alone. The lower bound of
    :mod:`.step` takes its compute and memory terms from here, so it is never above
    ``seconds`` (each op takes at least each of its parts, and a transfer hides only in the
    room its ops leave on the resource it uses).
    """

    seconds: float
    ops_seconds: float
    exposed_seconds: float
    exposed: tuple[tuple[str, float], ...] = ()
    compute_seconds: float = 0.0
    memory_seconds: float = 0.0
    host_seconds: float = 0.0


#: The resources an op or a transfer uses: the matmul units, HBM, the host link, the
#: chip-to-chip links (collectives; ops use none).
RESOURCES = ("compute", "memory", "host", "link")


#: A peak FLOP/s for every matmul, or peaks by operand precision (``""``: the bf16 peak;
#: ``"fp8"``, ``"int8"``: :meth:`shardviz.model.Hardware.peaks`).
Peak = float | Mapping[str, float]


@dataclass(frozen=True)
class Rates:
    """What one device's ops are timed at: ``peaks`` (FLOP/s by precision), HBM and host
    bandwidth (bytes/s; ``None``: no host link figure), and the fraction of the peaks its
    matmuls sustain in a step (``efficiency``; 1.0 where none is known)."""

    peaks: Mapping[str, float]
    hbm_bandwidth: float
    host_bandwidth: float | None = None
    efficiency: float = 1.0

    def op_seconds(self, op: OpWork) -> float:
        """One run of ``op`` at these rates (:func:`op_seconds`)."""
        return op_seconds(op, self.peaks, self.hbm_bandwidth, self.host_bandwidth, self.efficiency)


def rates_of(target: Target) -> Rates:
    """One device of ``target``: its chip's figures split between the devices sharing it."""
    hw, per_chip = target.hardware, target.devices_per_chip
    return Rates(
        hw.peaks(per_chip),
        hw.hbm_bandwidth / per_chip,
        (hw.host_bandwidth or 0.0) / per_chip or None,
        hw.matmul_efficiency or 1.0,
    )


def op_parts(
    op: OpWork,
    peak: Peak,
    hbm_bandwidth: float,
    host_bandwidth: float | None = None,
    efficiency: float = 1.0,
) -> tuple[float, float, float]:
    """One run of ``op`` on each resource: (its matmuls at ``efficiency`` times the peak, fp8
    and int8 ones at their own where ``peak`` gives them, its HBM bytes at full bandwidth,
    its host bytes over the host link at ``host_bandwidth``). Without that figure the host
    bytes are taken at HBM bandwidth, with the HBM bytes."""
    compute = op.compute_seconds(peak) if isinstance(peak, Mapping) else op.flops / peak
    compute /= efficiency
    if host_bandwidth:
        return compute, op.hbm_bytes / hbm_bandwidth, op.host_bytes / host_bandwidth
    return compute, (op.hbm_bytes + op.host_bytes) / hbm_bandwidth, 0.0


def op_seconds(
    op: OpWork,
    peak: Peak,
    hbm_bandwidth: float,
    host_bandwidth: float | None = None,
    efficiency: float = 1.0,
) -> float:
    """One run of ``op``: its matmuls at ``efficiency`` times the peak, its HBM bytes at full
    bandwidth or its host bytes over the host link, whichever takes longest
    (:func:`op_parts`)."""
    return max(op_parts(op, peak, hbm_bandwidth, host_bandwidth, efficiency))


def predict_with(
    ops: tuple[OpWork, ...],
    collectives: tuple[Collective, ...],
    trip_counts: Mapping[str, int | None] | None,
    rates: Rates,
    top: int = 5,
) -> Prediction | None:
    """:func:`predict_step` at one device's ``rates``."""
    return predict_step(
        ops, collectives, trip_counts, rates.peaks, rates.hbm_bandwidth, top,
        rates.host_bandwidth, rates.efficiency,
    )  # fmt: skip


def predict_step(
    ops: tuple[OpWork, ...],
    collectives: tuple[Collective, ...],
    trip_counts: Mapping[str, int | None] | None,
    peak: Peak,
    hbm_bandwidth: float,
    top: int = 5,
    host_bandwidth: float | None = None,
    efficiency: float = 1.0,
) -> Prediction | None:
    """The step predicted from the schedule's ops and the ledger's estimated collectives
    (``estimated_seconds`` filled in; ``trip_counts`` their runs per step, a loop of unknown
    count counted once). ``None`` without ops (a report built without the compiled
    schedule).

    An op in flight beside transfers lends them the room it leaves on each resource (its
    time less its own use of it), first come first served: a prefetch hides under a
    compute-bound op, not under one that keeps HBM busy; collectives share the links' room.
    What a transfer still needs after that is exposed, the longest of its resources.
    ``efficiency``: the fraction of the peak the matmuls sustain (:class:`Rates`)."""
    if not ops:
        return None
    busy = 0.0
    totals = dict.fromkeys(RESOURCES, 0.0)
    need: dict[str, dict[str, float]] = {}  # transfer -> resource -> seconds per step
    room: list[tuple[tuple[str, ...], dict[str, float]]] = []  # per op: in flight, room left
    for op in ops:
        timed = op_parts(op, peak, hbm_bandwidth, host_bandwidth, efficiency)
        parts = dict(zip(RESOURCES, (*timed, 0.0), strict=True))
        for r in RESOURCES:
            totals[r] += parts[r] * op.runs * (efficiency if r == "compute" else 1.0)
        if op.transfer:
            mine = need.setdefault(op.name, dict.fromkeys(RESOURCES, 0.0))
            for r in RESOURCES:
                mine[r] += parts[r] * op.runs
            continue
        seconds = max(parts.values()) * op.runs
        busy += seconds
        if op.in_flight:
            room.append((op.in_flight, {r: seconds - parts[r] * op.runs for r in RESOURCES}))
    for c in collectives:
        runs = (trip_counts or {}).get(c.hlo_name, 1) or 1
        mine = need.setdefault(c.hlo_name, dict.fromkeys(RESOURCES, 0.0))
        mine["link"] += (c.estimated_seconds or 0.0) * runs
    left = {name: dict(parts) for name, parts in need.items()}
    for flying, spare in room:
        for name in flying:
            wants = left.get(name)
            if wants is None:
                continue
            for r in RESOURCES:
                used = min(wants[r], spare[r])
                wants[r] -= used
                spare[r] -= used
    exposed = {name: max(parts.values()) for name, parts in left.items() if max(parts.values()) > 0}
    total = float(sum(exposed.values()))
    largest = sorted(exposed.items(), key=lambda kv: -kv[1])[:top]
    return Prediction(
        busy + total, busy, total, tuple(largest),
        totals["compute"], totals["memory"], totals["host"],
    )  # fmt: skip
