"""Matmul flops of a compiled HLO module per step, recomputation apart.

The field counts a training step's useful work (MFU's numerator) as its matmuls' flops:
every ``dot`` and ``convolution`` (the TPU compiler writes matmuls as convolutions), 2 per
multiply-add, and a kernel's (a Pallas ``custom-call``) as declared or counted (:mod:`.kernels`),
each as often as its computation runs per step (loop trips multiplied out, see
:mod:`.loops`). Ops jax marks as rematerialised (their ``op_name`` has
``rematted_computation``: the forward ops ``jax.checkpoint`` runs again in the backward
pass) and the copies XLA's own rematerialisation makes (``<op>.remat``) are the hardware's
extra work, not the model's: :func:`matmul_flops` counts them
apart, and so the matmuls that only move data (an MoE layer's one-hot dispatch and combine,
marked :data:`DISPATCH_MARK`). Pure text in, numbers out; no jax.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

from shardviz.capture.hlo.kernels import (
    KernelTable,
    count_of,
    declared_flops,
    is_kernel,
    operand_types,
)
from shardviz.capture.hlo.routing import MoeDots, moe_dots, operand_names
from shardviz.capture.hlo.text import (
    ArrayShape,
    HloInstruction,
    HloModule,
    array_leaves,
    parse_int_list,
    parse_shape,
)

__all__ = [
    "DISPATCH_MARK",
    "REMAT_MARK",
    "WINDOW_EDGE_MARK",
    "MatmulFlops",
    "cloned_by_xla_remat",
    "xla_remat_copies",
    "instruction_flops",
    "matmul_flops",
]

#: The name-stack marker jax gives the forward ops a ``jax.checkpoint`` recomputes.
REMAT_MARK = "rematted_computation"
#: The suffix XLA's own rematerialisation gives the ops it copies to run again later
#: (``fusion.757.remat``, ``.remat2``): under memory pressure the compiler recomputes a value
#: rather than keep it, and the copy keeps the original's metadata (a forward op's name, or
#: the backward's), so only its name (and its original beside it) says it is a recomputation.
_XLA_REMAT_CLONE = re.compile(r"\.remat\d*$")
#: A name scope that marks matmuls moving data rather than computing (an MoE layer's one-hot
#: dispatch and combine einsums): the hardware runs them, the model's math has none. Not
#: needed: :mod:`.routing` recognises them from the program; kept for programs that use it.
DISPATCH_MARK = "moe_dispatch"
#: A name scope that marks the key blocks a sliding window's band computes beyond the window
#: (its edge blocks): the hardware runs them, the field counts ``S x window`` per head
#: (MaxText's Gemma 3 formula), so they are counted as run, not as the model's.
WINDOW_EDGE_MARK = "window_edge"


@dataclass(frozen=True)
class MatmulFlops:
    """Matmul flops per step on one device: ``total`` as the hardware runs them (recomputed
    ones included), ``recomputed`` the part ``jax.checkpoint`` runs again (and the copies
    XLA's own rematerialisation runs, :func:`cloned_by_xla_remat`), ``dispatch`` the
    matmuls that only move data (an MoE dispatch and combine, recomputed or not),
    ``padding`` the expert slots no token fills (capacity padding, not recomputed; a dense
    grouped matmul's rows against the groups they are not in); ``model``
    is ``total - recomputed - dispatch - padding``. ``lower_bound``: a loop of unknown count
    holds some of them (counted once)."""

    total: float
    recomputed: float
    lower_bound: bool = False
    dispatch: float = 0.0
    #: Kernels' flops as run less their model flops (blocks a mask skips make it negative:
    #: the field counts attention in full; a backward kernel's recomputed matmuls, positive),
    #: and a sliding window's edge blocks (:data:`WINDOW_EDGE_MARK`).
    kernel_gap: float = 0.0
    padding: float = 0.0

    @property
    def model(self) -> float:
        return self.total - self.recomputed - self.dispatch - self.padding - self.kernel_gap


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


_WINDOW_RE = re.compile(r"window=\{([^}]*)\}")


def _window(attr_text: str, rank: int) -> list[dict[str, int]]:
    """Per spatial dim: size, padding, stride and dilations of a convolution's window."""
    dims = [{"size": 1, "lo": 0, "hi": 0, "stride": 1, "lhs": 1, "rhs": 1} for _ in range(rank)]
    m = _WINDOW_RE.search(attr_text)
    if m is None:
        return dims
    keys = {"size": ("size",), "stride": ("stride",), "lhs_dilate": ("lhs",),
            "rhs_dilate": ("rhs",), "pad": ("lo", "hi")}  # fmt: skip
    for part in m.group(1).split():
        key, _, value = part.partition("=")
        if key not in keys:
            continue
        for d, item in enumerate(value.split("x")[:rank]):
            for name, number in zip(keys[key], item.split("_"), strict=False):
                dims[d][name] = int(number)
    return dims


def _valid_pairs(size: int, out: int, w: dict[str, int]) -> int:
    """(output position, window position) pairs of one spatial dim that read a real input
    element, not padding nor a dilation hole: XLA's count of a windowed op's work. Counted in
    closed form, one window position at a time (a TPU program's gradient convolutions have
    windows and outputs in the thousands)."""
    span = (size - 1) * w["lhs"] + 1 if size else 0
    stride, dilation, pairs = max(1, w["stride"]), max(1, w["lhs"]), 0
    for k in range(w["size"]):
        base = k * w["rhs"] - w["lo"]  # input index at output position 0
        # o in [ceil(-base / stride), floor((span - 1 - base) / stride)] reads inside the input
        lo = max(0, (-base + stride - 1) // stride)
        hi = min(out - 1, (span - 1 - base) // stride) if span - 1 - base >= 0 else -1
        if dilation == 1:
            pairs += max(0, hi - lo + 1)
            continue
        # and o x stride + base on a real element: o x stride = -base (mod dilation)
        g = math.gcd(stride, dilation)
        if (-base) % g:
            continue
        step = dilation // g
        first = ((-base) // g) * pow(stride // g, -1, step) % step if step > 1 else 0
        first = lo + (first - lo) % step
        pairs += (hi - first) // step + 1 if first <= hi else 0
    return pairs


def _conv_flops(module: HloModule, ins: HloInstruction) -> float | None:
    """2 x (batch x output features) x input features per group x the window's valid
    (output, kernel) position pairs per spatial dim: padding and dilation holes do no work.
    Without padding that is 2 x output elements x the kernel's elements per output feature.
    The TPU compiler writes matmuls as convolutions, some with padded windows."""
    out = _array(ins.shape)
    shapes = module.operand_shapes(ins)
    lhs = _array(shapes[0]) if shapes else None
    kernel = _array(shapes[1]) if len(shapes) > 1 else None
    m = re.search(r"dim_labels=(\w+)_(\w+)->(\w+)", ins.attr_text)
    if out is None or lhs is None or kernel is None or m is None:
        return None
    in_labels, k_labels, out_labels = m.groups()
    if not (len(in_labels) == len(lhs.dims) and len(k_labels) == len(kernel.dims)
            and len(out_labels) == len(out.dims) and "o" in k_labels):  # fmt: skip
        return None
    spatial = [c for c in k_labels if c.isdigit()]
    window = _window(ins.attr_text, len(spatial))
    features = kernel.dims[k_labels.index("o")]
    per_output = kernel.size / max(1, features)  # input features per group x window
    positions = 1
    work = 1
    for d, label in enumerate(sorted(spatial, key=int)):
        size = lhs.dims[in_labels.index(label)] if label in in_labels else 1
        o = out.dims[out_labels.index(label)] if label in out_labels else 1
        ksize = kernel.dims[k_labels.index(label)]
        w = dict(window[d], size=ksize) if d < len(window) else window[d]
        positions *= o * ksize
        work *= _valid_pairs(size, o, w)
    if positions == 0:
        return 0.0
    return 2.0 * out.size * per_output * work / positions


#: Element types (HLO spelling, by prefix) of matmul operands with a peak of their own
#: (:meth:`shardviz.model.Hardware.peak_for`): fp8 in every variant; int8 and int4.
_NARROW_TYPES = (("f8", "fp8"), ("s8", "int8"), ("u8", "int8"), ("s4", "int8"), ("u4", "int8"))


def _precision_of(shape: object) -> str:
    array = _array(shape)
    if array is None:
        return ""
    return _narrow_kind(array.type)


def instruction_precision(module: HloModule, ins: HloInstruction) -> str:
    """``"fp8"`` or ``"int8"`` for a ``dot`` or ``convolution`` whose two operands both
    are (the matrix units then run at that precision's peak), ``""`` otherwise: wider
    operands, or one narrow operand the compiler widens to the other's type. A kernel's is
    its value operands' (:func:`_kernel_precision`)."""
    if is_kernel(ins):
        return _kernel_precision(operand_types(module, ins))
    if ins.opcode not in ("dot", "convolution") or len(ins.operands) < 2:
        return ""
    kinds = {_precision_of(shape) for shape in module.operand_shapes(ins)[:2]}
    return kinds.pop() if len(kinds) == 1 else ""


#: Kernel operands that index, count or mask rather than hold values (a grouped matmul's
#: group metadata, a mask's bounds): not a matmul's operands.
_INDEX_TYPES = ("s32", "u32", "s64", "u64", "s16", "u16", "pred")


def _kernel_precision(types: tuple[str, ...]) -> str:
    """A kernel's matmul precision from its operands' types (``f8e4m3fn[4096,2048]``): the
    narrow one where every value operand is (at least two), else ``""``, as a matmul's is
    where both operands are (one wide operand, such as bf16 queries against an fp8 cache, and
    the kernel widens the other). A wide operand right after a narrow one, of its rank and
    dividing each of its dims, is that operand's scales (qwix's tiles: an fp8 grouped matmul
    passes each operand's values, then their bf16 scales), not a matmul operand."""
    values: list[ArrayShape] = []
    for text in types:
        array = _array(parse_shape(text))
        if array is None or array.type.startswith(_INDEX_TYPES):
            continue
        if not (values and _is_scale(values[-1], array)):
            values.append(array)
    if len(values) < 2:
        return ""
    kinds = {_narrow_kind(a.type) for a in values}
    return kinds.pop() if len(kinds) == 1 else ""


def _narrow_kind(hlo_type: str) -> str:
    return next((p for prefix, p in _NARROW_TYPES if hlo_type.startswith(prefix)), "")


def _is_scale(before: ArrayShape, array: ArrayShape) -> bool:
    """Whether ``array``, the operand right after ``before``, holds ``before``'s scales."""
    return (
        bool(_narrow_kind(before.type))
        and not _narrow_kind(array.type)
        and len(array.dims) == len(before.dims)
        and all(d and p % d == 0 for d, p in zip(array.dims, before.dims, strict=True))
    )


def instruction_flops(
    module: HloModule, ins: HloInstruction, kernels: KernelTable | None = None
) -> float | None:
    """Flops of one ``dot`` or ``convolution``, or of a kernel as declared or counted
    (``kernels``: the counts made at trace time), ``None`` for any other op, a shape that
    cannot be read, or a kernel that could not be counted."""
    if ins.opcode == "dot":
        return _dot_flops(module, ins)
    if ins.opcode == "convolution":
        return _conv_flops(module, ins)
    if is_kernel(ins) or declared_flops(ins) is not None:
        return count_of(module, ins, kernels).flops
    return None


#: The name-stack marker of jax's backward pass (the transpose of the forward's ``jvp``).
_BACKWARD = "transpose("
#: The attributes that say how a matmul contracts its operands.
_CONTRACTION = frozenset({
    "lhs_contracting_dims", "rhs_contracting_dims", "lhs_batch_dims", "rhs_batch_dims",
    "dim_labels", "window", "feature_group_count", "batch_group_count",
})  # fmt: skip


def _signature(module: HloModule, ins: HloInstruction) -> tuple:
    """What a matmul computes, in shapes: its opcode, its operands' and result's element
    types and dims, and how it contracts them (layouts left out)."""
    shapes = (ins.shape, *module.operand_shapes(ins))
    arrays = tuple((a.type, a.dims) if isinstance(a, ArrayShape) else None for a in shapes)
    how = tuple(sorted((k, v) for k, v in ins.attrs.items() if k in _CONTRACTION))
    return ins.opcode, arrays, how


class _Forward:
    """The signatures of a module's forward-pass matmuls (outside jax's backward), found
    once and only when a matmul without metadata needs them."""

    def __init__(self, module: HloModule) -> None:
        self._module = module
        self._found: frozenset[tuple] | None = None

    def __contains__(self, signature: tuple) -> bool:
        if self._found is None:
            m = self._module
            stacks = (
                (ins, ins.op_name or m.named(ins).op_name)
                for ins in m.instructions()
                if ins.opcode in ("dot", "convolution")
            )
            # Named, and not in the backward (an op with no name at all is not known as either).
            self._found = frozenset(
                _signature(m, ins) for ins, stack in stacks if stack and _BACKWARD not in stack
            )
        return signature in self._found


#: The last name-stack parts of ops that only read a value as it is (the layer's slice of a
#: scanned stack of weights, gathered or reshaped), not compute one.
_READS = frozenset({"squeeze", "dynamic_slice", "dynamic_index_in_dim", "slice", "reshape",
                    "all_gather"})  # fmt: skip


def _read_as_in_forward(name: str) -> bool:
    """Whether an operand named ``name`` holds a forward value: made outside the backward
    pass, or there only read (a weight's slice); a gradient is computed in the backward."""
    return _BACKWARD not in name or name.rsplit("/", 1)[-1] in _READS


def _stack(module: HloModule, ins: HloInstruction, forward: _Forward) -> str:
    """The op's name stack; for one the compiler made without metadata (a dot rewritten into
    canonical form, XLA:CPU's library fusions, the TPU compiler's relaid-out convolutions),
    the remat mark its operands all carry, or one of them carries where the others hold
    forward values (the layer's weights) and a forward matmul computes the same shapes the
    same way (a recomputed projection; the backward's own matmuls take a gradient, and
    ``dW = x.T @ dy`` has no such twin), a window's edge mark one of them carries, or the
    op around it."""
    if ins.op_name:
        return ins.op_name
    names = operand_names(module, ins)
    if names and all(REMAT_MARK in n for n in names):
        return min(names)
    marked = [n for n in names if REMAT_MARK in n]
    forward_values = all(REMAT_MARK in n or _read_as_in_forward(n) for n in names)
    if marked and forward_values and _signature(module, ins) in forward:
        return min(marked)
    # A window's edge block reads its keys (or its queries, backward) under the mark, while
    # the other operand comes from outside the edge step.
    edge = [n for n in names if WINDOW_EDGE_MARK in n]
    if edge:
        return min(edge)
    return module.named(ins).op_name


def xla_remat_copies(module: HloModule) -> frozenset[str]:
    """The ops XLA's rematerialisation copied while the op they copy still runs: of the ops
    sharing a name up to the suffix (``fusion.7``, ``fusion.7.remat``, ``fusion.7.remat2``),
    all but one, the original where it is still there. A copy whose original is gone (all of
    its uses moved to the copy, as the pass does when it moves a value rather than keeping
    it) is the op itself, the model's work."""
    groups: dict[str, list[str]] = {}
    for ins in module.instructions():
        groups.setdefault(_XLA_REMAT_CLONE.sub("", ins.name), []).append(ins.name)
    copies: set[str] = set()
    for base, group in groups.items():
        kept = base if base in group else min(group)
        copies.update(n for n in group if n != kept)
    return frozenset(copies)


def cloned_by_xla_remat(module: HloModule, ins: HloInstruction, copies: frozenset[str]) -> bool:
    """Whether ``ins`` runs as part of one of ``copies`` (:func:`xla_remat_copies`): it, or
    the fusion or loop it sits in: hardware work the model does not have."""
    current, seen = ins, set()
    while True:
        if current.name in copies:
            return True
        if current.computation in seen:
            return False
        seen.add(current.computation)
        outer = module.callers().get(current.computation)
        if not outer:
            return False
        current = outer[0]


def matmul_flops(
    module: HloModule,
    runs: Mapping[str, int],
    lower_bound: bool = False,
    kernels: KernelTable | None = None,
    fill: float | None = None,
    moe: MoeDots | None = None,
) -> MatmulFlops:
    """Every matmul's flops times the runs of its computation (``runs`` from
    :func:`shardviz.capture.hlo.loops.computation_runs`); ``lower_bound`` when a loop's
    count is unknown; ``kernels``: the kernels' counts made at trace time; ``fill``: the
    share of an MoE layer's expert slots tokens fill (:func:`.routing.slot_fill`; ``None``:
    no padding counted); ``moe``: the MoE matmuls when already found."""
    total = recomputed = dispatch = padding = gap = 0.0
    moe = moe if moe is not None else moe_dots(module)
    forward = _Forward(module)
    copies = xla_remat_copies(module)
    for ins in module.instructions():
        if ins.opcode not in ("dot", "convolution", "custom-call"):
            continue
        kernel = count_of(module, ins, kernels) if ins.opcode == "custom-call" else None
        flops = kernel.flops if kernel is not None else instruction_flops(module, ins)
        if flops is None:
            continue
        n = runs.get(ins.computation, 1)
        total += flops * n
        # The op's own name stack, or the nearest one around it when the compiler dropped it.
        name = _stack(module, ins, forward)
        if DISPATCH_MARK in name or ins.name in moe.dispatch:
            dispatch += flops * n
        elif (REMAT_MARK in name and not (kernel is not None and kernel.backward)) or (
            copies and cloned_by_xla_remat(module, ins, copies)
        ):
            recomputed += flops * n
        elif kernel is not None and kernel.model_flops is not None:
            gap += (flops - kernel.model_flops) * n
        elif WINDOW_EDGE_MARK in name:
            gap += flops * n
        elif ins.name in moe.slots and fill is not None:
            padding += flops * n * (1.0 - fill)
        elif ins.name in moe.grouped:  # each row is useful in one group of them
            padding += flops * n * (1.0 - 1.0 / moe.grouped[ins.name])
    return MatmulFlops(total, recomputed, lower_bound, dispatch, gap, padding)
