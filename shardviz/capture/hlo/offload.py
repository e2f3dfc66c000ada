"""Host <-> device transfers in a compiled module, and the offloads a program asked for.

Host memory is memory space 5 in the layouts the compiler prints (``{...:S(5)}``). What
moves data across, as the TPU and GPU compilers print it (jax 0.10.2):

- ``copy-start`` / ``copy-done``: a whole array, result ``(destination, source, context)``
  (a ``pinned_host`` argument brought to HBM, an output sent back);
- ``dynamic-update-slice-start`` (TPU) or a ``fusion-start`` calling a wrapped
  ``dynamic-update-slice`` (GPU), result ``((operands), result, context)``: one step's
  slice written into a stacked buffer in host memory (a remat policy's offload in a scan);
- ``dynamic-slice-start`` (TPU) or ``fusion-start`` (GPU): one slice read back;
- and their synchronous forms (``copy``, ``dynamic-update-slice``, ``dynamic-slice``).

The module before the compiler's passes holds the requests: each is an
``annotate_device_placement`` custom call with ``_xla_buffer_placement="pinned_host"`` (or
``unpinned_host``) on the value to keep on host. The CPU compiler keeps everything in one
memory: its modules show requests (for ``jax.device_put``) but no transfer.
Pure text in, model out (no jax).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from shardviz.capture.hlo.op_work import HOST, schedule_computations
from shardviz.capture.hlo.text import (
    ArrayShape,
    HloInstruction,
    HloModule,
    array_leaves,
    tuple_element,
)
from shardviz.model.offload import Direction, HostTransfer, OffloadRequest, Role

__all__ = ["host_scratch_bytes", "host_transfers", "offload_requests", "offloaded_values"]

#: Ops that move data and may cross memory spaces (async starts and their synchronous forms).
_ASYNC = frozenset(("copy-start", "dynamic-update-slice-start", "dynamic-slice-start",
                    "fusion-start", "async-start"))  # fmt: skip
_SYNC = frozenset(("copy", "dynamic-update-slice", "dynamic-slice", "fusion"))
#: Ops a value passes through unchanged on its way to a transfer.
_THROUGH = frozenset(("bitcast", "copy", "copy-start", "copy-done", "reshape", "convert", "transpose",
                      "get-tuple-element", "dynamic-slice-done", "fusion-done"))  # fmt: skip
#: Ops through which a value becomes part of the result unchanged.
_PASSING = frozenset(("tuple", "custom-call", "reshape", "bitcast", "copy"))
_PLACEMENT = re.compile(r'_xla_buffer_placement="([^"]+)"')
#: jax's host memory kinds, as the placement attribute names them.
HOST_KINDS = ("pinned_host", "unpinned_host")


def _leaves(shape: object) -> tuple[ArrayShape, ...]:
    return array_leaves(shape) if shape is not None else ()  # type: ignore[arg-type]


def _moved(ins: HloInstruction) -> tuple[Direction, int, int] | None:
    """(direction, bytes, the operand index of the value) when ``ins`` crosses into or out
    of host memory; ``None`` otherwise."""
    shape = ins.shape
    if ins.opcode in _ASYNC:
        if not isinstance(shape, tuple) or len(shape) < 2:
            return None
        if ins.opcode == "copy-start":
            dest, src = _leaves(shape[0]), _leaves(shape[1])
        else:
            src, dest = _leaves(shape[0]), _leaves(shape[1])
    elif ins.opcode in _SYNC:
        dest = _leaves(shape)
        src = ()  # filled from the operands by the caller
    else:
        return None
    return _direction(ins, src, dest)


def _direction(
    ins: HloInstruction, src: tuple[ArrayShape, ...], dest: tuple[ArrayShape, ...]
) -> tuple[Direction, int, int] | None:
    arrays = [a for a in src if a.dims]  # indices are scalars
    to_host = dest and all(a.memory_space == HOST for a in dest)
    if to_host and any(a.memory_space != HOST for a in arrays):
        index = next(i for i, a in enumerate(src) if a.dims and a.memory_space != HOST)
        moved = sum(a.nbytes for a in arrays if a.memory_space != HOST)
        return "to host", moved, index
    if dest and not to_host and any(a.memory_space == HOST for a in arrays):
        index = next(i for i, a in enumerate(src) if a.memory_space == HOST)
        return "to device", sum(a.nbytes for a in dest if a.memory_space != HOST), index
    return None


def _origin(module: HloModule, name: str) -> HloInstruction | None:
    """The op a value comes from, looking through ops that pass it on unchanged."""
    seen: set[str] = set()
    ins = module.instruction(name)
    while ins is not None and ins.name not in seen:
        seen.add(ins.name)
        if ins.op_name or ins.opcode not in _THROUGH or not ins.operands:
            return ins
        nxt = module.instruction(ins.operands[0])
        element = tuple_element(ins.operands[0].lstrip("%")) if nxt is None else None
        if element is not None:  # `t#k`, as jax 0.12's dumps write a tuple's element
            whole = module.instruction(element[0])
            if whole is None or whole.opcode != "tuple" or element[1] >= len(whole.operands):
                return ins
            nxt = module.instruction(whole.operands[element[1]])
        elif ins.opcode == "get-tuple-element":  # through a tuple to its element, no further
            index = int(ins.attrs.get("index", "-1"))
            if nxt is None or nxt.opcode != "tuple" or not 0 <= index < len(nxt.operands):
                return ins
            nxt = module.instruction(nxt.operands[index])
        ins = nxt
    return ins


def _shown(ins: HloInstruction, direction: Direction) -> tuple[ArrayShape, ...]:
    """What a transfer moves, as its shape shows it: a copy's destination, the slice a
    ``dynamic-slice`` brings back, the update a ``dynamic-update-slice`` writes."""
    shape = ins.shape
    if not isinstance(shape, tuple) or not shape:
        return _leaves(shape)
    if ins.opcode == "copy-start" or len(shape) < 2:
        return _leaves(shape[0])
    if direction == "to device":
        return _leaves(shape[1])
    return tuple(a for a in _leaves(shape[0]) if a.memory_space != HOST)


def _role(
    module: HloModule,
    ins: HloInstruction,
    origin: HloInstruction | None,
    direction: Direction,
    computation: str,
) -> Role:
    """``argument``: the entry's parameter brought in; ``output``: a value whose copy ends in
    the entry's result; else ``offload``."""
    if computation != module.entry.name:
        return "offload"
    if direction == "to device" and origin is not None and origin.opcode == "parameter":
        return "argument"
    if direction == "to host":
        root = module.entry.root
        todo, seen = [ins.name], set()
        while todo:  # the transfer's users, through its done and tuples, to the root
            name = todo.pop()
            if root is not None and name == root.name:
                return "output"
            if name in seen:
                continue
            seen.add(name)
            todo.extend(u.name for u in module.users(name)
                        if u.opcode in ("copy-done", "tuple", "bitcast") or u is root)  # fmt: skip
    return "offload"


def host_transfers(
    module: HloModule, runs: Mapping[str, int] | None = None, unknown: frozenset[str] = frozenset()
) -> tuple[HostTransfer, ...]:
    """Every transfer between HBM and host memory the device runs, in schedule order.

    Args:
        module: the compiled (optimized, per-device) module.
        runs: each computation's runs per step (:func:`~shardviz.capture.hlo.loops.computation_runs`);
            1 for those not in it.
        unknown: computations inside a loop whose trip count is unknown (their transfers'
            per-step bytes are lower bounds).
    """
    runs = runs or {}
    out: list[HostTransfer] = []
    for comp in schedule_computations(module):
        for ins in comp.instructions:
            found = _moved(ins)
            if ins.opcode in _SYNC and found is None:
                src = tuple(a for s in module.operand_shapes(ins) for a in _leaves(s))
                found = _direction(ins, src, _leaves(ins.shape))
            if found is None:
                continue
            direction, nbytes, index = found
            value_name = ins.operands[index] if index < len(ins.operands) else ""
            origin = _origin(module, value_name) if value_name else None
            named = origin if origin is not None and origin.op_name else ins
            shown = _shown(ins, direction)
            if direction == "to host" and origin is not None:
                shown = _leaves(origin.shape) or shown
            out.append(
                HostTransfer(
                    role=_role(module, ins, origin, direction, comp.name),
                    name=ins.name,
                    op=ins.opcode,
                    direction=direction,
                    bytes=nbytes,
                    runs=runs.get(comp.name, 1),
                    lower_bound=comp.name in unknown,
                    value=", ".join(str(a) for a in shown if a.dims)[:120],
                    origin=origin.name if origin is not None else "",
                    op_name=named.op_name,
                    source=module.source_of(named),
                    asynchronous=ins.opcode in _ASYNC,
                    computation=comp.name,
                )
            )
    return tuple(out)


def offload_requests(module: HloModule) -> tuple[OffloadRequest, ...]:
    """The values the program asked to keep in host memory, from the module before the
    compiler's passes: each ``annotate_device_placement`` custom call to a host memory kind.
    A request on another request (jax annotates an output twice) is listed once."""
    out: list[OffloadRequest] = []
    seen: set[str] = set()
    for ins in module.instructions():
        if ins.opcode != "custom-call" or "annotate_device_placement" not in ins.attr_text:
            continue
        kind = _PLACEMENT.search(ins.attr_text)
        if kind is None or kind.group(1) not in HOST_KINDS or not ins.operands:
            continue
        source = module.instruction(ins.operands[0])
        if source is not None and "annotate_device_placement" in source.attr_text:
            continue
        if ins.operands[0] in seen:  # jax may annotate one value twice
            continue
        seen.add(ins.operands[0])
        value = _leaves(ins.shape)
        origin = source if source is not None and source.op_name else ins
        output = _feeds_root(module, ins.operands[0])
        out.append(
            OffloadRequest(
                name=ins.operands[0],
                value=", ".join(str(a) for a in value),
                kind=kind.group(1),
                op_name=origin.op_name,
                source=module.source_of(origin),
                output=output,
            )
        )
    return tuple(out)


def _feeds_root(module: HloModule, value: str) -> bool:
    """Whether ``value`` (directly or through placement calls and tuples) is part of the
    entry computation's result."""
    root = module.entry.root
    todo, seen = [value], set()
    while todo:
        name = todo.pop()
        if root is not None and name == root.name:
            return True
        if name in seen:
            continue
        seen.add(name)
        ins = module.instruction(name)
        called = ins is not None and ins.opcode == "call"
        todo.extend(
            u.name
            for u in module.users(name)
            # placement and sharding custom calls too; a called function's result tuple
            # is read back element by element
            if u is root or u.opcode in _PASSING or (called and u.opcode == "get-tuple-element")
        )
        if ins is not None and ins.is_root:  # a called function's result: on to its caller
            todo.extend(
                c.name for c in module.callers().get(ins.computation, []) if c.opcode == "call"
            )
    return False


def offloaded_values(module: HloModule) -> frozenset[str]:
    """The array shapes (``f32[64,512]``) the compiled module keeps in host memory, one
    step's slice of a stacked buffer included: what a request's value is matched with."""
    found: set[str] = set()
    for ins in module.instructions():
        for a in _leaves(ins.shape):
            if a.memory_space == HOST and a.dims:
                found.add(str(a))
                found.add(str(ArrayShape(a.type, a.dims[1:])))  # one step of a stack
    return frozenset(found)


def host_scratch_bytes(module: HloModule) -> int:
    """Bytes of the buffers the compiled program allocates in host memory for itself (an
    offloaded scan's stacked values: ``AllocateBuffer`` custom calls in memory space 5),
    which ``memory_analysis()``'s host temp figure leaves out (0 on TPU and GPU)."""
    return sum(
        a.nbytes
        for ins in module.instructions()
        if ins.opcode == "custom-call" and "AllocateBuffer" in ins.attr_text
        for a in _leaves(ins.shape)
        if a.memory_space == HOST
    )
