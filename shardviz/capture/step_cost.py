"""A compiled program's cost per step: the compiler's cost model with loops counted right.

XLA's ``cost_analysis()`` counts each ``while`` body once. Here each loop body's own cost
(the compiler's cost model run on that body alone, less the loops nested in it) is added
once more for every further run per step, nested loops multiplied (:mod:`.hlo.loops`), on
the per-device program and on the global one alike; matmul flops are counted from the HLO
with recomputation apart (:mod:`.hlo.matmuls`), kernels the compiler cannot see into
included as declared or counted at trace time (:mod:`.hlo.kernels`). The same model is used throughout, so a
scanned program and its unrolled twin get the same per-step figures.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from shardviz.capture.compile import Compiled, global_cost, per_device_cost, text_cost
from shardviz.capture.hlo.kernels import KernelTable, kernel_uses
from shardviz.capture.hlo.loops import computation_runs, loop_body_module, loops_of
from shardviz.capture.hlo.matmuls import MatmulFlops, matmul_flops
from shardviz.capture.hlo.op_work import op_work
from shardviz.capture.hlo.routing import MoeDots, moe_dots, slot_fill
from shardviz.capture.hlo.text import HloModule, parse_hlo_module
from shardviz.capture.kernel_body import body_table
from shardviz.model import Cost, KernelUse, Loop, OpWork

__all__ = ["ModuleWork", "loop_extra", "module_work", "per_step", "program_cost"]

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


def _loops(
    text: str, module: HloModule | None, cost_of: CostFn
) -> tuple[tuple[Loop, ...], dict[str, float]]:
    """The loops of ``text`` (a refused body's with ``costed=False``) and what they add per
    step beyond one run of each body."""
    if not text or " while(" not in text:
        return (), {}
    module = module if module is not None else parse_hlo_module(text)
    loops = loops_of(module)
    if not loops:
        return loops, {}
    extra, refused = loop_extra(text, module, loops, cost_of)
    loops = tuple(dataclasses.replace(lp, costed=False) if lp.name in refused else lp
                  for lp in loops)  # fmt: skip
    return loops, extra


def _plus(once: dict, extra: dict[str, float]) -> dict:
    out = dict(once)
    for k in _KEYS:
        if k in out and k in extra:
            out[k] = float(out[k]) + extra[k]
    return out


def per_step(
    once: dict | None, text: str, module: HloModule | None = None, cost_of: CostFn = text_cost
) -> tuple[dict | None, tuple[Loop, ...]]:
    """``once`` (a cost analysis counting each loop body once) made per step, and the loops
    of ``text``; a loop whose body the cost model refused is counted once and comes back
    with ``costed=False`` (so every figure built on these says it is a lower bound)."""
    if once is None:
        return once, ()
    loops, extra = _loops(text, module, cost_of)
    return (_plus(once, extra) if loops else once), loops


@dataclasses.dataclass(frozen=True)
class ModuleWork:
    """What the per-device cost reads from the final module alone, with no compiled object:
    so it can be worked out on the dump thread while the compiler still runs (see
    :mod:`.dump_watch`): the loops and what they add, matmul flops, kernels, the op list."""

    loops: tuple[Loop, ...]
    extra: dict[str, float]
    matmuls: MatmulFlops
    kernels: tuple[KernelUse, ...]
    ops: tuple[OpWork, ...]


def module_work(
    module: HloModule,
    text: str,
    table: KernelTable | None,
    propagated: HloModule | None | Callable[[], HloModule | None] = None,
) -> ModuleWork:
    """The :class:`ModuleWork` of the final ``module`` (``text``: its text; ``table``: the
    kernels counted at trace time, else read from their bodies; ``propagated``: the program
    before partitioning, or a function that parses it, for an MoE layer's slot fill)."""
    loops, extra = _loops(text, module, text_cost)
    runs = computation_runs(module, loops)
    lower = any(not lp.known for lp in loops)
    # Without a trace (a Lowered or Compiled given as it is), from the bodies kernels carry.
    table = table if table is not None else body_table(module)
    moe = moe_dots(module)
    fill = _fill(module, moe, propagated)
    return ModuleWork(
        loops=loops,
        extra=extra,
        matmuls=matmul_flops(module, runs, lower, table, fill, moe),
        kernels=kernel_uses(module, runs, table),
        ops=op_work(module, runs, table),
    )


def _fill(
    module: HloModule,
    moe: MoeDots,
    propagated: HloModule | None | Callable[[], HloModule | None],
) -> float | None:
    """The share of the expert slots tokens fill, read on the program before partitioning
    (global shapes; a one-device program is its own); ``None`` without MoE slots (the
    common case: nothing more parsed)."""
    if not moe.slots:
        return None
    if callable(propagated):
        propagated = propagated()
    if propagated is None and module.num_devices > 1:
        return None
    return slot_fill(propagated if propagated is not None else module)


def program_cost(
    comp: Compiled,
    glob_once: dict | None = None,
    propagated: HloModule | None = None,
    work: ModuleWork | None = None,
) -> Cost | None:
    """The program's :class:`~shardviz.model.Cost` per step: per device from the compiled
    program, global from the program before partitioning (``glob_once``, when already read,
    is that module's cost analysis with loop bodies once; ``propagated``, that module parsed;
    ``work``: the final module's :class:`ModuleWork`, when worked out during the compile)."""
    per_once = per_device_cost(comp)
    glob_once = glob_once if glob_once else global_cost(comp)
    if per_once is None and glob_once is None:
        return None
    module = comp.module()

    def parsed() -> HloModule | None:  # the program before partitioning, for an MoE's fill
        if propagated is not None:
            return propagated
        return parse_hlo_module(comp.propagated_text) if comp.propagated_text else None

    if per_once is None:  # no per-device figures: no loops counted on them either
        work = module_work(module, "", comp.kernels, parsed)
    elif work is None:
        work = module_work(module, comp.hlo_text, comp.kernels, parsed)
    per_dev = _plus(per_once, work.extra) if per_once is not None and work.loops else per_once
    glob, _ = per_step(glob_once, comp.propagated_text, propagated)
    # The compiler's cost model counts a kernel that declares no cost as nothing.
    added = sum(k.added for k in work.kernels)

    def get(d: dict | None, k: str) -> float | None:
        return float(d[k]) if d and k in d else None

    flops = get(per_dev, "flops")
    mm = work.matmuls
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
        loops=work.loops if per_once is not None else (),
        ops=work.ops,
        kernels=work.kernels,
    )
