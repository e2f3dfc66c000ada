"""A predicted step: every op's own time, plus the communication the schedule leaves exposed.

The bound in :mod:`.step` takes the largest of compute, memory and communication as if all
three overlapped perfectly. The prediction follows the compiled schedule instead
(:attr:`shardviz.model.Cost.ops`): each op takes its compute time or its HBM time,
whichever is larger (a roofline per op, at peak rates), ops run one after another, and an
async transfer (a collective, a prefetch, a host offload) is hidden by the ops the
compiler scheduled while it is in flight; what they do not cover is added. A synchronous
collective is exposed whole. No jax import.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from shardviz.model import Collective, OpWork

__all__ = ["Prediction", "predict_step"]


@dataclass(frozen=True)
class Prediction:
    """A step as the schedule runs it, per device: ``ops_seconds`` (the ops, one after
    another) plus ``exposed_seconds`` (transfers their ops do not hide) is ``seconds``.
    ``exposed`` lists the largest exposed transfers, (name, seconds per step)."""

    seconds: float
    ops_seconds: float
    exposed_seconds: float
    exposed: tuple[tuple[str, float], ...] = ()


def op_seconds(
    op: OpWork, peak: float, hbm_bandwidth: float, host_bandwidth: float | None = None
) -> float:
    """One run of ``op``: its matmuls at peak or its HBM bytes at full bandwidth, whichever
    takes longer. Its host bytes cross the chip's host link at ``host_bandwidth`` (PCIe);
    without that figure they are taken at HBM bandwidth, with the HBM bytes."""
    if host_bandwidth:
        return max(op.flops / peak, op.hbm_bytes / hbm_bandwidth, op.host_bytes / host_bandwidth)
    return max(op.flops / peak, (op.hbm_bytes + op.host_bytes) / hbm_bandwidth)


def predict_step(
    ops: tuple[OpWork, ...],
    collectives: tuple[Collective, ...],
    trip_counts: Mapping[str, int | None] | None,
    peak: float,
    hbm_bandwidth: float,
    top: int = 5,
    host_bandwidth: float | None = None,
) -> Prediction | None:
    """The step predicted from the schedule's ops and the ledger's estimated collectives
    (``estimated_seconds`` filled in; ``trip_counts`` their runs per step, a loop of unknown
    count counted once). ``None`` without ops (a report built without the compiled
    schedule)."""
    if not ops:
        return None
    busy = 0.0
    cover: dict[str, float] = {}  # transfer -> seconds of ops in flight beside it, per step
    transfers: dict[str, float] = {}  # transfer -> its own seconds per step
    for op in ops:
        seconds = op_seconds(op, peak, hbm_bandwidth, host_bandwidth) * op.runs
        if op.transfer:
            transfers[op.name] = transfers.get(op.name, 0.0) + seconds
            continue
        busy += seconds
        for name in op.in_flight:
            cover[name] = cover.get(name, 0.0) + seconds
    for c in collectives:
        runs = (trip_counts or {}).get(c.hlo_name, 1) or 1
        transfers[c.hlo_name] = transfers.get(c.hlo_name, 0.0) + (c.estimated_seconds or 0.0) * runs
    exposed = {
        name: seconds - cover.get(name, 0.0)
        for name, seconds in transfers.items()
        if seconds > cover.get(name, 0.0)
    }
    total = float(sum(exposed.values()))
    largest = sorted(exposed.items(), key=lambda kv: -kv[1])[:top]
    return Prediction(busy + total, busy, total, tuple(largest))
