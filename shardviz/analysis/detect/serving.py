"""Findings about serving layouts: a strategy whose batch does not fit (or that the compiler
refused), a KV cache copied across a tensor-parallel group, weights copied under data
parallelism where tensor parallelism would fit them, and a decode step set by a collective. Model in, findings out (no jax): :class:`~shardviz.model.Finding` objects,
as a program's findings are, so the findings views draw both. The strategy is in
``where.strategy``; a serving finding has no :class:`~shardviz.model.findings.Fix` shardviz
applies and checks, so the change to make (another strategy, a larger batch) is in
``unfixed``."""

from __future__ import annotations

from collections.abc import Sequence

from shardviz.model.findings import Finding, FindingCost, Where
from shardviz.model.serving import ServingResult
from shardviz.model.units import format_bytes, format_seconds

__all__ = [
    "BY_HAND",
    "by_hand",
    "collective_bound",
    "kv_replicated",
    "over_hbm",
    "serving_findings",
    "weights_replicated",
]

#: How a serving finding's change to make begins: shardviz names it, the caller makes it.
BY_HAND = "make it by hand (shardviz does not apply serving changes): "


def by_hand(change: str) -> str:
    """A serving finding's ``unfixed``: the change to make, which shardviz does not apply
    and check itself (views show it as ``fix: none offered: make it by hand ...``)."""
    return BY_HAND + change


#: Weights copied under data parallelism are worth a finding when they take this share of HBM.
WEIGHTS_SHARE = 0.5


def _fitting_batch(r: ServingResult) -> int:
    """The most sequences of ``r.context`` whose cache fits beside the weights (the working
    memory left out: it was compiled for ``r.batch``), a multiple of the data axis; 0 when
    the weights alone do not fit."""
    per_sequence = r.kv_bytes / max(1, r.batch)
    data = r.axis_sizes.get("data", 1)
    room = r.hbm_bytes - r.weight_bytes
    if room <= 0 or not per_sequence:
        return 0
    return int(room // per_sequence) // data * data


def over_hbm(r: ServingResult) -> Finding | None:
    """[over-hbm] The strategy does not fit one chip's HBM at this batch and context: its
    compiled bytes are over it, or the compiler refused it (or it was not handed over, its
    arrays alone past the HBM). The change to make: fewer or shorter sequences when the
    weights fit, else smaller weights or more chips; never a larger batch."""
    if r.fits is not False:
        return None
    hbm = format_bytes(r.hbm_bytes)
    held = r.weight_bytes + r.kv_bytes
    if r.compiled:
        title = (
            f"batch {r.batch:,} x context {r.context:,} does not fit: "
            f"{format_bytes(r.total_bytes)} per chip against {hbm} of HBM"
        )
        why = (
            f"each chip holds {format_bytes(r.weight_bytes)} of weights, "
            f"{format_bytes(r.kv_bytes)} of KV cache and {format_bytes(r.working_bytes or 0)} "
            f"the compiled step works in, {format_bytes(r.total_bytes - r.hbm_bytes)} more "
            f"than the {hbm} of HBM"
        )
        over = r.total_bytes - r.hbm_bytes
    else:
        # what is over: the compiler's figure for the step, else the arrays alone (at least)
        need = max(held, r.refused_bytes or 0)
        over = need - r.hbm_bytes
        title = f"the {r.mode} step was not compiled: it does not fit {hbm} of HBM"
        why = r.why_not_compiled or "the compiler refused it"
        if held <= r.hbm_bytes:
            why += (
                f"; the weights ({format_bytes(r.weight_bytes)}) and KV cache "
                f"({format_bytes(r.kv_bytes)}) take {format_bytes(held)} per chip, the rest "
                "is the step's working memory"
            )
        if over <= 0:  # no figure to say by how much: the cost is the arrays, not 0
            why += "; the compiler did not say how much it needs, so the cost shown is those"
            over = held
    room = _fitting_batch(r)
    if r.weight_bytes >= r.hbm_bytes:
        wider = (
            "split them over every chip (strategy 'tp'), "
            if r.weight_copies > 1 and r.strategy != "tp"
            else ""
        )
        change = (
            f"the weights alone ({format_bytes(r.weight_bytes)} per chip) are past the HBM: "
            f"quantise them (dtype='int8' or 'int4'), {wider}or serve on more chips"
        )
    elif room >= r.axis_sizes.get("data", 1) and room < r.batch:
        change = (
            f"serve fewer sequences at once (beside the weights the HBM holds the cache of "
            f"about {room:,} sequences of {r.context:,} tokens, less the step's working "
            "memory), shorter ones, or quantise the cache (dtype=(weights, 'int8'))"
        )
    else:
        change = (
            "serve fewer or shorter sequences, quantise the cache (dtype=(weights, 'int8')), "
            "or serve on more chips"
        )
    return Finding(
        kind="over-hbm",
        severity="error",
        title=title,
        why=why,
        cost=FindingCost("memory", int(over)),
        where=Where(strategy=r.strategy),
        unfixed=by_hand(change),
    )


def kv_replicated(r: ServingResult) -> Finding | None:
    """[kv-replicated] Each byte of the cache is held by several chips of the tensor group."""
    sizes = r.axis_sizes
    group = sizes.get("tensor", 1) * sizes.get("sequence", 1)
    if r.kv_copies < 2 or group < 2:
        return None
    wasted = r.kv_bytes - r.kv_bytes // r.kv_copies
    return Finding(
        kind="kv-replicated",
        severity="warning",
        title=f"the KV cache is held {r.kv_copies} times across the tensor-parallel group",
        why=(
            f"the cache splits over {sizes.get('tensor', 1)} KV-head groups but the tensor "
            f"group has {group} chips: each chip keeps {format_bytes(r.kv_bytes)} of cache "
            f"where {format_bytes(r.kv_bytes // r.kv_copies)} would do"
        ),
        cost=FindingCost("memory", int(wasted)),
        where=Where(leaf="KV cache", strategy=r.strategy),
        unfixed=by_hand(
            "split the cache's positions over the rest of the group (strategy 'tp'), or use "
            "tensor groups no wider than the KV heads and split the batch over the others "
            "(strategy 'dp+tp')"
        ),
    )


def weights_replicated(r: ServingResult, chips_weight_bytes: int) -> Finding | None:
    """[weights-replicated] Data parallelism copies weights that take much of the HBM (or do
    not fit) while split over the chips they would: ``chips_weight_bytes`` is the weights
    split over all chips."""
    data = r.axis_sizes.get("data", 1)
    if data < 2 or r.weight_copies < 2 or not r.hbm_bytes:
        return None
    # heavy: the weights take much of the HBM, or splitting them would make it fit
    saved = r.weight_bytes - chips_weight_bytes
    rescued = r.fits is False and r.compiled and r.total_bytes - saved <= r.hbm_bytes
    heavy = r.weight_bytes > WEIGHTS_SHARE * r.hbm_bytes or rescued
    if not heavy or chips_weight_bytes >= r.hbm_bytes:
        return None
    return Finding(
        kind="weights-replicated",
        severity="error" if r.fits is False else "warning",
        title=f"the weights are copied on {r.weight_copies} chips under data parallelism",
        why=(
            f"each chip holds {format_bytes(r.weight_bytes)} of weights "
            f"({r.weight_bytes / r.hbm_bytes:.0%} of its HBM), leaving little for the cache; "
            f"split over the {r.chips} chips they would take {format_bytes(chips_weight_bytes)}"
        ),
        cost=FindingCost("memory", int(r.weight_bytes - chips_weight_bytes)),
        where=Where(leaf="weights", strategy=r.strategy),
        unfixed=by_hand(
            "split the weights over a wider tensor axis: strategy 'tp'"
            if r.axis_sizes.get("tensor", 1) > 1
            else "split the weights over a tensor axis: strategy 'dp+tp' or 'tp'"
        ),
    )


def collective_bound(r: ServingResult) -> Finding | None:
    """[collective-bound] The step is set by its collectives, not by HBM or compute."""
    if r.bound != "collectives" or not r.collectives or not r.compiled:
        return None
    worst = max(r.collectives, key=lambda c: c.seconds or 0.0)
    on_chip = max(r.memory_seconds or 0.0, r.compute_seconds or 0.0)
    return Finding(
        kind="collective-bound",
        severity="warning",
        title=f"the {r.mode} step is set by its collectives",
        why=(
            f"collectives take {format_seconds(r.collective_seconds or 0.0)} per step against "
            f"{format_seconds(on_chip)} for HBM and compute; the largest is "
            f"{worst.count} x {worst.kind} over {'x'.join(worst.axes) or 'all devices'} "
            f"({format_bytes(worst.moved_bytes)} per step)"
        ),
        cost=FindingCost("moved", int(worst.moved_bytes), seconds=r.collective_seconds),
        where=Where(strategy=r.strategy),
        unfixed=by_hand(_collective_fix(r)),
    )


def _collective_fix(r: ServingResult) -> str:
    """How to shrink the collectives of ``r``: under expert parallelism, keep the tokens on
    their chips by splitting every expert over 'tensor' instead (no all-to-all); otherwise
    narrower tensor groups; in both, a larger batch where more fits."""
    if r.experts is not None and "all-to-all" in {c.kind for c in r.collectives}:
        fix = (
            "keep the tokens on their chips: split every expert over 'tensor' instead of "
            "sending tokens to whole experts ('dp+tp' has no all-to-all)"
        )
    else:
        fix = "use narrower tensor groups and split the batch over the rest ('dp+tp')"
    if r.fits and r.max_batch and r.max_batch > r.batch:
        fix += (
            f", or raise the batch (up to {r.max_batch:,} fit) so the bytes read per step "
            "outweigh the collectives"
        )
    return fix


def serving_findings(results: Sequence[ServingResult]) -> tuple[Finding, ...]:
    """Every serving finding of ``results``, strategy by strategy."""
    out: list[Finding] = []
    for r in results:
        # split over all of r's chips: its per chip weights without data parallelism's copies
        all_split = r.weight_bytes // max(1, r.weight_copies)
        found = (
            over_hbm(r),
            kv_replicated(r),
            weights_replicated(r, all_split),
            collective_bound(r),
        )
        for f in found:
            if f is not None:
                out.append(f)
    return tuple(out)
