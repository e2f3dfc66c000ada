"""Matmul flops of a compiled HLO module per step, recomputation apart.

The field counts a training step's useful work (MFU's numerator) as its matmuls' flops:
every ``dot`` and ``convolution`` (the TPU compiler writes matmuls as convolutions), 2 per
multiply-add, each as often as its computation runs per step (loop trips multiplied out,
see :mod:`.hlo_loops`). Ops jax marks as rematerialised (their ``op_name`` has
``rematted_computation``: the forward ops ``jax.checkpoint`` runs again in the backward
pass) are the hardware's extra work, not the model's: :func:`matmul_flops` counts them
apart. Pure text in, numbers out; no jax.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

from .hlo_text import ArrayShape, HloInstruction, HloModule, array_leaves, parse_int_list

__all__ = ["MatmulFlops", "instruction_flops", "matmul_flops"]

#: The name-stack marker jax gives the forward ops a ``jax.checkpoint`` recomputes.
REMAT_MARK = "rematted_computation"


@dataclass(frozen=True)
class MatmulFlops:
    """Matmul flops per step on one device: ``total`` as the hardware runs them (recomputed
    ones included), ``recomputed`` the part ``jax.checkpoint`` runs again; ``model`` is
    ``total - recomputed``. ``lower_bound``: a loop of unknown count holds some of them
    (counted once)."""

    total: float
    recomputed: float
    lower_bound: bool = False

    @property
    def model(self) -> float:
        return self.total - self.recomputed


def _array(shape: object) -> ArrayShape | None:
    leaves = array_leaves(shape) if shape is not None else ()  # type: ignore[arg-type]
    return leaves[0] if leaves else None


def _dot_flops(module: HloModule, ins: HloInstruction) -> float | None:
    out = _array(ins.shape)
    lhs = _array(module.operand_shapes(ins)[0]) if ins.operands else None
    if out is None or lhs is None:
        return None
    dims = parse_int_list(ins.attrs.get("lhs_contracting_dims", "{}").strip("{}"))
    contracted = math.prod(lhs.dims[d] for d in dims if d < len(lhs.dims))
    return 2.0 * out.size * contracted


def _conv_flops(module: HloModule, ins: HloInstruction) -> float | None:
    """2 x output elements x the kernel's elements per output feature (input features per
    group times the window), the same count for feature- and batch-grouped convolutions."""
    out = _array(ins.shape)
    shapes = module.operand_shapes(ins)
    kernel = _array(shapes[1]) if len(shapes) > 1 else None
    m = re.search(r"dim_labels=\w+_(\w+)->", ins.attr_text)
    if out is None or kernel is None or m is None:
        return None
    labels = m.group(1)
    if "o" not in labels or len(labels) != len(kernel.dims):
        return None
    features = kernel.dims[labels.index("o")]
    return 2.0 * out.size * kernel.size / max(1, features)


def instruction_flops(module: HloModule, ins: HloInstruction) -> float | None:
    """Flops of one ``dot`` or ``convolution`` (``None`` for any other op, or a shape that
    cannot be read)."""
    if ins.opcode == "dot":
        return _dot_flops(module, ins)
    if ins.opcode == "convolution":
        return _conv_flops(module, ins)
    return None


def _remat(module: HloModule, ins: HloInstruction, callers: Mapping[str, list]) -> bool:
    """Whether jax marked ``ins`` rematerialised (on the op, or on the fusion around it when
    the compiler dropped the op's own metadata)."""
    if ins.op_name:
        return REMAT_MARK in ins.op_name
    outer = callers.get(ins.computation) or []
    return bool(outer) and REMAT_MARK in outer[0].op_name


def matmul_flops(
    module: HloModule,
    runs: Mapping[str, int],
    callers: Mapping[str, list],
    lower_bound: bool = False,
) -> MatmulFlops:
    """Every matmul's flops times the runs of its computation (``runs`` from
    :func:`shardviz.capture.hlo_loops.computation_runs`); ``lower_bound`` when a loop's
    count is unknown."""
    total = recomputed = 0.0
    for ins in module.instructions():
        if ins.opcode not in ("dot", "convolution"):
            continue
        flops = instruction_flops(module, ins)
        if flops is None:
            continue
        n = runs.get(ins.computation, 1)
        total += flops * n
        if _remat(module, ins, callers):
            recomputed += flops * n
    return MatmulFlops(total=total, recomputed=recomputed, lower_bound=lower_bound)
