"""A Mosaic TPU kernel counted from the body its custom call carries, when no trace is there.

A program given as a bare ``Lowered`` or ``Compiled`` holds no jaxpr, but each Pallas TPU
kernel's custom call carries its compiled body (MLIR bytecode in the backend config's
``body``) with its grid (``iteration_bounds``). Its matmuls (``tpu.matmul``) have static
shapes, so each grid step's work is known; what its conditions skip is not (the values they
test live in the program's data), so every branch is taken at its costliest and the count
is an upper bound (``bounded``) where the body has any. A loop of unknown trips, or a body
that cannot be read, leaves the kernel not counted, with the reason.
"""

from __future__ import annotations

import base64
import math
import re
from typing import Any

from shardviz.capture.hlo.kernels import (
    KernelCount,
    KernelTable,
    is_kernel,
    kernel_aliases,
    kernel_key,
    operand_types,
)
from shardviz.capture.hlo.text import HloModule
from shardviz.capture.kernel_costs import is_backward, model_share

__all__ = ["body_table"]

_BODY_RE = re.compile(r'"body"\s*:\s*"([A-Za-z0-9+/=]+)"')
_VECTOR_RE = re.compile(r"vector<([\dx]+)x\w+>")
_CONTRACT_RE = re.compile(r"dot_dimension_numbers<\[([\d, ]*)\]")
_BOUNDS_RE = re.compile(r"array<i64:\s*([\d, ]+)>")


class _Unreadable(Exception):
    pass


def _dims(type_text: str) -> list[int]:
    m = _VECTOR_RE.search(type_text)
    if m is None:
        raise _Unreadable(f"a matmul on {type_text}")
    return [int(d) for d in m.group(1).split("x")]


def _attributes(op: Any) -> dict[str, str]:
    """An op's attributes as text, by name (the bindings iterate names or named pairs)."""
    out = {}
    for a in op.attributes:
        if isinstance(a, str):
            out[a] = str(op.attributes[a])
        else:
            out[a.name] = str(a.attr)
    return out


def _matmul(op: Any) -> float:
    lhs = _dims(str(op.operands[0].type))
    out = _dims(str(op.results[0].type))
    attrs = _attributes(op)
    m = _CONTRACT_RE.search(attrs.get("dimension_numbers", ""))
    contract = [int(d) for d in m.group(1).split(",") if d.strip()] if m else [len(lhs) - 1]
    if attrs.get("transpose_lhs") == "true":
        contract = [len(lhs) - 1 - d for d in contract]
    return 2.0 * math.prod(out) * math.prod(lhs[d] for d in contract)


def _constant(value: Any) -> int | None:
    owner = getattr(value, "owner", None)
    if owner is None or not str(owner.name).endswith("arith.constant"):
        return None
    text = str(owner.attributes["value"])
    m = re.match(r"(-?\d+)", text)
    return int(m.group(1)) if m else None


class _Walk:
    def __init__(self) -> None:
        self.bounded = False
        self.dots: list[float] = []  # each matmul's flops once, in body order

    def ops(self, block: Any) -> float:
        return sum(self.op(o.operation) for o in block.operations)

    def regions(self, op: Any) -> float:
        return sum(self.ops(b) for r in op.regions for b in r.blocks)

    def op(self, op: Any) -> float:
        name = str(op.name).removeprefix("stable_mosaic.")
        if name in ("tpu.matmul", "vector.contract"):
            flops = _matmul(op)
            self.dots.append(flops)
            return flops
        if name == "scf.if":
            self.bounded = True  # what it skips depends on values the body reads
            return max((self.ops(b) for r in op.regions for b in r.blocks), default=0.0)
        if name == "scf.for":
            lb, ub, step = (_constant(v) for v in list(op.operands)[:3])
            if lb is None or ub is None or not step:
                raise _Unreadable("a loop in its body runs as many times as its data says")
            return max(0, -(-(ub - lb) // step)) * self.regions(op)
        if name == "scf.while":
            raise _Unreadable("a loop in its body runs as many times as its data says")
        return self.regions(op)


def _count(body: bytes, name: str) -> KernelCount:
    from jax._src.lib import tpu  # the Mosaic dialect, to read the body's types
    from jax._src.lib.mlir import ir

    ctx = ir.Context()
    tpu.register_dialect(ctx)
    ctx.allow_unregistered_dialects = True
    with ctx:
        module = ir.Module.parse(body)
        for func in module.body.operations:
            attrs = _attributes(func)
            if "iteration_bounds" not in attrs:
                continue
            m = _BOUNDS_RE.search(attrs["iteration_bounds"])
            points = math.prod(int(d) for d in m.group(1).split(",")) if m else 1
            walk = _Walk()
            flops = walk.regions(func.operation) * points
            share = model_share(name, walk.dots)
            how = "bounded" if walk.bounded else "counted"
            why = (
                "read from its compiled body: every branch at its costliest" if walk.bounded else ""
            )
            backward = is_backward(name, walk.dots)
            return KernelCount(flops, flops * (share or 1.0), how, why, 0.0, backward)
    raise _Unreadable("no kernel function in its body")


def body_table(module: HloModule) -> KernelTable:
    """Each Mosaic TPU kernel of ``module`` counted from the body its custom call carries
    (for a program shardviz did not see traced), keyed as the trace's counts are."""
    table: dict = {}
    for ins in module.instructions():
        if not is_kernel(ins):
            continue
        names = kernel_aliases(module, ins)
        m = _BODY_RE.search(ins.attr_text)
        try:
            if "tpu_custom_call" not in ins.attr_text:
                raise _Unreadable(
                    "shardviz reads this kind of kernel from a trace only: explain the "
                    "function, or its jax.jit(f).trace(...)"
                )
            if m is None:
                raise _Unreadable("its custom call carries no body")
            count = _count(base64.b64decode(m.group(1)), names[-1])
        except Exception as err:  # bytecode from another jaxlib, an op it does not know
            why = str(err) if isinstance(err, _Unreadable) else (
                f"shardviz could not read its body ({type(err).__name__})")  # fmt: skip
            count = KernelCount(None, None, "not counted", why)
        for n in names:
            table[kernel_key(n, operand_types(module, ins))] = count
    return table
