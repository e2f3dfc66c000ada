"""Loops in a compiled HLO module: how many times each ``while`` body runs per step.

XLA's own cost analysis counts a ``while`` body once, whatever its trip count, so every
figure built on it is low by the trip count on a scanned model (measured: an 8-layer MLP
training step, scanned vs unrolled, 25.4 M vs 198.7 M flops per device on CPU, TPU and
GPU). This module reads the loops from the text, pure parsing, no jax:

- :func:`loops_of`: each ``while`` with its trips (from ``known_trip_count``, which the CPU
  and GPU compilers write, else read from the loop's own counter, as the TPU compiler leaves
  it: ``i = a; while (i < n) { ...; i = i + s }``, through copies and across a loop-invariant
  bound), the loop around it, and how many times its body runs per step;
- :func:`computation_runs`: how many times each computation runs per step;
- :func:`loop_body_module`: the text of a module whose entry is one loop body, so the
  compiler's own cost model can count it once more per trip (see
  :func:`shardviz.capture.step_cost.per_step`).

A loop whose count cannot be read (a data-dependent ``while_loop``) has ``trips=None``;
everything inside it then runs an unknown number of times, and per-step figures count it
once and say they are lower bounds.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping

from shardviz.capture.hlo.text import (
    HloComputation,
    HloInstruction,
    HloModule,
    parse_hlo_module,
    tuple_element,
)
from shardviz.model import Loop

__all__ = [
    "computation_runs",
    "loop_body_module",
    "loops_of",
    "trip_count",
]

#: Ops that pass a scalar through unchanged, followed when reading a loop's counter.
_PASS_THROUGH = ("copy", "bitcast", "convert", "reshape", "copy-start", "copy-done")

_KNOWN_TRIPS_RE = re.compile(r'"known_trip_count"\s*:\s*\{\s*"n"\s*:\s*"?(\d+)')


def _source(module: HloModule, name: str) -> tuple[HloInstruction | None, str]:
    """The instruction ``name`` names, past ops that pass a scalar through unchanged, and
    the name it was reached by (a ``param#k`` tuple element names no instruction)."""
    ins = module.instruction(name)
    seen = 0
    while ins is not None and ins.opcode in _PASS_THROUGH and len(ins.operands) == 1:
        name = ins.operands[0]
        ins = module.instruction(name)
        seen += 1
        if seen > 16:
            return None, ""
    return ins, name


def _through(module: HloModule, name: str) -> HloInstruction | None:
    """The instruction ``name`` names, past ops that pass a scalar through unchanged."""
    return _source(module, name)[0]


def _constant(module: HloModule, name: str) -> int | None:
    """The integer value of scalar constant ``name`` (through copies), else ``None``."""
    ins = _through(module, name)
    if ins is None or ins.opcode != "constant":
        return None
    try:
        return int(ins.operand_text.strip())
    except ValueError:
        return None


def _element(module: HloModule, name: str, param: str) -> int | None:
    """``k`` when ``name`` is tuple element ``k`` of parameter ``param`` (through copies),
    read by a ``get-tuple-element`` or written ``param#k`` (as the XLA of jax 0.12 prints
    its dumps)."""
    ins, reached = _source(module, name)
    if ins is None:
        element = tuple_element(reached.lstrip("%"))
        src = _through(module, element[0]) if element is not None else None
        return element[1] if element is not None and src is not None and src.name == param else None
    if ins.opcode != "get-tuple-element":
        return None
    src = _through(module, ins.operands[0]) if ins.operands else None
    if src is None or src.name != param:
        return None
    return int(ins.attrs.get("index", "-1"))


def _param(comp: HloComputation) -> str | None:
    params = [i.name for i in comp.instructions if i.opcode == "parameter"]
    return params[0] if len(params) == 1 else None


def _value(
    module: HloModule, loop: HloInstruction, body: HloComputation, name: str, param: str
) -> int | None:
    """The constant ``name`` (in the condition) stands for: a constant, or a tuple element
    the body passes through unchanged and the loop starts at a constant."""
    n = _constant(module, name)
    if n is not None:
        return n
    k = _element(module, name, param)
    init = module.instruction(loop.operands[0]) if len(loop.operands) == 1 else None
    body_param, step = _param(body), body.root
    if k is None or init is None or init.opcode != "tuple" or body_param is None or step is None:
        return None
    if step.opcode != "tuple" or k >= len(step.operands) or k >= len(init.operands):
        return None
    if _element(module, step.operands[k], body_param) != k:  # the body changes it
        return None
    return _constant(module, init.operands[k])


def _counted_loop(loop: HloInstruction, module: HloModule) -> int | None:
    """Trips of ``for (i = a; i < n; i += s)`` written as a ``while``, ``None`` for any
    other loop. ``i`` is a tuple element of the loop's state; ``a``, ``n`` and ``s`` are
    constants (``n`` may be a state element the body leaves as it is); the comparison may be
    ``i < n``, ``i <= n``, ``n > i``, ``n >= i`` or ``i != n``."""
    cond = module.computation(loop.attrs.get("condition", ""))
    body = module.computation(loop.attrs.get("body", ""))
    init = module.instruction(loop.operands[0]) if len(loop.operands) == 1 else None
    if cond is None or body is None or init is None or init.opcode != "tuple":
        return None
    test, step = cond.root, body.root
    cond_param, body_param = _param(cond), _param(body)
    if test is None or step is None or cond_param is None or body_param is None:
        return None
    test = _through(module, test.name)
    if test is None or test.opcode != "compare" or len(test.operands) != 2:
        return None
    m = re.search(r"direction=(\w+)", test.attr_text)
    direction = m.group(1) if m else ""
    lhs, rhs = test.operands
    k = _element(module, lhs, cond_param)
    bound_name = rhs
    if k is None:  # written the other way round: n > i
        k = _element(module, rhs, cond_param)
        bound_name = lhs
        direction = {"GT": "LT", "GE": "LE", "NE": "NE"}.get(direction, "")
    if k is None or direction not in ("LT", "LE", "NE"):
        return None
    n = _value(module, loop, body, bound_name, cond_param)
    if n is None or step.opcode != "tuple" or k >= len(init.operands) or k >= len(step.operands):
        return None
    start = _constant(module, init.operands[k])
    add = _through(module, step.operands[k])
    if start is None or add is None or add.opcode != "add" or len(add.operands) != 2:
        return None
    ops = list(add.operands)
    if _element(module, ops[0], body_param) != k:
        ops.reverse()
    s = _constant(module, ops[1])
    if _element(module, ops[0], body_param) != k or s is None or s <= 0:
        return None
    if direction == "LE":
        n += 1
    if direction == "NE" and (n - start) % s:
        return None  # never equal: the loop would not end where it seems to
    return max(0, math.ceil((n - start) / s))


def trip_count(loop: HloInstruction, module: HloModule | None = None) -> int | None:
    """A ``while``'s trips: its ``known_trip_count`` (CPU and GPU annotate it), else, with
    ``module``, read from the loop's own counter (the TPU compiler writes no annotation)."""
    m = _KNOWN_TRIPS_RE.search(loop.attrs.get("backend_config", ""))
    if m:
        return int(m.group(1))
    return _counted_loop(loop, module) if module is not None else None


def _enclosing_loop(
    comp: str, callers: Mapping[str, list[HloInstruction]]
) -> HloInstruction | None:
    """The ``while`` whose body (or condition) holds ``comp``, through fusions, calls,
    branches and async wrappers; ``None`` at the entry."""
    seen: set[str] = set()
    while comp in callers and comp not in seen:
        seen.add(comp)
        caller = callers[comp][0]
        if caller.opcode == "while":
            return caller
        comp = caller.computation
    return None


def _multiply(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a * b


def loops_of(module: HloModule | str) -> tuple[Loop, ...]:
    """Every ``while`` of the module in printed order, with its trips, the loop around it and
    how many times its body runs per step (``None`` when any count on the way is unknown)."""
    module = module if isinstance(module, HloModule) else parse_hlo_module(module)
    callers = module.callers()
    whiles = [ins for ins in module.instructions() if ins.opcode == "while"]
    parents = {w.name: _enclosing_loop(w.computation, callers) for w in whiles}
    trips = {w.name: trip_count(w, module) for w in whiles}

    def runs(w: HloInstruction, known: bool, depth: int = 0) -> int | None:
        """Body runs per step; with ``known=False`` an unknown count counts as one trip."""
        n = trips[w.name]
        n = n if n is not None or known else 1
        parent = parents[w.name]
        if parent is None or depth > 64:
            return n
        return _multiply(n, runs(parent, known, depth + 1))

    out = []
    for w in whiles:
        parent = parents[w.name]
        out.append(
            Loop(
                name=w.name,
                body=w.attrs.get("body", "").lstrip("%"),
                condition=w.attrs.get("condition", "").lstrip("%"),
                trips=trips[w.name],
                runs=runs(w, True),
                counted_runs=runs(w, False) or 0,
                parent=parent.name if parent is not None else None,
                op_name=w.op_name,
                source=module.source_of(w),
            )
        )
    return tuple(out)


def computation_runs(module: HloModule, loops: Iterable[Loop] | None = None) -> dict[str, int]:
    """How many times each computation runs per step as counted: 1 outside loops, a loop
    body's ``counted_runs``, and a computation called from there (a fusion, a reducer) as
    often as its caller. A loop of unknown count counts as one trip (its
    :attr:`~shardviz.model.Loop.runs` is ``None``: figures built on these are lower bounds).
    A reducer's per-element calls count as one run of the op that applies it."""
    loops = tuple(loops) if loops is not None else loops_of(module)
    callers = module.callers()
    by_body: dict[str, int] = {}
    for loop in loops:
        by_body[loop.body] = loop.counted_runs
        by_body[loop.condition] = loop.counted_runs
    out: dict[str, int] = {}

    def runs(comp: str, depth: int = 0) -> int:
        if comp in out:
            return out[comp]
        if comp in by_body:
            value = by_body[comp]
        elif comp not in callers or depth > 256:
            value = 1
        else:
            value = runs(callers[comp][0].computation, depth + 1)
        out[comp] = value
        return value

    for comp in module.computations:
        runs(comp.name)
    return out


_HEADER_ATTRS = ("num_partitions", "replica_count")
#: A metadata's reference into the module's stack-frame table, which the body's module does
#: not carry (XLA would warn "Invalid stack_frame_id" once per op while parsing it).
_STACK_FRAME_RE = re.compile(r"\s*\bstack_frame_id=\d+")


def loop_body_module(text: str, module: HloModule, body: str) -> str:
    """The HLO text of a module whose entry computation is ``body`` and which holds every
    computation ``body`` calls, in their printed order: what the compiler's cost model needs
    to count one trip of that loop (nested loops inside counted once, as in the whole
    module). Metadata keeps its ``op_name``, not its stack frames (the table is the whole
    module's)."""
    needed: set[str] = set()
    names = {c.name for c in module.computations}
    stack = [body]
    while stack:
        name = stack.pop()
        if name in needed:
            continue
        needed.add(name)
        comp = module.computation(name)
        if comp is None:
            continue
        for ins in comp.instructions:
            stack.extend(ins.called_computations)
            # Any other attribute naming a computation (a custom call's comparator, keys a
            # newer compiler adds): without it the module does not parse, and the loop
            # would go uncounted.
            stack.extend(n for n in _REFERENCE_RE.findall(ins.attr_text) if n in names)
    attrs = ", ".join(f"{k}={module.attrs[k]}" for k in _HEADER_ATTRS if k in module.attrs)
    lines = [f"HloModule {body.replace('.', '_')}_trip" + (f", {attrs}" if attrs else ""), ""]
    for name, block in _computation_blocks(text):
        if name not in needed:
            continue
        if name == body:
            block = "ENTRY " + block
        lines.append(_STACK_FRAME_RE.sub("", block))
        lines.append("")
    return "\n".join(lines)


#: A ``%name`` in an instruction's attributes (a computation's, where one has that name).
_REFERENCE_RE = re.compile(r"%([\w.\-]+)")
_BLOCK_START_RE = re.compile(r"^(ENTRY\s+)?%?([\w.\-]+)\s*\(")


def _computation_blocks(text: str) -> Iterable[tuple[str, str]]:
    """(name, text without ``ENTRY``) of each computation block of a printed module."""
    name: str | None = None
    block: list[str] = []
    for line in text.splitlines():
        if name is None:
            m = _BLOCK_START_RE.match(line)
            if m and line.rstrip().endswith("{"):
                name = m.group(2)
                block = [line[len(m.group(1)) :] if m.group(1) else line]
            continue
        block.append(line)
        if line.rstrip() == "}":
            yield name, "\n".join(block)
            name = None
