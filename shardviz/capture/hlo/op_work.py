"""Each op of a compiled step as a predicted step time needs it: flops, HBM bytes, overlap.

A compiled module runs its entry computation and, from there, loop bodies, branches and
called computations, each a list of ops in the order the compiler scheduled them. For every
such op :func:`op_work` gives its matmul flops and the bytes it moves through the device's
main memory per run, how often it runs per step, and which async transfers (collectives,
prefetches, host offloads) are in flight while it runs: the ops between a transfer's start
and its done, which the hardware runs while the transfer goes on.

Bytes are counted as XLA's cost model counts a fusion, by the buffers it reads and writes,
with the refinements that matter at scale: a fusion that only slices an operand reads the
slice (a scanned layer's weights out of the stacked array), an in-place
``dynamic-update-slice`` writes only the update (a scan's stacked residuals), and buffers
the TPU compiler placed in on-chip VMEM (memory space 1) or in host memory (5) are not HBM
traffic; bytes moved to or from host memory are counted apart. Pure text in, numbers out.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping

from shardviz.capture.hlo.collectives import collective_parts, done_of, fused_parameters
from shardviz.capture.hlo.kernels import KernelTable
from shardviz.capture.hlo.matmuls import instruction_flops, instruction_precision
from shardviz.capture.hlo.text import (
    ArrayShape,
    HloComputation,
    HloInstruction,
    HloModule,
    array_leaves,
)
from shardviz.model import OpWork

__all__ = ["HBM", "HOST", "op_work", "schedule_computations"]

#: Memory spaces: the device's main memory, and host memory (TPU's pinned host).
HBM, HOST = 0, 5

#: shardviz's folders that trace and compile a program: their frames are not the program's
#: (the zoo's models in ``strategies/`` are, and stay in the chain).
_PACKAGE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_TRACING = tuple(os.path.join(_PACKAGE, part) + os.sep for part in ("explainer", "capture"))

#: Ops that move no data of their own: structure, the control ops whose computations are
#: read on their own, and the second halves of async pairs (counted at their start).
_FREE = frozenset(
    (
        "parameter", "constant", "get-tuple-element", "tuple", "bitcast", "while", "call",
        "conditional", "after-all", "opt-barrier", "partition-id", "replica-id",
        "add-dependency", "domain", "copy-done", "async-done", "async-update", "send-done",
        "recv-done", "all-gather-done", "all-reduce-done", "collective-permute-done",
        "reduce-scatter-done", "all-to-all-done",
    )
)  # fmt: skip
#: Ops that call computations run in the schedule as lists of ops of their own.
_CONTROL = frozenset(("while", "call", "conditional"))
#: Ops through which a fusion reads only part of an operand.
_SLICING = frozenset(("slice", "dynamic-slice", "gather"))
#: Async copies between memories: a copy, a generic async op (jax 0.12's TPU form of a slice
#: to or from host memory), and the TPU's own slice ops of jax 0.10 (GPU: a ``fusion-start``
#: wrapping the slice, see :meth:`_Reader.transfer`).
_TRANSFERS = frozenset(
    ("copy-start", "async-start", "dynamic-update-slice-start", "dynamic-slice-start")
)
#: The ``-done`` halves of those: the time is the start's.
_TRANSFER_DONES = frozenset(("dynamic-update-slice-done", "dynamic-slice-done"))
#: What a GPU ``fusion-start`` wraps when it moves a slice between memories.
_WRAPPED_SLICES = frozenset(("dynamic-update-slice", "dynamic-slice"))


def schedule_computations(module: HloModule) -> list[HloComputation]:
    """The computations the device runs as scheduled lists of ops: the entry, and the
    bodies, conditions, branches and called computations of its control ops, transitively
    (not fusions, reducers or async wrappers, whose ops run inside one op)."""
    out: list[HloComputation] = []
    todo = [module.entry.name]
    seen: set[str] = set()
    while todo:
        name = todo.pop(0)
        comp = module.computation(name)
        if name in seen or comp is None:
            continue
        seen.add(name)
        out.append(comp)
        for ins in comp.instructions:
            if ins.opcode in _CONTROL:
                todo.extend(ins.called_computations)
    return out


def _leaves(shape: object) -> tuple[ArrayShape, ...]:
    return array_leaves(shape) if shape is not None else ()  # type: ignore[arg-type]


def _bytes_in(leaves: tuple[ArrayShape, ...], space: int) -> int:
    return sum(a.nbytes for a in leaves if a.memory_space == space)


class _Reader:
    """Per-module memo of what each computation holds (flops, collective parts)."""

    def __init__(self, module: HloModule, kernels: KernelTable | None = None) -> None:
        self.module = module
        self.kernels = kernels
        parts = collective_parts(module)
        self.part_of = {n: ledger for ledger, names in parts.items() for n in names}
        self._flops: dict[str, dict[str, float]] = {}
        self._collectives: dict[str, frozenset[str]] = {}

    def flops(self, ins: HloInstruction) -> float:
        """Matmul flops of ``ins`` and of every computation it calls (not control ops)."""
        return sum(self.flops_by_precision(ins).values(), 0.0)

    def flops_by_precision(self, ins: HloInstruction) -> dict[str, float]:
        """:meth:`flops` by operand precision (``""``: bf16 and wider; ``"fp8"``, ``"int8"``:
        :func:`~shardviz.capture.hlo.matmuls.instruction_precision`)."""
        own = instruction_flops(self.module, ins, self.kernels) or 0.0
        out = {instruction_precision(self.module, ins): own} if own else {}
        if ins.opcode in _CONTROL:
            return out
        for c in ins.called_computations:
            for precision, flops in self._computation_flops(c).items():
                out[precision] = out.get(precision, 0.0) + flops
        return out

    def _computation_flops(self, name: str) -> dict[str, float]:
        if name not in self._flops:
            self._flops[name] = {}  # a cycle guard; HLO has none
            comp = self.module.computation(name)
            total: dict[str, float] = {}
            for i in comp.instructions if comp is not None else ():
                for precision, flops in self.flops_by_precision(i).items():
                    total[precision] = total.get(precision, 0.0) + flops
            self._flops[name] = total
        return self._flops[name]

    def transfer(self, ins: HloInstruction) -> bool:
        """Whether ``ins`` starts an async copy (its time overlaps the ops until its done)."""
        if ins.opcode in _TRANSFERS:
            return True
        if ins.opcode != "fusion-start" or not ins.called_computations:
            return False
        comp = self.module.computation(ins.called_computations[0])
        root = comp.root if comp is not None else None
        while root is not None and root.opcode in ("copy", "bitcast") and len(root.operands) == 1:
            root = self.module.instruction(root.operands[0])
        return root is not None and root.opcode in _WRAPPED_SLICES

    def transfer_done(self, ins: HloInstruction) -> bool:
        """Whether ``ins`` ends an async copy (its time is the start's)."""
        if ins.opcode in _TRANSFER_DONES:
            return True
        start = self.module.instruction(ins.operands[0]) if ins.operands else None
        return ins.opcode == "fusion-done" and start is not None and self.transfer(start)

    def collectives(self, ins: HloInstruction) -> frozenset[str]:
        """The ledger collectives ``ins`` is part of (itself, or inside what it calls)."""
        own = {self.part_of[ins.name]} if ins.name in self.part_of else set()
        if ins.opcode in _CONTROL:
            return frozenset(own)
        for c in ins.called_computations:
            own |= self._computation_collectives(c)
        return frozenset(own)

    def _computation_collectives(self, name: str) -> frozenset[str]:
        if name not in self._collectives:
            self._collectives[name] = frozenset()
            comp = self.module.computation(name)
            found: set[str] = set()
            for i in comp.instructions if comp is not None else ():
                found |= self.collectives(i)
            self._collectives[name] = frozenset(found)
        return self._collectives[name]

    def _fused_reads(
        self, ins: HloInstruction, operand_leaves: list[tuple[ArrayShape, ...]]
    ) -> list[tuple[ArrayShape, ...]]:
        """Per operand, the leaves a fusion really reads: a slice's result where the fused
        computation only slices that parameter, nothing where it only updates it in place."""
        called = ins.called_computations
        comp = self.module.computation(called[0]) if called else None
        if comp is None:
            return operand_leaves
        params = {_param_index(i): i for i in comp.instructions if i.opcode == "parameter"}
        out = list(operand_leaves)
        for index, param in params.items():
            if not 0 <= index < len(out):
                continue
            users = _through_bitcasts(self.module, param.name)
            if not users:
                continue
            if all(u.opcode in _SLICING and u.operands[:1] == (src,) for u, src in users):
                space = _space_of(out[index])
                out[index] = tuple(_in(a, space) for u, _ in users for a in _leaves(u.shape))
            elif all(
                u.opcode == "dynamic-update-slice" and u.operands[:1] == (src,) for u, src in users
            ):
                out[index] = ()
        return out

    def _in_place_writes(
        self, ins: HloInstruction, out_leaves: tuple[ArrayShape, ...]
    ) -> tuple[ArrayShape, ...]:
        """A fusion's written leaves: an in-place ``dynamic-update-slice`` root writes only
        its update."""
        called = ins.called_computations
        comp = self.module.computation(called[0]) if called else None
        root = comp.root if comp is not None else None
        if root is None or len(out_leaves) == 0:
            return out_leaves
        roots = (
            [self.module.instruction(n) for n in root.operands]
            if root.opcode == "tuple"
            else [root]
        )
        if len(roots) != len(out_leaves):
            return out_leaves
        written: list[ArrayShape] = []
        for leaf, r in zip(out_leaves, roots, strict=True):
            if r is not None and r.opcode == "dynamic-update-slice" and len(r.operands) > 1:
                update = _leaves(self.module.shape_of(r.operands[1]))
                written.extend(_in(a, leaf.memory_space) for a in update)
            else:
                written.append(leaf)
        return tuple(written)

    def traffic(self, ins: HloInstruction) -> tuple[int, int]:
        """(HBM bytes, host bytes) ``ins`` reads and writes per run."""
        operands = [_leaves(s) for s in self.module.operand_shapes(ins)]
        out = _leaves(ins.shape)
        if ins.opcode == "fusion":
            operands = self._fused_reads(ins, operands)
            out = self._in_place_writes(ins, out)
        elif ins.opcode == "copy-start":
            out = _leaves(ins.shape[0]) if isinstance(ins.shape, tuple) and ins.shape else out
        elif ins.opcode in ("async-start", "fusion-start"):
            # What the wrapped op reads (a slice, not the whole buffer it is cut from) and
            # writes (an update written in place, into the buffer's memory).
            operands = self._fused_reads(ins, operands)
            out = self._in_place_writes(ins, _async_result(ins, out))
        elif (
            ins.opcode in ("dynamic-update-slice", "dynamic-update-slice-start")
            and len(operands) > 1
        ):
            # In place: the update is read and written into the buffer's memory.
            space = _space_of(operands[0])
            operands, out = operands[1:2], tuple(_in(a, space) for a in operands[1])
        elif ins.opcode == "dynamic-slice-start" and operands:
            # The slice is read from the buffer's memory and written where the result lives.
            out = _async_result(ins, out)
            space = _space_of(operands[0])
            operands = [tuple(_in(a, space) for a in out)]
        leaves = [a for group in operands for a in group] + list(out)
        return _bytes_in(tuple(leaves), HBM), _bytes_in(tuple(leaves), HOST)


def _allocation(ins: HloInstruction) -> bool:
    """An ``AllocateBuffer`` custom call: it reserves a buffer (for an offload) and moves
    nothing."""
    target = ins.attrs.get("custom_call_target", "").strip('"')
    return ins.opcode == "custom-call" and target == "AllocateBuffer"


def _in(a: ArrayShape, space: int) -> ArrayShape:
    """``a`` placed in memory ``space``."""
    return ArrayShape(a.type, a.dims, space)


def _space_of(leaves: tuple[ArrayShape, ...]) -> int:
    """The memory one array lives in (HBM for a tuple of several)."""
    return leaves[0].memory_space if len(leaves) == 1 else HBM


def _async_result(ins: HloInstruction, default: tuple[ArrayShape, ...]) -> tuple[ArrayShape, ...]:
    """An async start's result: the second element of its ``(operands, result, context)``
    tuple (``default`` for any other shape)."""
    shape = ins.shape
    return _leaves(shape[1]) if isinstance(shape, tuple) and len(shape) > 1 else default


def _through_bitcasts(module: HloModule, name: str) -> list[tuple[HloInstruction, str]]:
    """The users of ``name`` inside a fused computation, looking through what moves no data
    of its own: bitcasts, a nested fusion that only relayouts its one operand in place (the
    TPU compiler's ``copy_fusion``, between tilings), and into any other nested fusion, to
    the users of its parameter. Each as (user, the operand it reads)."""
    out: list[tuple[HloInstruction, str]] = []
    todo = [name]
    while todo:
        current = todo.pop()
        for u in module.users(current):
            if u.opcode == "bitcast" or _relayout(module, u):
                todo.append(u.name)
            elif inner := fused_parameters(module, u, current):  # a nested fusion
                todo.extend(p.name for p in inner)
            else:
                out.append((u, current))
    return out


def _relayout(module: HloModule, ins: HloInstruction) -> bool:
    """A nested fusion whose computation copies its one parameter into another layout."""
    if ins.opcode != "fusion" or len(ins.operands) != 1 or not ins.called_computations:
        return False
    comp = module.computation(ins.called_computations[0])
    root = comp.root if comp is not None else None
    if root is None or root.opcode not in ("copy", "bitcast") or len(root.operands) != 1:
        return False
    source = module.instruction(root.operands[0])
    return source is not None and source.opcode == "parameter"


def _param_index(param: HloInstruction) -> int:
    """A ``parameter(k)`` instruction's ``k`` (-1 if unreadable)."""
    text = param.operand_text.strip()
    return int(text) if text.isdigit() else -1


def _fused_named(module: HloModule, ins: HloInstruction) -> HloInstruction | None:
    """For a fusion (or async wrapper) with no ``op_name`` of its own, the op inside it that
    has one, its root first: the CPU compiler leaves a loop body's fusions unnamed while the
    ops it fused keep theirs. ``None`` for a control op or when none inside has one."""
    if ins.op_name or ins.opcode in _CONTROL:
        return None
    for name in ins.called_computations:
        comp = module.computation(name)
        if comp is None:
            continue
        root = comp.root
        inside = ([root] if root is not None else []) + comp.instructions
        found = next((i for i in inside if i.op_name), None)
        if found is not None:
            return found
    return None


def _what(module: HloModule, ins: HloInstruction) -> tuple[str, str, str, str, str]:
    """``ins``'s opcode, ``op_name``, computation, Python function chain and what it feeds
    (see :class:`~shardviz.model.OpWork`), the metadata read from the nearest op that has it;
    the chain starts below the frames of shardviz tracing it (``explain``, the compile). An
    op named by its loop alone takes its chain from the op it feeds (:func:`_fed`)."""
    own = ins if ins.op_name else _fused_named(module, ins)
    named = own or module.named(ins)
    fed = _fed(module, ins) if not _says_what(own) else None
    source = module.source_of(fed or named)
    frames = source.frames if source is not None else ()
    ours = [k for k, f in enumerate(frames) if f.file.startswith(_TRACING)]
    users = frames[ours[-1] + 1 :] if ours else frames
    return (ins.opcode, named.op_name, ins.computation,
            " > ".join(f.function for f in users), fed.op_name if fed else "")  # fmt: skip


def _says_what(ins: HloInstruction | None) -> bool:
    """Whether ``ins`` has an ``op_name`` that says what it computes: not none, nor only its
    loop's (``jit(step)/jvp()/while``, which the compiler gives the casts and copies it makes
    of a scanned body's operands)."""
    return ins is not None and bool(ins.op_name) and not ins.op_name.endswith("/while")


def _fed(module: HloModule, ins: HloInstruction, depth: int = 3) -> HloInstruction | None:
    """The nearest op ``ins``'s result feeds whose name says what it computes
    (:func:`_says_what`; the op or one inside its fusion), within ``depth`` steps: what an
    op the compiler named by its loop alone (a cast or copy of a scanned layer's weights) is
    for."""
    frontier, seen = [ins], {ins.name}
    for _ in range(depth):
        following = []
        for op in frontier:
            for user in module.users(op.name):
                if user.name in seen or user.computation != ins.computation:
                    continue
                seen.add(user.name)
                named = user if user.op_name else _fused_named(module, user)
                if _says_what(named):
                    return named
                following.append(user)
        frontier = following
    return None


def op_work(
    module: HloModule, runs: Mapping[str, int], kernels: KernelTable | None = None
) -> tuple[OpWork, ...]:
    """Every op the device runs per step (``runs``: each computation's runs per step, from
    :func:`shardviz.capture.hlo.loops.computation_runs`; ``kernels``: the kernels' counts
    made at trace time, see :mod:`.kernels`), in schedule order, with the
    transfers in flight around it. Collectives are not listed (their time is the ledger's);
    an op holding both a collective and matmuls (a TPU collective matmul) is listed for its
    matmuls."""
    reader = _Reader(module, kernels)
    out: list[OpWork] = []
    for comp in schedule_computations(module):
        n = runs.get(comp.name, 1)
        position = {ins.name: k for k, ins in enumerate(comp.instructions)}
        windows: dict[str, list[int]] = {}  # transfer -> [first, last] positions
        rows: list[tuple[int, OpWork]] = []
        for k, ins in enumerate(comp.instructions):
            parts = reader.collectives(ins)
            for name in parts:
                span = windows.setdefault(name, [k, k])
                span[1] = k
            if ins.opcode in _FREE or reader.transfer_done(ins) or _allocation(ins):
                continue
            by_precision = reader.flops_by_precision(ins)
            flops = sum(by_precision.values(), 0.0)  # a float, also with no matmul
            if parts and not flops:
                continue  # a collective's own op: the ledger times it
            hbm, host = reader.traffic(ins)
            transfer = reader.transfer(ins)
            if transfer:
                done = done_of(module, ins)
                end = position.get(done.name) if done is not None else None
                windows[ins.name] = [k, len(comp.instructions) if end is None else end]
            narrow = tuple(sorted((p, f) for p, f in by_precision.items() if p and f))
            rows.append((k, OpWork(ins.name, flops, float(hbm), n, transfer, (), float(host),
                                   *_what(module, ins), narrow_flops=narrow)))  # fmt: skip
        for k, op in rows:
            flying = tuple(
                name for name, (lo, hi) in windows.items() if lo < k < hi and name != op.name
            )
            out.append(dataclasses.replace(op, in_flight=flying))
    return tuple(out)
