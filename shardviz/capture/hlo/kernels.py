"""The kernels of a compiled module: which custom calls are kernels, their names, and what
each call computes.

A kernel (a Pallas/Mosaic TPU kernel, a Pallas GPU or Triton kernel, a Mosaic GPU kernel)
is a ``custom-call`` the compiler cannot see into. Its flops come, in this order, from a
count of its body made when the program was traced (a :data:`KernelTable`, see
:mod:`shardviz.capture.kernel_costs`: exact where the body's conditions could be read; an
author's estimate may ignore the blocks a causal mask skips), from the cost estimate its
author declared (in its backend config; the compiler's cost model reads the same), or from
nowhere: then it is
named as not counted. Pure text in, numbers out; no jax.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from shardviz.capture.hlo.text import HloInstruction, HloModule, array_leaves
from shardviz.model.kernels import KernelUse

__all__ = [
    "KERNEL_TARGETS",
    "KernelCount",
    "KernelKey",
    "KernelTable",
    "count_of",
    "declared_flops",
    "is_kernel",
    "kernel_key",
    "kernel_aliases",
    "kernel_name",
    "kernel_uses",
    "operand_types",
]

#: Custom-call targets that run a kernel: Mosaic TPU (Pallas TPU), Triton (Pallas GPU,
#: jax-triton), Mosaic GPU.
KERNEL_TARGETS = frozenset(
    ("tpu_custom_call", "__gpu$xla.gpu.triton", "triton_kernel_call", "mosaic_gpu",
     "mosaic_gpu_v2")
)  # fmt: skip
#: The name scope jax gives the forward ops ``jax.checkpoint`` recomputes.
_REMAT = "rematted_computation"

KernelKey = tuple[str, tuple[str, ...]]


@dataclass(frozen=True)
class KernelCount:
    """What one call of a kernel computes (see :data:`shardviz.model.kernels.KERNEL_HOWS`
    for ``how``); ``hbm_bytes``: its operands and results."""

    flops: float | None
    model_flops: float | None
    how: str
    why: str = ""
    hbm_bytes: float = 0.0
    #: An attention backward kernel: its model flops already leave its recomputation out,
    #: and a remat scope around it (a custom backward under ``jax.checkpoint``) does not
    #: make it a recomputation.
    backward: bool = False


KernelTable = Mapping[KernelKey, KernelCount]


def kernel_key(name: str, operand_types: Iterable[str]) -> KernelKey:
    """A kernel call's key: its name and its operands' types (``bf16[4,1024,128]``)."""
    return name, tuple(operand_types)


_TARGET_RE = re.compile(r'custom_call_target="([^"]*)"')


def _target(ins: HloInstruction) -> str:
    m = _TARGET_RE.search(ins.attr_text)
    return m.group(1) if m else ""


def is_kernel(ins: HloInstruction) -> bool:
    """Whether ``ins`` is a custom call that runs a kernel."""
    return ins.opcode == "custom-call" and _target(ins) in KERNEL_TARGETS


_SUFFIX_RE = re.compile(r"(\.(\d+|clone|remat\d*))+$")
_TRITON_NAME_RE = re.compile(r'"name"\s*:\s*"([^"]+)"')


_WRAPPED_RE = re.compile(r"^(?:[\w.]+\()+(.*?)\)+$")


def kernel_name(module: HloModule, ins: HloInstruction) -> str:
    """The kernel's name as people know it: a Triton kernel's declared name, else the scope
    around its ``pallas_call`` in its op name (``transpose(jvp(jit(tgmm)))`` read as
    ``tgmm``), else the custom call's (the compiler adds ``.3`` or ``.clone`` to it)."""
    if "triton" in _target(ins):
        m = _TRITON_NAME_RE.search(ins.attr_text)
        if m:
            return m.group(1)
    parts = module.named(ins).op_name.split("/")
    if "pallas_call" in parts and parts.index("pallas_call") > 0:
        scope = parts[parts.index("pallas_call") - 1]
        m = _WRAPPED_RE.match(scope)
        return m.group(1) if m else scope
    return _SUFFIX_RE.sub("", ins.name) or ins.name


_UNSAFE_RE = re.compile(r"[^\w.-]")


def kernel_aliases(module: HloModule, ins: HloInstruction) -> tuple[str, ...]:
    """The names a trace may know the kernel by: the custom call's own (jax names it after
    the kernel) and the scope around it (jax's flash attention names its backward kernels
    by scope), as module names hold them."""
    names = [_SUFFIX_RE.sub("", ins.name), _UNSAFE_RE.sub("_", kernel_name(module, ins))]
    return tuple(dict.fromkeys(n for n in names if n))


_LAYOUT_RE = re.compile(r"operand_layout_constraints=\{(.*?)\}(?:,\s*\w+=|\s*$)")
_TYPE_RE = re.compile(r"([a-z]+\d*[a-z0-9]*)\[([\d,]*)\]")


def operand_types(module: HloModule, ins: HloInstruction) -> tuple[str, ...]:
    """The operands' types as jax passed them (the layout constraints keep them; a
    bitcast can reshape an operand in the final module)."""
    m = _LAYOUT_RE.search(ins.attr_text)
    if m:
        return tuple(f"{t}[{d}]" for t, d in _TYPE_RE.findall(m.group(1)))
    out: list[str] = []
    for shape in module.operand_shapes(ins):
        leaves = array_leaves(shape) if shape is not None else ()  # type: ignore[arg-type]
        out.extend(f"{a.type}[{','.join(str(d) for d in a.dims)}]" for a in leaves)
    return tuple(out)


_DECLARED_RE = re.compile(r'"cost_estimate"\s*:\s*\{[^}]*?"flops"\s*:\s*"?(\d+)')


def declared_flops(ins: HloInstruction) -> float | None:
    """The flops a kernel's author declared (a Pallas TPU kernel's ``cost_estimate``,
    which the compiler's own cost model takes as is), else ``None``."""
    if ins.opcode != "custom-call" or "cost_estimate" not in ins.body:
        return None
    m = _DECLARED_RE.search(ins.body)
    return float(m.group(1)) if m else None


def count_of(module: HloModule, ins: HloInstruction, table: KernelTable | None) -> KernelCount:
    """What one call of the kernel ``ins`` computes: counted from its body at trace time,
    else as its author declared, else not counted, saying why."""
    found = _traced(module, ins, table) if table is not None else None
    if found is not None and found.flops is not None:
        return found  # the body's own count: a declared estimate may ignore a causal mask
    declared = declared_flops(ins)
    if declared is not None:
        return KernelCount(declared, declared, "declared")
    if found is not None:
        return found
    if table is None:
        return KernelCount(None, None, "not counted", "shardviz did not see the program traced")
    return KernelCount(None, None, "not counted", "its body was not in the traced program")


def _traced(module: HloModule, ins: HloInstruction, table: KernelTable) -> KernelCount | None:
    """The trace's count for ``ins``: by a name and its operand types, else by a name
    alone or its operand types alone where either is unambiguous."""
    names = kernel_aliases(module, ins)
    types = operand_types(module, ins)
    found = next((table[k] for n in names if (k := kernel_key(n, types)) in table), None)
    for match in (lambda n, t: n in names, lambda n, t: t == types):  # unambiguous only
        if found is None:
            same = {c for (n, t), c in table.items() if match(n, t)}
            found = same.pop() if len(same) == 1 else None
    return found


def kernel_uses(
    module: HloModule, runs: Mapping[str, int], table: KernelTable | None
) -> tuple[KernelUse, ...]:
    """Each kernel of ``module`` per step (calls times the runs of their computation),
    one entry per kernel name and way of counting, in the order they first appear."""
    acc: dict[tuple[str, str], dict] = {}
    for ins in module.instructions():
        if not is_kernel(ins):
            continue
        n = runs.get(ins.computation, 1)
        count = count_of(module, ins, table)
        name = kernel_name(module, ins)
        entry = acc.setdefault(
            (name, count.how),
            {"target": _target(ins), "calls": 0, "flops": 0.0, "model": 0.0, "added": 0.0,
             "hbm": 0.0, "why": count.why, "source": module.source_of(ins)},
        )  # fmt: skip
        entry["calls"] += n
        entry["hbm"] += count.hbm_bytes * n
        if count.flops is None:
            continue
        entry["flops"] += count.flops * n
        recomputed = _REMAT in module.named(ins).op_name and not count.backward
        entry["model"] += 0.0 if recomputed else (count.model_flops or 0.0) * n
        # What the compiler's cost model lacks: all of it, less what the author declared.
        entry["added"] += (count.flops - (declared_flops(ins) or 0.0)) * n
    return tuple(
        KernelUse(
            name=name,
            target=e["target"],
            calls=e["calls"],
            flops=None if how == "not counted" else e["flops"],
            model_flops=None if how == "not counted" else e["model"],
            how=how,
            why=e["why"],
            added=e["added"],
            hbm_bytes=e["hbm"],
            source=e["source"],
        )
        for (name, how), e in acc.items()
    )
