"""How a plan search ranks plans: one explicit rule, in words and as a sort key.

With a target, the estimated step (:attr:`~shardviz.model.Estimate.step_seconds`: compute,
HBM traffic and collectives on the target's published rates) decides; bytes moved, then peak
memory, break ties.

Without a target there is no exchange rate between flops and bytes, and bytes moved alone
would crown the plan that splits nothing (no collective, but every device does all the
work). So the rule asks two questions in order. First: does the plan split the work? Its
per-device flops (the compiler's cost analysis) must be within
:data:`~shardviz.model.search.WORK_TOLERANCE` of the least any fitting plan reached. Among
the plans that do, the fewest bytes moved per step wins; plans that leave work duplicated
come after, least work first.

Figures within :data:`~shardviz.model.search.NEAR` of the best (estimated step, or bytes
moved) count as a tie: the compiler's bookkeeping moves a few hundred bytes between plans
that are the same in substance. Ties go to the lower peak memory, then to the plan tried
first (a seed, a named strategy, before the moves that merely reach it again).

Either way plans that fit only by keeping the optimizer state (or, by the remat policy, the
activations) in host memory come after every plan that fits in HBM alone (offloading costs
host transfers the ranking does not see), plans over the memory limit after every plan that
fits (lowest peak first), and plans that failed to compile last.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from shardviz.model.search import NEAR, WORK_TOLERANCE, Plan
from shardviz.strategies.models.remat import offloads

_INF = float("inf")


def ranking_words(target: str, offload: bool = False) -> str:
    """The rule, in one sentence, for the views (``offload``: some plans keep the optimizer
    state in host memory)."""
    if offload:
        return ranking_words(target).replace(
            "; plans over the memory limit last",
            "; plans that fit only with the optimizer state offloaded to host memory after "
            "those that fit in HBM; plans over the memory limit last",
        )
    if target:
        return (
            f"ranked by the estimated step on {target} (a lower bound: compute, HBM traffic "
            f"and collectives on its published rates); within {NEAR:.0%} of the best, the "
            "fewest bytes moved, then the lower peak; plans over the memory limit last"
        )
    return (
        "ranked, with no target to price flops against bytes, by two questions in order: "
        f"does the plan split the work (per-device flops within {WORK_TOLERANCE:.0%} of the "
        "least any plan reached)? then the fewest bytes moved per step (within "
        f"{NEAR:.0%} of the fewest, the lower peak); plans that leave work duplicated "
        "follow, least work first; plans over the memory limit last"
    )


def least_work(plans: Sequence[Plan]) -> float | None:
    """The least per-device flops among plans that compiled and fit (``None``: unknown)."""
    flops = [
        p.flops_per_device
        for p in plans
        if p.compiled and p.fits is not False and p.flops_per_device
    ]
    return min(flops) if flops else None


def splits_work(plan: Plan, least: float | None) -> bool:
    """Whether ``plan``'s per-device flops are within the tolerance of ``least`` (true when
    either is unknown: then bytes moved alone decide)."""
    if least is None or not plan.flops_per_device:
        return True
    return plan.flops_per_device <= least * (1 + WORK_TOLERANCE)


@dataclass(frozen=True)
class Bests:
    """The best figures among the plans that compiled and fit, that ties are judged by."""

    work: float | None
    moved: float | None
    seconds: float | None


def bests(plans: Sequence[Plan]) -> Bests:
    """Among plans that compiled and fit: the least work, the least estimated step, and the
    least bytes moved of the plans that split the work (``None`` where unknown)."""
    work = least_work(plans)
    fitting = [p for p in plans if p.compiled and p.fits is not False]
    moved = [
        float(p.moved_bytes) for p in fitting if p.moved_bytes is not None and splits_work(p, work)
    ]
    seconds = [p.estimated_seconds for p in fitting if p.estimated_seconds is not None]
    return Bests(work, min(moved) if moved else None, min(seconds) if seconds else None)


def _near(x: float, best: float | None) -> bool:
    return best is not None and x <= best * (1 + NEAR)


def rank_key(plan: Plan, best: Bests, with_target: bool) -> tuple:
    """The sort key of ``plan`` (smaller is better) given the best figures of the plans."""
    if not plan.compiled:
        return (3, 0, 0, 0.0, 0.0)
    peak = float(plan.peak_bytes if plan.peak_bytes is not None else _INF)
    moved = float(plan.moved_bytes if plan.moved_bytes is not None else _INF)
    if plan.fits is False:
        return (2, 0, 0, peak, moved)
    # Offloaded (optimizer state, or activations by the remat policy): after every plan that
    # fits in HBM alone.
    tier = 1 if plan.on_host or offloads(plan.remat) else 0
    if with_target and plan.estimated_seconds is not None:
        s = plan.estimated_seconds
        return (tier, 0, 0, moved, peak) if _near(s, best.seconds) else (tier, 0, 1, s, moved)
    if splits_work(plan, best.work):
        return (tier, 1, 0, peak, 0.0) if _near(moved, best.moved) else (tier, 1, 1, moved, peak)
    return (tier, 2, 0, float(plan.flops_per_device or _INF), moved)


def ranked(plans: Sequence[Plan], with_target: bool) -> list[Plan]:
    """``plans`` best first (stable: among equals, the one tried first)."""
    b = bests(plans)
    return sorted(plans, key=lambda p: rank_key(p, b, with_target))


def better(a: Plan, b: Plan, plans: Sequence[Plan], with_target: bool) -> bool:
    """Whether ``a`` ranks strictly above ``b`` among ``plans``."""
    figures = bests(plans)
    return rank_key(a, figures, with_target) < rank_key(b, figures, with_target)
