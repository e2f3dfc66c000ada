"""Run every detector on a report: the findings, most severe first, with fixes to try."""

from __future__ import annotations

from collections.abc import Callable

from shardviz.analysis.detect import device_order, experts, offload, placement, wasted_moves
from shardviz.analysis.detect.candidate import Candidate
from shardviz.analysis.detect.inputs import CompilerEvidence
from shardviz.model import Report

Detector = Callable[[Report, CompilerEvidence], list[Candidate]]

#: Every detector, by the kind of finding it makes.
DETECTORS: dict[str, Detector] = {
    "involuntary-remat": wasted_moves.involuntary_remat,
    "replicated": lambda r, f: placement.replicated(r),
    "regather": lambda r, f: wasted_moves.regather(r),
    "reshard-chain": wasted_moves.reshard_chain,
    "uneven": lambda r, f: placement.uneven(r),
    "loop-collective": lambda r, f: wasted_moves.loop_collective(r),
    "idle-axis": lambda r, f: placement.idle_axis(r),
    "imbalance": lambda r, f: placement.imbalance(r),
    "over-hbm": lambda r, f: placement.over_hbm(r),
    "full-reduce": lambda r, f: wasted_moves.full_reduce(r),
    "offload-missed": lambda r, f: offload.offload_missed(r),
    "placement": lambda r, f: device_order.placement(r),
    "expert-gather": lambda r, f: experts.expert_gather(r),
}

_SEVERITY = {"error": 0, "warning": 1, "info": 2}


def candidates(report: Report, evidence: CompilerEvidence | None = None) -> list[Candidate]:
    """Every problem the detectors see in ``report``, most severe first (then the largest
    cost), each with the fixes worth trying."""
    evidence = evidence or CompilerEvidence()
    found: list[Candidate] = []
    for detect in DETECTORS.values():
        found += detect(report, evidence)
    return sorted(
        found, key=lambda c: (_SEVERITY[c.finding.severity], -(c.finding.cost.bytes or 0))
    )
