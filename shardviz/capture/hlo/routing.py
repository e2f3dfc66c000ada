"""An MoE layer's routing, recognised from the program: which matmuls only move tokens.

The field's model flops (MFU's numerator) count ``6 x active parameters x tokens`` plus
attention; an MoE layer's dispatch and combine (einsums against one-hot tensors, GShard's
``[tokens, experts, capacity]`` masks) and the slots its experts compute beyond the tokens
routed to them (capacity padding) are work the hardware does, not the model's. Here:

- a *routing tensor* is made from a one-hot: ``compare(EQ)`` of an ``iota`` against an index
  (``jax.nn.one_hot``), then carried through converts, layout ops, collectives, products
  and sums of routing tensors, a mask times anything (the combine's gates);
- a *dispatch* matmul has a routing operand, or its result only feeds matmuls and products
  against routing tensors (the gradient of the combine's gates);
- a *slot* matmul reads tensors in expert-slot space (the result of a dispatch that
  contracts tokens, and what elementwise ops and other matmuls make of it);
- the slots' fill, ``top_k x tokens / (experts x capacity)``, is read from the program before
  partitioning (global shapes) and the ``top_k`` of its router;
- a *grouped* matmul is a dense form of a grouped matmul (``jax.lax.ragged_dot``, a dropless
  MoE's experts, as the CPU compiler and the TPU compiler's weight gradient write it): one
  operand is its rows copied once per group and masked to the group's range of rows
  (``select`` on ``iota >= start and iota < end``, the bounds broadcast along the group
  dim), so each row does useful work in one group of ``g``: a share ``1/g`` is the model's.

Pure text in, names out; no jax. A dot the walk cannot follow (through a loop's carry) is
taken for model work: the old count, never less.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from shardviz.capture.hlo.text import (
    HloComputation,
    HloInstruction,
    HloModule,
    array_leaves,
    parse_int_list,
)

__all__ = ["MoeDots", "moe_dots", "operand_names", "slot_fill"]

#: Compare directions of a range test (``start <= iota``, ``iota < end``).
_RANGE = re.compile(r"direction=(LE|LT|GE|GT)\b")
_BROADCAST_DIMS = re.compile(r"dimensions=\{([\d,]*)\}")
#: Ops that carry a tensor's values to another place or layout unchanged.
_MOVES = frozenset(
    [
        "convert",
        "bitcast",
        "reshape",
        "transpose",
        "broadcast",
        "copy",
        "slice",
        "dynamic-slice",
        "pad",
        "concatenate",
        "all-to-all",
        "all-gather",
        "collective-permute",
        "copy-start",
        "copy-done",
        "all-gather-start",
        "all-gather-done",
        "collective-permute-start",
        "collective-permute-done",
        "get-tuple-element",
        "reverse",
    ]
)
#: Elementwise ops a one-hot mask stays a mask through, scaled by a broadcast (the gates).
_MASKING = frozenset({"multiply", "and", "select"})
_MATMULS = frozenset({"dot", "convolution"})
_DEPTH = 48
#: Ops slot space does not pass: reductions and the loop and call boundaries.
_STOPS = frozenset(
    ["reduce", "reduce-window", "while", "call", "conditional", "tuple", "constant", "iota"]
)
_PARAM_RE = re.compile(r"parameter\((\d+)\)")


def _param_index(ins: HloInstruction) -> int | None:
    m = _PARAM_RE.search(ins.body)
    return int(m.group(1)) if m else None


def _dims(ins: HloInstruction) -> tuple[int, ...]:
    leaves = array_leaves(ins.shape)
    return tuple(sorted(leaves[0].dims)) if len(leaves) == 1 else ()


@dataclass
class _Walk:
    """Producers and users across fusion boundaries, with memoised facts per instruction."""

    module: HloModule
    _routing: dict[str, bool] = field(default_factory=dict)
    _slots: dict[str, bool] = field(default_factory=dict)
    _computations: dict[str, HloComputation] = field(default_factory=dict)
    _shapes: set[tuple[int, ...]] | None = None

    def producers(self, ins: HloInstruction) -> Iterator[HloInstruction]:
        """The instructions ``ins`` reads: its operands; a fused parameter's fusion operand."""
        if ins.opcode == "parameter":
            caller = self.module.callers().get(ins.computation)
            i = _param_index(ins)
            if caller and caller[0].opcode == "fusion" and i is not None:
                ops = caller[0].operands
                found = self._operand(ops[i]) if i < len(ops) else None
                if found is not None:
                    yield found
            return
        if ins.opcode == "get-tuple-element":
            found = self._carried(ins)
            if found is not None:
                yield found
                return
        if ins.opcode == "fusion":
            comp = self.computation(ins.called_computations[0])
            if comp is not None and comp.root is not None:
                yield comp.root
            return
        for name in ins.operands:
            found = self._operand(name)
            if found is not None:
                yield found

    def _operand(self, name: str) -> HloInstruction | None:
        """The instruction an operand names. ``x#i`` is element ``i`` of the tuple ``x`` (a
        loop body's parameter, a loop's or a multi-output fusion's result), as newer XLA
        writes it without a ``get-tuple-element``; ``x`` itself when that cannot be told."""
        base, _, index = name.partition("#")
        found = self.module.instruction(base)
        if found is None or not index.isdigit():
            return found
        return self._element(found, int(index)) or found

    def _carried(self, ins: HloInstruction) -> HloInstruction | None:
        """What a ``get-tuple-element`` holds: an element of a tuple (a multi-output fusion's
        too); of a loop's result, what
        its body returns (a forward pass's saved residuals); of a loop body's parameter, the
        loop's initial value (a value the compiler hoisted out of the loop, an ``iota``)."""
        source = self.module.instruction(ins.operands[0]) if ins.operands else None
        m = re.search(r"index=(\d+)", ins.body)
        if source is None or m is None:
            return None
        return self._element(source, int(m.group(1)))

    def _element(self, source: HloInstruction, i: int) -> HloInstruction | None:
        """Element ``i`` of tuple-valued ``source``: a tuple's operand; of a loop's result,
        what its body returns; of a multi-output fusion's, its root's; of a loop body's
        parameter, the loop's initial value."""
        tup: HloInstruction | None = source
        if source.opcode == "while" and "body=" in source.body:
            body = self.computation(re.findall(r"body=%?([\w.\-]+)", source.body)[0])
            tup = body.root if body is not None else None
        elif source.opcode == "fusion" and source.called_computations:
            fused = self.computation(source.called_computations[0])  # a multi-output fusion
            tup = fused.root if fused is not None else None
        elif source.opcode == "parameter":
            loops = self.module.callers().get(source.computation, ())
            if not loops or loops[0].opcode != "while" or not loops[0].operands:
                return None
            tup = self.module.instruction(loops[0].operands[0].split("#")[0])
        if tup is None or tup.opcode != "tuple" or i >= len(tup.operands):
            return None
        return self._operand(tup.operands[i])

    def consumers(self, ins: HloInstruction) -> Iterator[tuple[HloInstruction, int]]:
        """(user, operand index) of ``ins``'s result; into fusions at their parameter."""
        if ins.is_root:
            for caller in self.module.callers().get(ins.computation, ()):
                if caller.opcode == "fusion":
                    yield from self.consumers(caller)
        for user in self.module.users(ins.name):
            for i, name in enumerate(user.operands):
                if name.split("#")[0] != ins.name:
                    continue
                if user.opcode == "fusion":
                    comp = self.computation(user.called_computations[0])
                    for p in comp.instructions if comp else ():
                        if p.opcode == "parameter" and _param_index(p) == i:
                            yield from self.consumers(p)
                else:
                    yield user, i

    def _iota(self, ins: HloInstruction, depth: int = 0) -> bool:
        if ins.opcode == "iota":
            return True
        if depth > 8 or ins.opcode not in _MOVES | {"fusion", "parameter", "add", "constant"}:
            return False
        return any(self._iota(p, depth + 1) for p in self.producers(ins))

    def routing(self, ins: HloInstruction, depth: int = 0) -> bool:
        """Whether ``ins`` is a routing tensor (a one-hot, or made of one)."""
        if ins.name in self._routing:
            return self._routing[ins.name]
        if depth > _DEPTH:
            return False
        self._routing[ins.name] = False  # a cycle (none in HLO, but cheap to rule out)
        ins_from = list(self.producers(ins))
        op = ins.opcode
        if op == "compare":
            sides = [self._iota(p) for p in ins_from]
            found = "direction=EQ" in ins.body and len(sides) == 2 and sides[0] != sides[1]
        elif op == "dynamic-update-slice":  # a stack of saved values: what is written in
            found = len(ins_from) > 1 and self.routing(ins_from[1], depth + 1)
        elif op in _MOVES or op in ("fusion", "parameter", "reduce"):
            found = any(self.routing(p, depth + 1) for p in ins_from[:1] or ins_from)
        elif op in _MASKING:  # a mask scaled by a broadcast (gates), not data selected
            marks = [self.routing(p, depth + 1) for p in ins_from]
            found = any(marks) and all(
                m or p.opcode in ("broadcast", "constant")
                for m, p in zip(marks, ins_from, strict=True)
            )
        elif op in ("add", "subtract", "maximum") or op in _MATMULS:
            named = [p for p in ins_from if p.opcode not in ("constant", "broadcast")]
            found = bool(named) and all(self.routing(p, depth + 1) for p in named)
        else:
            found = False
        self._routing[ins.name] = found
        return found

    def _bound(self, ins: HloInstruction) -> int | None:
        """The dim a range test's bound is broadcast along (one dim, from a non-constant
        vector: the groups' starts or ends), else ``None``."""
        while ins.opcode in ("fusion", "parameter", "bitcast", "convert", "copy"):
            found = list(self.producers(ins))
            if len(found) != 1:
                return None
            ins = found[0]
        m = _BROADCAST_DIMS.search(ins.body)
        if ins.opcode != "broadcast" or m is None or "," in m.group(1) or not m.group(1):
            return None
        (source,) = list(self.producers(ins))[:1] or [ins]
        return None if source.opcode == "constant" else int(m.group(1))

    def group_mask(self, ins: HloInstruction, depth: int = 0) -> int | None:
        """``g`` when ``ins`` is a mask of row ranges, one per group: ``and`` of two range
        tests of an ``iota`` against bounds broadcast along the group dim (size ``g``),
        carried through moves and broadcasts; else ``None``."""
        if depth > 12:
            return None
        if ins.opcode in _MOVES or ins.opcode in ("fusion", "parameter"):
            for p in list(self.producers(ins))[:1]:
                return self.group_mask(p, depth + 1)
            return None
        if ins.opcode != "and":
            return None
        groups = set()
        for test in self.producers(ins):
            sides = list(self.producers(test))
            if test.opcode != "compare" or not _RANGE.search(test.body) or len(sides) != 2:
                return None
            iotas = [self._iota(p) for p in sides]
            if iotas.count(True) != 1:
                return None
            dim = self._bound(sides[iotas.index(False)])
            leaves = array_leaves(test.shape)
            if dim is None or not leaves or dim >= len(leaves[0].dims):
                return None
            groups.add(leaves[0].dims[dim])
        return groups.pop() if len(groups) == 1 and min(groups) > 1 else None

    def grouped(self, ins: HloInstruction, depth: int = 0) -> int | None:
        """``g`` when ``ins`` holds rows copied once per group and masked to each group's
        rows (a ``select`` on a :meth:`group_mask`, through moves); else ``None``."""
        if depth > 16:
            return None
        found = list(self.producers(ins))
        if ins.opcode == "select" and found:
            return self.group_mask(found[0])
        if ins.opcode in _MOVES or ins.opcode in ("fusion", "parameter"):
            for p in found[:1]:
                return self.grouped(p, depth + 1)
        return None

    def routing_operand(self, ins: HloInstruction) -> int | None:
        """Which operand of a matmul is a routing tensor (``None``: neither)."""
        for i, p in enumerate(self.producers(ins)):
            if self.routing(p):
                return i
        return None

    def feeds_routing_only(self, ins: HloInstruction) -> bool:
        """Whether ``ins``'s result is shaped like a routing tensor a matmul reads and every
        use of it is a matmul or product against a routing tensor (through moves): the
        gradient of a combine's gates. (An expert's output feeds only the combine, too.)"""
        if _dims(ins) not in self.routing_shapes():
            return False
        ops = _MASKING | _MATMULS
        seen = 0
        stack = [ins]
        while stack:
            current = stack.pop()
            for user, i in self.consumers(current):
                seen += 1
                if seen > 64:
                    return False
                if user.opcode in _MOVES:
                    stack.append(user)
                    continue
                others = [p for j, p in enumerate(self.producers(user)) if j != i]
                if not (user.opcode in ops and any(map(self.routing, others))):
                    return False
        return seen > 0

    def routing_shapes(self) -> set[tuple[int, ...]]:
        """The shapes (dims sorted) of the routing tensors matmuls read."""
        if self._shapes is None:
            self._shapes = set()
            for ins in self.module.instructions():
                r = self.routing_operand(ins) if ins.opcode in _MATMULS else None
                if r is not None:
                    self._shapes.add(_dims(list(self.producers(ins))[r]))
        return self._shapes

    def dispatch(self, ins: HloInstruction) -> bool:
        """A matmul that only moves tokens."""
        return self.routing_operand(ins) is not None or self.feeds_routing_only(ins)

    def slots(self, ins: HloInstruction) -> bool:
        """Whether ``ins``'s result lies in expert-slot space: what a dispatch out of token
        space makes, and every op after it up to the combine (a routing tensor, a reduction
        and a matmul that only moves tokens leave it).

        Worked out producers first with a stack of its own, not by recursion: a block of
        unrolled MoE layers (Llama 4's) puts hundreds of ops between a layer's experts and
        the residual stream they came from, and a depth limit there took an expert's output
        for token space, its combine for a dispatch, and the residual stream for slots."""
        if ins.name in self._slots:
            return self._slots[ins.name]
        pending = [(ins, False)]
        open_: set[str] = set()
        while pending:
            node, ready = pending.pop()
            if node.name in self._slots:
                continue
            if not ready:
                if self._leaves_slots(node):
                    self._slots[node.name] = False
                    continue
                open_.add(node.name)
                pending.append((node, True))
                pending += [(p, False) for p in self.producers(node)
                            if p.name not in self._slots and p.name not in open_]  # fmt: skip
                continue
            self._slots[node.name] = self._lands_in_slots(node)
            open_.discard(node.name)
        return self._slots[ins.name]

    def _leaves_slots(self, ins: HloInstruction) -> bool:
        """Ops slot space does not pass: reductions, loop and call boundaries, routing
        tensors, a loop's carried values (a multi-output fusion's elements pass)."""
        if ins.opcode in _STOPS or self.routing(ins):
            return True
        return ins.opcode == "get-tuple-element" and not self._fused_element(ins)

    def _lands_in_slots(self, ins: HloInstruction) -> bool:
        """:meth:`slots` of ``ins`` once its producers' are known (one still open: a loop's
        back edge, taken for token space)."""
        ins_from = list(self.producers(ins))
        r = self.routing_operand(ins) if ins.opcode in _MATMULS else None
        if r is not None:
            # A dispatch from token space lands in slots; a combine from slots leaves them.
            return not any(self._slots.get(p.name, False) for j, p in enumerate(ins_from)
                           if j != r)  # fmt: skip
        if ins.opcode in _MATMULS and self.feeds_routing_only(ins):
            return False
        return any(self._slots.get(p.name, False) for p in ins_from)

    def _fused_element(self, ins: HloInstruction) -> bool:
        """Whether a ``get-tuple-element`` reads a multi-output fusion's element (the TPU
        compiler computes a dispatch beside the stack of saved values it writes), not a
        loop's carry, which saved values cross to reach the backward pass."""
        source = self.module.instruction(ins.operands[0]) if ins.operands else None
        return source is not None and source.opcode == "fusion"

    def computation(self, name: str) -> HloComputation | None:
        """The computation called ``name`` (a table: the module's own lookup is a scan)."""
        if not self._computations:
            self._computations.update((c.name, c) for c in self.module.computations)
        return self._computations.get(name.lstrip("%"))


def operand_names(module: HloModule, ins: HloInstruction) -> set[str]:
    """The nearest ``op_name`` on every path up ``ins``'s producers (through fusions and
    layout ops the compiler made without metadata), a few steps deep."""
    walk, names, seen = _Walk(module), set(), set()
    frontier = list(walk.producers(ins))
    for _ in range(8):
        later: list[HloInstruction] = []
        for current in frontier:
            if current.name in seen:
                continue
            seen.add(current.name)
            if current.op_name:
                names.add(current.op_name)
            else:
                later.extend(walk.producers(current))
        frontier = later
    return names


@dataclass(frozen=True)
class MoeDots:
    """The MoE matmuls of a module, by name: ``dispatch`` only move tokens (dispatch,
    combine, their gradients), ``slots`` compute on expert slots (capacity padding in them)."""

    dispatch: frozenset[str] = frozenset()
    slots: frozenset[str] = frozenset()
    #: Dense forms of grouped matmuls: name -> groups (each row useful in one of them).
    grouped: dict[str, int] = field(default_factory=dict)


def moe_dots(module: HloModule) -> MoeDots:
    """Recognise the dispatch, slot and grouped matmuls of ``module`` (empty for a dense
    program)."""
    if not any(i.opcode == "iota" for i in module.instructions()):
        return MoeDots()
    walk = _Walk(module)
    dispatch, slots, grouped = set(), set(), {}
    for ins in module.instructions():
        if ins.opcode not in _MATMULS:
            continue
        groups = [g for g in map(walk.grouped, walk.producers(ins)) if g]
        if groups:
            grouped[ins.name] = max(groups)
        elif walk.dispatch(ins):
            dispatch.add(ins.name)
        elif any(walk.slots(p) for p in walk.producers(ins)):
            slots.add(ins.name)
    return MoeDots(frozenset(dispatch), frozenset(slots), grouped)


def _argmax(ins: HloInstruction) -> bool:
    """A variadic ``reduce`` giving values and their indices: ``jnp.argmax``'s lowering."""
    leaves = array_leaves(ins.shape)
    return ins.opcode == "reduce" and len(leaves) == 2 and leaves[1].type.startswith("s")


def _top_k(walk: _Walk, ins: HloInstruction, seen: set[str]) -> int | None:
    """Experts per token behind the routing tensor ``ins``: the ``k`` of the router's top-k,
    else the number of argmaxes it is made from (GShard's rounds); ``None``: neither found.
    The walk stops at them and at matmuls (the router's logits, earlier layers)."""
    stack, argmaxes = [ins], set()
    while stack and len(seen) < 2000:
        current = stack.pop()
        if current.name in seen:
            continue
        seen.add(current.name)
        if current.opcode == "topk" or "top_k" in current.op_name.rsplit("/", 1)[-1].lower():
            leaves = array_leaves(current.shape)
            if leaves and leaves[-1].dims:
                return leaves[-1].dims[-1]
        if _argmax(current):
            argmaxes.add(current.name)
        elif current.opcode not in _MATMULS or walk.routing(current):
            stack.extend(walk.producers(current))
    return len(argmaxes) or None


def _dispatches(walk: _Walk) -> Iterator[HloInstruction]:
    """The dispatches that feed expert matmuls: the nearest matmul with a routing operand
    up the producers of each matmul that reads slots."""
    seen: set[str] = set()
    for ins in walk.module.instructions():
        if ins.opcode != "dot" or walk.routing_operand(ins) is not None:
            continue
        stack = [p for p in walk.producers(ins) if walk.slots(p)]
        while stack:
            current = stack.pop()
            if current.name in seen:
                continue
            seen.add(current.name)
            if current.opcode in _MATMULS and walk.routing_operand(current) is not None:
                yield current
            elif current.opcode not in _MATMULS:
                stack.extend(p for p in walk.producers(current) if walk.slots(p))


def slot_fill(module: HloModule) -> float | None:
    """Tokens' share of the expert slots, ``top_k x tokens / (experts x capacity)``, read on
    the unpartitioned program (global shapes) from each dispatch into expert matmuls and the
    router's ``top_k``; ``None`` when there is none, no ``top_k``, or dispatches disagree."""
    if not any(i.opcode == "iota" for i in module.instructions()):
        return None
    walk = _Walk(module)
    fills = set()
    for ins in _dispatches(walk):
        r = walk.routing_operand(ins)
        if r is None or not walk.slots(ins):  # a combine, or a dispatch's transpose: to tokens
            continue
        k = _top_k(walk, list(walk.producers(ins))[r], set())
        leaves = array_leaves(module.shape_of(ins.operands[r]) or ())
        if k is None or not leaves:
            continue
        side = "lhs" if r == 0 else "rhs"
        contracted = parse_int_list(ins.attrs.get(f"{side}_contracting_dims", "{}").strip("{}"))
        batch = parse_int_list(ins.attrs.get(f"{side}_batch_dims", "{}").strip("{}"))
        dims = leaves[0].dims
        tokens = math.prod(dims[d] for d in contracted if d < len(dims))
        free = math.prod(n for d, n in enumerate(dims) if d not in contracted and d not in batch)
        if free:
            fills.add(round(min(1.0, k * tokens / free), 9))
    return fills.pop() if len(fills) == 1 else None
