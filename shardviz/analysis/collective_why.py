"""Why the partitioner inserted each collective: fills :attr:`Collective.why`.

Pure text and model in, model out (no jax). It reads the module sharding completion wrote
(the ``*before_spmd-partitioning`` dump, whose values carry the shardings Shardy or GSPMD
chose), the ledger with each collective linked to its reshard point (see
:func:`~shardviz.capture.hlo.collectives.link_reshards`) and the intermediates (for their
trimmed source lines).

For each partitioner-inserted collective:

- **needed by**: the op it carries the metadata of (the partitioner gives a collective the
  ``op_name`` and line of the instruction it was splitting), i.e. its reshard point;
- **from -> to**: which conversion it makes, checked against the collective's own sizes:
  an operand of that op arriving in one spec when the op needs another (the collective's
  input is the operand's per-device tile), partial sums of a dot or reduce over a split
  dim (an all-reduce or reduce-scatter over the split axes whose size is the result's tile),
  or the result going to the declared output sharding. Anything else is left unknown rather
  than guessed;
- **where each side came from**: :meth:`.sharding_origins.ShardingGraph.origin` (an
  argument, a constraint at a line, the declared output, or propagation from named ops).

Shardy can record the origins itself (``sdy.sharding_origins``): compiling with
``xla_dump_hlo_pass_re`` containing ``shardy-verbose`` makes jax 0.10.2 write them to
``shardy/<module>/02.after_propagation.mlir``, but only per MLIR value with no source lines
and with five more dumped files per compile, so shardviz reconstructs them from the HLO
dump it reads anyway (the tests check the two agree).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from shardviz.analysis.sharding_origins import (
    UNKNOWN,
    ShardingGraph,
    Value,
    int_list,
    is_prefix,
    last_op,
    noun,
    op_noun,
    short_where,
    spec_axes,
    where,
    without,
)
from shardviz.capture.hlo.text import HloModule, HloParseError, parse_hlo_module
from shardviz.model import Collective, MeshLayout, ShardingOf, Source, Spec
from shardviz.model.why import AxisOrigin, CollectiveWhy, Origin, why_axes, why_spec

__all__ = ["collective_reasons"]


def _elements(shape: Sequence[int]) -> int:
    return math.prod(shape)


# --- the conversion a collective makes ------------------------------------------------------


@dataclass(frozen=True)
class _Conversion:
    """What one collective converts (HLO ``value``), from what to what, and the origins."""

    value: str
    from_spec: Spec | None
    to_spec: Spec | None
    from_origin: Origin
    to_origin: Origin
    partial: tuple[str, ...] = ()
    others: tuple[Origin, ...] = ()
    holders: tuple[str, ...] = ()


def _contracting(program: ShardingGraph, r: Value) -> list[tuple[Value, tuple[int, ...]]]:
    """A dot's operands with their contracting dims, or a reduce's input with its reduced
    dims (nothing for other ops)."""
    if r.ins is None:
        return []
    if r.op == "dot" and len(r.operands) >= 2:
        dims = (int_list(r.ins, "lhs_contracting_dims"), int_list(r.ins, "rhs_contracting_dims"))
        pairs = [(program.node(o), d) for o, d in zip(r.operands[:2], dims, strict=True)]
        return [(n, d) for n, d in pairs if n is not None]
    x = program.node(r.operands[0]) if r.op == "reduce" and r.operands else None
    return [(x, int_list(r.ins, "dimensions"))] if x is not None else []


def _split_axes(node: Value, dims: Sequence[int]) -> list[str]:
    spec = node.spec or ()
    return [a for d in dims if d < len(spec) and node.dims[d] > 1 for a in spec[d]]


def _partial_sums(program: ShardingGraph, c: Collective, r: Value) -> _Conversion | None:
    """An all-reduce or reduce-scatter adding the partial sums of a dot (or reduce) over a
    dim split over the collective's axes, into the op's result spec."""
    if c.kind not in ("all-reduce", "reduce-scatter") or r.spec is None or not c.axes:
        return None
    holders = [(n, _split_axes(n, dims)) for n, dims in _contracting(program, r)]
    split = {a for _, axes in holders for a in axes}
    if not set(c.axes) <= split:
        return None
    # An all-reduce gives the sum unsplit over its axes (the op then keeps its own slice
    # where its result is split over them); a reduce-scatter gives the result's tile.
    summed = without(r.spec, c.axes) if c.kind == "all-reduce" else r.spec
    if not set(c.axes) <= set(spec_axes(r.spec)) and c.kind == "reduce-scatter":
        return None
    if _elements(c.out_shape) != _elements(program.tile(r.dims, summed)):
        return None
    holding = [(n, [a for a in c.axes if a in axes]) for n, axes in holders]
    holding = [(n, axes) for n, axes in holding if axes]
    origins = [program.origin(n.name, axes) for n, axes in holding]
    return _Conversion(
        value=r.name,
        from_spec=without(r.spec, c.axes),
        to_spec=r.spec,
        from_origin=origins[0],
        to_origin=program.origin(r.name),
        partial=tuple(c.axes),
        others=tuple(origins[1:]),
        holders=tuple(n.name for n, _ in holding),
    )


def _needed(program: ShardingGraph, r: Value, i: int) -> dict[int, tuple[str, ...]]:
    """The axes op ``r`` needs on each dim of its operand ``i`` that lines up with a dim of
    its result (a dot's contracting dims do not: they are left out)."""
    spec = r.spec or ()
    return {od: spec[rd] for rd, od in program._pairs(r, i) if rd < len(spec)}


def _moves(program: ShardingGraph, r: Value, i: int, x: Value) -> bool:
    """Whether operand ``i`` (``x``) must move for ``r``: a dim it is split on differently
    from what ``r`` needs there (beyond a local slice), or, for a dot, a contracting dim
    split over axes the other operand's is not."""
    spec = x.spec or ()
    needed = _needed(program, r, i)
    for d, axes in needed.items():
        if d < len(spec) and x.dims[d] > 1 and not is_prefix(spec[d], axes):
            return True
    if r.op == "dot" and r.ins is not None and i < 2 and len(r.operands) >= 2:
        other = program.node(r.operands[1 - i])
        mine = int_list(r.ins, "lhs_contracting_dims" if i == 0 else "rhs_contracting_dims")
        theirs = int_list(r.ins, "rhs_contracting_dims" if i == 0 else "lhs_contracting_dims")
        if other is None or other.spec is None:
            return False
        for m, t in zip(mine, theirs, strict=False):
            a = spec[m] if m < len(spec) else ()
            b = other.spec[t] if t < len(other.spec) else ()
            if a != b and not is_prefix(a, b):
                return True
    return False


def _fits_move(
    program: ShardingGraph, c: Collective, x: Value, needed: dict[int, tuple[str, ...]]
) -> tuple[bool, Spec | None]:
    """Whether ``c`` moves ``x`` (its input is ``x``'s tile, its axes are ``x``'s), and
    the spec ``x`` ends up in when shardviz can tell (``None`` otherwise)."""
    spec = x.spec
    assert spec is not None
    tile = program.tile(x.dims, spec)
    full: Spec | None = (
        tuple(needed[d] for d in range(len(x.dims))) if len(needed) == len(x.dims) else None
    )
    if c.kind == "all-gather":
        d = c.dimension
        if d is None or d >= len(spec) or not c.axes:
            return False, None
        entry = spec[d]
        k = len(c.axes)
        if k > len(entry) or set(entry[len(entry) - k :]) != set(c.axes):
            return False, None
        gathered = spec[:d] + (entry[: len(entry) - k],) + spec[d + 1 :]
        if tuple(c.in_shape) != tile or tuple(c.out_shape) != program.tile(x.dims, gathered):
            return False, None
        # After the gather, only local slicing may lead to what the op needs.
        consistent = all(
            is_prefix(gathered[dim], axes) for dim, axes in needed.items() if dim < len(spec)
        )
        if not consistent:
            return True, None
        return True, full if full is not None else gathered
    if c.kind == "all-to-all":
        if not c.axes or not set(c.axes) <= set(spec_axes(spec)):
            return False, None
        return _elements(c.in_shape) == _elements(tile), full
    if c.kind == "collective-permute":
        return _elements(c.in_shape) == _elements(tile), full
    return False, None


def _operand_conversion(program: ShardingGraph, c: Collective, r: Value) -> _Conversion | None:
    """The one operand of ``r`` the collective moves to the spec ``r`` needs it in."""
    found: list[tuple[Value, Spec | None]] = []
    for i, name in enumerate(r.operands):
        x = program.node(name)
        if x is None or x.spec is None or not x.dims or any(f[0] is x for f in found):
            continue
        if not _moves(program, r, i, x):
            continue
        fits, to = _fits_move(program, c, x, _needed(program, r, i))
        if fits:
            found.append((x, to))
    if len(found) != 1:
        return None
    x, to = found[0]
    return _Conversion(
        value=x.name,
        from_spec=x.spec,
        to_spec=to,
        from_origin=program.origin(x.name),
        to_origin=program.origin(r.name),
    )


def _output_conversion(program: ShardingGraph, c: Collective) -> _Conversion | None:
    """The result moved to a declared output sharding (such collectives carry no op)."""
    found = []
    for out, producer in program.outputs:
        p = program.node(producer)
        if not out.fixed or p is None or p.spec is None or out.spec is None:
            continue
        if p.spec == out.spec or not p.dims:
            continue
        needed = dict(enumerate(out.spec))
        fits, to = _fits_move(program, c, p, needed)
        if fits:
            found.append((out, p, to))
    if len(found) != 1:
        return None
    out, p, to = found[0]
    return _Conversion(
        value=p.name,
        from_spec=p.spec,
        to_spec=to,
        from_origin=program.origin(p.name),
        to_origin=program.origin(out.name),
    )


# --- words ----------------------------------------------------------------------------------

_VERBS = {
    "all-gather": "all-gathers it",
    "all-to-all": "re-splits it with an all-to-all",
    "collective-permute": "moves its tiles between devices with a collective-permute",
}


def _axis_words(a: AxisOrigin) -> str:
    return "an unknown source" if a.kind == "unknown" else noun(a.kind, a.detail)


def _side_words(o: Origin, value: str) -> str:
    """Where the sharding of ``value`` came from, for the summary's parentheses."""
    if o.kind == "unknown":
        return "where it comes from is not known"
    if o.kind == "propagation":
        by_axis: dict[str, list[str]] = {}
        for a in o.axes:
            by_axis.setdefault(a.axis, []).append(_axis_words(a))
        parts = [f"{why_axes((axis,))} from {' and '.join(w)}" for axis, w in by_axis.items()]
        return o.detail + (": " + ", ".join(parts) if parts else "")
    if o.value == value:
        return "its argument spec" if o.kind == "argument" else f"set by {noun(o.kind, o.detail)}"
    return f"from {noun(o.kind, o.detail)}" + (f" through {o.via}" if o.via else "")


def _summary(
    program: ShardingGraph, c: Collective, r: Value | None, conv: _Conversion | None, needed: str
) -> str:
    axes = why_axes(c.axes)
    if conv is None:
        if r is not None:
            return (
                f"The partitioner inserted this {c.kind} over {axes} while splitting "
                f"{needed}, whose result is {why_spec(r.spec)}; shardviz cannot tell "
                "which conversion it makes."
            )
        if needed:
            return (
                f"The partitioner inserted this {c.kind} over {axes} for {needed}; shardviz "
                "could not tie it to a value of the program, so what it converts is unknown."
            )
        return (
            f"The partitioner inserted this {c.kind} over {axes}; the program does not say "
            "which op needed it."
        )
    value = program.value_words(conv.value)
    frm, to = why_spec(conv.from_spec), why_spec(conv.to_spec)
    if conv.partial:
        parts = []
        for name, o in zip(conv.holders, (conv.from_origin, *conv.others), strict=True):
            node = program.node(name)
            assert node is not None
            side = _side_words(o, name)
            if o.kind != "propagation" and o.value != name:
                side = f"{why_axes(conv.partial)} {side}"
            parts.append(f"{program.value_words(name)} is {why_spec(node.spec)}, {side}")
        how = "adds them into" if c.kind == "all-reduce" else "adds them and splits the sum into"
        return (
            f"{needed} sums over a dim split over {axes} ({'; '.join(parts)}), so each device "
            f"holds partial sums, and this {c.kind} {how} {to} "
            f"({_side_words(conv.to_origin, conv.value)})."
        )
    verb = _VERBS.get(c.kind, f"uses a {c.kind}")
    from_side = _side_words(conv.from_origin, conv.value)
    if r is None:  # to the declared output
        return (
            f"The declared output sharding is {to}, but {value} is {frm} "
            f"({from_side}), so the partitioner {verb} over {axes}."
        )
    to_side = _side_words(conv.to_origin, r.name)
    if r.fixed == "constraint":
        ask = f"{noun(r.fixed, r.label)} asks for {value} as {to}"
    elif conv.to_spec is None:
        ask = f"{needed} needs {value} split another way than {frm} (its result is "
        ask += f"{why_spec(r.spec)}, {to_side})"
    elif conv.to_spec == r.spec:
        ask = f"{needed} needs {value} as {to} ({to_side})"
    else:
        ask = f"{needed} needs {value} as {to} (its result is {why_spec(r.spec)}, {to_side})"
    return f"{ask}, but it is {frm} ({from_side}), so the partitioner {verb} over {axes}."


def _needed_words(op: str, source: Source | None) -> str:
    """``the matmul at model.py:25 (`y = h @ w2`)``: the op in plain words, its line, its code."""
    where = short_where(source)
    text = source.text if source is not None else ""
    return (
        f"the {op_noun(op)}" + (f" at {where}" if where else "") + (f" (`{text}`)" if text else "")
    )


def _why(program: ShardingGraph, c: Collective) -> CollectiveWhy:
    r = program.node(c.reshard) if c.reshard else None
    conv: _Conversion | None = None
    if r is not None:
        conv = _partial_sums(program, c, r) or _operand_conversion(program, c, r)
        op, source = (last_op(r.op_name) or r.op), (r.source or c.source)
    elif c.op_name:
        op, source = last_op(c.op_name), c.source
    else:
        conv = _output_conversion(program, c)
        op, source = ("output" if conv is not None else ""), None
    needed = _needed_words(op, source) if op != "output" else "the program's output"
    summary = _summary(program, c, r, conv, needed if op else "")
    if summary[:1].islower():
        summary = summary[0].upper() + summary[1:]
    return CollectiveWhy(
        from_spec=conv.from_spec if conv else None,
        to_spec=conv.to_spec if conv else None,
        needed_by=op,
        needed_by_line=where(source),
        from_origin=conv.from_origin if conv else UNKNOWN,
        to_origin=conv.to_origin if conv else UNKNOWN,
        summary=summary,
        value=program.value_words(conv.value) if conv else "",
        hlo_value=conv.value if conv else "",
        needed_by_value=r.name if r is not None else "",
        needed_by_code=source.text if source is not None else "",
        partial_axes=conv.partial if conv else (),
        other_origins=conv.others if conv else (),
    )


def collective_reasons(
    collectives: Sequence[Collective],
    intermediates: Sequence[ShardingOf],
    propagated: str | HloModule,
    mesh: MeshLayout | None,
    device_ids: Sequence[int] | None = None,
) -> tuple[Collective, ...]:
    """``collectives`` with :attr:`~shardviz.model.Collective.why` filled for every one the
    partitioner inserted (user-written ones keep ``None``).

    Args:
        collectives: the ledger, linked to reshard points (``link_reshards``), sources trimmed.
        intermediates: the completed shardings (their trimmed sources give the lines).
        propagated: the ``*before_spmd-partitioning`` dump's text (or parsed module).
        mesh: the user's mesh; device_ids: the executable's device assignment.

    Nothing is filled without a mesh or a dump; a dump shardviz cannot read leaves the
    ledger as it is.
    """
    if mesh is None or not propagated or all(c.user_written for c in collectives):
        return tuple(collectives)
    try:
        module = propagated if isinstance(propagated, HloModule) else parse_hlo_module(propagated)
        program = ShardingGraph(module, mesh, device_ids, intermediates)
    except HloParseError:
        return tuple(collectives)
    return tuple(c if c.user_written else replace(c, why=_why(program, c)) for c in collectives)
