"""``sv.op_profile(report, trace=None)``: the step's time, flops and bytes by layer and by module,
predicted and (from a jax profile) measured."""

from __future__ import annotations

import os

from shardviz.analysis.estimate.step import TargetLike, resolve_target
from shardviz.analysis.op_profile import measured_of_timeline, op_profile_of
from shardviz.capture.trace_file import measured_ops
from shardviz.errors import ArgumentError, problem
from shardviz.model.arguments import shown
from shardviz.model.op_profile import OpProfile
from shardviz.model.program import Report

__all__ = ["op_profile"]


def op_profile(
    report: Report,
    trace: str | os.PathLike[str] | None = None,
    target: TargetLike | None = None,
) -> OpProfile:
    """The step as an XProf-like op profile: every op's predicted time, flops and HBM bytes per
    step on one device, added up by module (attention, mlp, experts, embedding, norm, loss,
    optimizer, other) and by layer (a scanned stack counted once per trip), so you see where a
    step goes before running it; with ``trace``, the measured time of each op beside it.

    Args:
        report: from ``sv.explain`` (``run=False`` is enough).
        trace: the folder given to ``jax.profiler.trace`` around a few runs of the same step, or
            one ``.trace.json.gz`` or XProf ``.xplane.pb`` in it (a profile captured with
            XProf from a pod); its ops are matched to the compiled ones by name.
            Without it, a report made with ``explain(profile=True)`` is measured from its
            own profiled step.
        target: the hardware to predict times on (``"v5e"``, ``"h100:2x8"``); default: the
            report's own (none on CPU devices: then flops and bytes only).

    Returns:
        An :class:`~shardviz.model.op_profile.OpProfile`: ``print`` it, show it in a notebook,
        or read its ``modules``, ``layers`` and ``ops``. Its groups add up to its totals.

    Raises:
        ShardvizError: ``report`` is not a report, or ``trace`` is not a readable profile.
    """
    if not isinstance(report, Report):
        raise ArgumentError(problem(
            "op_profile", f"report={shown(report)} is a {type(report).__name__}, not a report",
            "pass what sv.explain returns, e.g. sv.op_profile(sv.explain(step, *args))",
        ))  # fmt: skip
    measured = None
    if trace is not None:
        names = frozenset(op.name for op in report.cost.ops) if report.cost is not None else None
        measured = measured_ops(trace, names)
    elif report.timeline:
        measured = measured_of_timeline(report.timeline)
    return op_profile_of(report, resolve_target(report, target), measured)
