"""A compiled program's cost per step: the compiler's cost model with loops counted right.

XLA's ``cost_analysis()`` counts each ``while`` body once. Here each loop body's own cost
(the compiler's cost model run on that body alone, less the loops nested in it) is added
once more for every further run per step, nested loops multiplied (:mod:`.hlo_loops`), on
the per-device program and on the global one alike; matmul flops are counted from the HLO
with recomputation apart (:mod:`.hlo_matmuls`), kernels the compiler cannot see into
included as declared or counted at trace time (:mod:`.hlo.kernels`). The same model is used throughout, so a
scanned program and its unrolled twin get the same per-step figures.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from shardviz.capture.compile import Compiled, global_cost, per_device_cost, text_cost
from shardviz.capture.hlo.kernels import kernel_uses
from shardviz.capture.hlo.loops import computation_runs, loop_body_module, loops_of
from shardviz.capture.hlo.matmuls import matmul_flops
from shardviz.capture.hlo.op_work import op_work
from shardviz.capture.hlo.routing import MoeDots, moe_dots, slot_fill
from shardviz.capture.hlo.text import HloModule, parse_hlo_module
from shardviz.capture.kernel_body import body_table
from shardviz.model import Cost, Loop

__all__ = ["loop_extra", "per_step", "program_cost"]

_KEYS = ("flops", "bytes accessed")

CostFn = Callable[[str], dict | None]


def loop_extra(
    text: str, module: HloModule, loops: tuple[Loop, ...], cost_of: CostFn = text_cost
) -> tuple[dict[str, float], frozenset[str]]:
    """What the loops add per step beyond one run of each body: each body's own cost (its
    cost less its nested loops' bodies) times ``counted_runs - 1``; and the loops whose
    body the cost model refused, which add nothing (a refused loop inside a counted one
    stays in that one's own cost: counted once per run of it)."""
    whole: dict[str, dict] = {}
    refused: set[str] = set()
    for loop in loops:
        if loop.counted_runs == 1:  # nothing to add (a loop inside one that runs more runs more)
            continue
        cost = cost_of(loop_body_module(text, module, loop.body))
        if cost is None:
            refused.add(loop.name)
        else:
            whole[loop.name] = cost
    extra = dict.fromkeys(_KEYS, 0.0)
    for loop in loops:
        if loop.name not in whole:
            continue
        own = dict(whole[loop.name])
        for child in loops:
            if child.parent == loop.name and child.name in whole:
                for k in _KEYS:
                    own[k] = own.get(k, 0.0) - float(whole[child.name].get(k, 0.0))
        for k in _KEYS:
            extra[k] += float(own.get(k, 0.0)) * (loop.counted_runs - 1)
    return extra, frozenset(refused)


def per_step(
    once: dict | None, text: str, module: HloModule | None = None, cost_of: CostFn = text_cost
) -> tuple[dict | None, tuple[Loop, ...]]:
    """``once`` (a cost analysis counting each loop body once) made per step, and the loops
    of ``text``; a loop whose body the cost model refused is counted once and comes back
    with ``costed=False`` (so every figure built on these says it is a lower bound)."""
    if once is None or not text or " while(" not in text:
        return once, ()
    module = module if module is not None else parse_hlo_module(text)
    loops = loops_of(module)
    if not loops:
        return once, loops
    extra, refused = loop_extra(text, module, loops, cost_of)
    loops = tuple(dataclasses.replace(lp, costed=False) if lp.name in refused else lp
                  for lp in loops)  # fmt: skip
    out = dict(once)
    for k in _KEYS:
        if k in out:
            out[k] = float(out[k]) + extra[k]
    return out, loops


def _fill(
    comp: Compiled, module: HloModule, moe: MoeDots, propagated: HloModule | None
) -> float | None:
    """The share of the expert slots tokens fill, read on the program before partitioning
    (global shapes; a one-device program is its own); ``None`` without MoE slots (the
    common case: nothing more parsed)."""
    if not moe.slots:
        return None
    if propagated is None and comp.propagated_text:
        propagated = parse_hlo_module(comp.propagated_text)
    if propagated is None and module.num_devices > 1:
        return None
    return slot_fill(propagated if propagated is not None else module)


def program_cost(
    comp: Compiled, glob_once: dict | None = None, propagated: HloModule | None = None
) -> Cost | None:
    """The program's :class:`~shardviz.model.Cost` per step: per device from the compiled
    program, global from the program before partitioning (``glob_once``, when already read,
    is that module's cost analysis with loop bodies once; ``propagated``, that module parsed)."""
    per_once = per_device_cost(comp)
    glob_once = glob_once if glob_once else global_cost(comp)
    if per_once is None and glob_once is None:
        return None
    module = comp.module()
    per_dev, loops = per_step(per_once, comp.hlo_text, module)
    glob, _ = per_step(glob_once, comp.propagated_text, propagated)
    lower = any(not lp.known for lp in loops)
    runs = computation_runs(module, loops)
    # Without a trace (a Lowered or Compiled given as it is), from the bodies kernels carry.
    table = comp.kernels if comp.kernels is not None else body_table(module)
    moe = moe_dots(module)
    mm = matmul_flops(module, runs, lower, table, _fill(comp, module, moe, propagated), moe)
    kernels = kernel_uses(module, runs, table)
    # The compiler's cost model counts a kernel that declares no cost as nothing.
    added = sum(k.added for k in kernels)

    def get(d: dict | None, k: str) -> float | None:
        return float(d[k]) if d and k in d else None

    flops = get(per_dev, "flops")
    return Cost(
        flops_per_device=flops + added if flops is not None else None,
        bytes_accessed_per_device=get(per_dev, "bytes accessed"),
        flops_global=get(glob, "flops"),
        bytes_accessed_global=get(glob, "bytes accessed"),
        compiler_flops_per_device=get(per_once, "flops"),
        compiler_bytes_accessed_per_device=get(per_once, "bytes accessed"),
        matmul_flops_per_device=mm.total,
        model_flops_per_device=mm.model,
        dispatch_flops_per_device=mm.dispatch,
        padding_flops_per_device=mm.padding,
        loops=loops,
        ops=op_work(module, runs, table),
        kernels=kernels,
    )
