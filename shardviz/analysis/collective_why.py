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
  or the result going to the declared output sharding; a dot operand gathered on a
  contracted dim its two operands split differently. Operand tiles with their size-1 dims
  dropped (the TPU compiler's habit) count as the tile. Anything else is left unknown
  rather than guessed, saying only what the collective does to each device's array;
- **what kind**, where it matters at scale (:attr:`CollectiveWhy.conversion`): tokens
  gathered into an expert layer's matmul instead of an all-to-all (with the tokens' spec
  that needs only the all-to-all), an activation (not a weight) gathered, or an expert
  layer's combine summed by an all-reduce over the expert axes;
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

from shardviz.analysis.detect.inputs import INPUT_NAMES, leaf_group
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
    #: ``contracting``: the op's operands split a contracted dim differently, and the
    #: partitioner gathered this one (no dim of the result asked for the move).
    reason: str = ""


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


def _squeezed(shape: Sequence[int]) -> tuple[int, ...]:
    return tuple(n for n in shape if n != 1)


def _same_tile(shape: Sequence[int], tile: Sequence[int]) -> bool:
    """Whether a collective's operand is ``tile``, dims of size 1 aside (the TPU compiler
    drops them: a ``(1, 4, 8, 256)`` tile is gathered as ``(4, 8, 256)``)."""
    return tuple(shape) == tuple(tile) or _squeezed(shape) == _squeezed(tile)


def _tile_dim(shape: Sequence[int], tile: Sequence[int], dim: int | None) -> int | None:
    """The dim of ``tile`` that ``dim`` of the collective's operand ``shape`` is (the same
    dim when the shapes are equal; the same non-unit dim when only size-1 dims differ)."""
    if dim is None or not _same_tile(shape, tile):
        return None
    if tuple(shape) == tuple(tile):
        return dim
    if dim >= len(shape) or shape[dim] == 1:
        return None
    k = sum(1 for n in shape[:dim] if n != 1)
    return [i for i, n in enumerate(tile) if n != 1][k]


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
        d = _tile_dim(c.in_shape, tile, c.dimension)
        if d is None or d >= len(spec) or not c.axes:
            return False, None
        entry = spec[d]
        k = len(c.axes)
        if k > len(entry) or set(entry[len(entry) - k :]) != set(c.axes):
            return False, None
        gathered = spec[:d] + (entry[: len(entry) - k],) + spec[d + 1 :]
        if not _same_tile(c.out_shape, program.tile(x.dims, gathered)):
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
    reason = ""
    if not found and c.kind == "all-gather" and r.op == "dot":
        found, reason = _contracted_gather(program, c, r), "contracting"
    if len(found) != 1:
        return None
    x, to = found[0]
    return _Conversion(
        value=x.name,
        from_spec=x.spec,
        to_spec=to,
        from_origin=program.origin(x.name),
        to_origin=program.origin(r.name),
        reason=reason,
    )


def _contracted_gather(
    program: ShardingGraph, c: Collective, r: Value
) -> list[tuple[Value, Spec | None]]:
    """The dot operand an all-gather gathers on a contracted dim the two operands split
    differently (``('fsdp',)`` in one, ``('fsdp', 'expert')`` in the other): the
    partitioner gathers one side rather than the result asking for it."""
    if r.ins is None or c.dimension is None:
        return []
    found: list[tuple[Value, Spec | None]] = []
    for i, key in enumerate(("lhs_contracting_dims", "rhs_contracting_dims")):
        x = program.node(r.operands[i]) if i < len(r.operands) else None
        if x is None or x.spec is None:
            continue
        d = _tile_dim(c.in_shape, program.tile(x.dims, x.spec), c.dimension)
        if d is None or d not in int_list(r.ins, key):
            continue
        fits, to = _fits_move(program, c, x, {})
        if fits and to is not None:
            found.append((x, to))
    return found


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


# --- conversions that matter at scale ------------------------------------------------------

#: Ops a weight passes through on its way to a matmul (a dynamic slice: one layer's
#: weights out of stacked ones).
_AS_IS = frozenset({"convert", "copy", "bitcast", "transpose", "reshape", "dynamic-slice"})


def _carried(program: ShardingGraph, node: Value) -> Value | None:
    """What a ``get-tuple-element`` reads: the tuple's element, or, of a loop body's
    parameter, the value the loop was started with at that index (a scanned layer's
    weights enter the body that way)."""
    ins = node.ins
    if ins is None or node.op != "get-tuple-element" or not node.operands:
        return None
    through = program._through_tuple(node)
    if through is not None:
        return program.node(through)
    source = program.module.instruction(node.operands[0])
    if source is None or source.opcode != "parameter":
        return None
    index = int(ins.attrs.get("index", "-1"))
    for caller in program.module.callers().get(source.computation, ()):
        if caller.opcode != "while" or not caller.operands:
            continue
        start = program.module.instruction(caller.operands[0])
        if start is not None and start.opcode == "tuple" and 0 <= index < len(start.operands):
            return program.node(start.operands[index])
    return None


def _read_back(program: ShardingGraph, name: str) -> Value | None:
    """``name`` read back through converts, copies, transposes, a layer's slice and a
    loop's carried tuple: the value it was made from (``None`` past 16 steps)."""
    node = program.node(name)
    for _ in range(16):
        if node is None or node.fixed:
            return node
        if node.op == "get-tuple-element":
            node = _carried(program, node)
        elif node.op in _AS_IS and node.operands:
            node = program.node(node.operands[0])
        else:
            return node
    return None


def _weight(program: ShardingGraph, name: str) -> Value | None:
    """The argument ``name`` reads (through converts, copies, transposes, a layer's slice
    and a loop's carry), else ``None``: a value the program computes is an activation, not a
    weight, and an argument named as data (``x``, ``batch``, ...) is no weight either."""
    node = _read_back(program, name)
    if node is None or node.fixed != "argument":
        return None
    group = leaf_group(node.label.removeprefix("argument "))
    return None if group.lower() in INPUT_NAMES else node


def _computed(program: ShardingGraph, name: str) -> bool:
    """Whether ``name`` is computed by the program (an activation): read back, it reaches
    an op that makes values, not an argument or a tuple shardviz cannot follow."""
    node = _read_back(program, name)
    return node is not None and not node.fixed and node.op not in ("parameter", "get-tuple-element")


def _dot_expert_axes(program: ShardingGraph, r: Value) -> tuple[tuple[str, ...], int]:
    """The axes an expert layer's matmul splits its experts over (the batch dim of a weight
    operand: ``egcm,emh->egch``'s ``e``), and which operand that weight is (-1: none)."""
    if r.op != "dot" or r.ins is None:
        return (), -1
    for i, key in enumerate(("lhs_batch_dims", "rhs_batch_dims")):
        x = program.node(r.operands[i]) if i < len(r.operands) else None
        dims = int_list(r.ins, key)
        if x is None or x.spec is None or not dims or _weight(program, x.name) is None:
            continue
        axes = tuple(a for d in dims if d < len(x.spec) for a in x.spec[d])
        if axes:
            return axes, i
    return (), -1


class _Experts:
    """The axes the program's expert layers split their experts over (read once, lazily:
    only conversions that may be an expert layer's ask for them)."""

    def __init__(self, program: ShardingGraph) -> None:
        self.program = program
        self._axes: tuple[str, ...] | None = None

    @property
    def axes(self) -> tuple[str, ...]:
        if self._axes is None:
            found: dict[str, None] = {}
            for comp in self.program.module.computations:
                for ins in comp.instructions:
                    node = self.program.node(ins.name) if ins.opcode == "dot" else None
                    if node is not None:
                        found.update(dict.fromkeys(_dot_expert_axes(self.program, node)[0]))
            self._axes = tuple(found)
        return self._axes


@dataclass(frozen=True)
class _Kind:
    """A conversion recognised as one that matters at scale, and a sentence saying so."""

    name: str
    words: str
    expert_axes: tuple[str, ...] = ()
    better: Spec | None = None


def _batch_dims_of(r: Value, i: int) -> tuple[int, ...]:
    assert r.ins is not None
    return int_list(r.ins, "lhs_batch_dims" if i == 0 else "rhs_batch_dims")


def _result_expert_axes(r: Value, experts: _Experts) -> tuple[str, ...]:
    """The expert axes a batched matmul's result is split over on its batch dims (a
    weight's gradient, ``egcm,egch->emh``, has no weight operand but is split that way)."""
    if r.op != "dot" or r.ins is None or r.spec is None:
        return ()
    batch = len(int_list(r.ins, "lhs_batch_dims"))
    on = [a for e in r.spec[:batch] for a in e]
    return tuple(a for a in on if a in experts.axes)


def _token_gather(
    program: ShardingGraph, experts: _Experts, c: Collective, r: Value, conv: _Conversion
) -> _Kind | None:
    """Tokens gathered on their way into an expert layer's matmul: their expert dim is not
    split over the axes the experts are, so each device gets every token, where an
    all-to-all over the expert axes would send each token to its experts' devices only."""
    expert, w = _dot_expert_axes(program, r)
    if not expert:
        expert = _result_expert_axes(r, experts)
    if not expert or conv.value not in r.operands or conv.from_spec is None:
        return None
    i = r.operands.index(conv.value)
    if i == w or i > 1:
        return None
    dims = _batch_dims_of(r, i)
    spec = list(conv.from_spec)
    if not dims or any(set(expert) <= set(spec[d]) for d in dims if d < len(spec)):
        return None
    d = dims[0]
    better = tuple(tuple(a for a in e if a not in expert) for e in spec)
    better = better[:d] + (tuple(expert),) + better[d + 1 :]
    split = why_spec(conv.from_spec)
    words = (
        f"These are the tokens going into an expert layer's matmul: the experts are split over "
        f"{why_axes(expert)}, but the tokens' expert dim is not ({split}), so every device "
        f"gathers every token over {why_axes(c.axes)} instead of an all-to-all over "
        f"{why_axes(expert)} sending each token to its experts' devices; as "
        f"{why_spec(better)} they would need only that all-to-all."
    )
    return _Kind("token-gather", words, expert, better)


def _kind(
    program: ShardingGraph, experts: _Experts, c: Collective, r: Value | None, conv: _Conversion
) -> _Kind | None:
    """What kind of conversion ``c`` makes, where it is one that matters at scale."""
    if r is None:
        return None
    if c.kind == "all-gather" and not conv.partial and _computed(program, conv.value):
        token = _token_gather(program, experts, c, r, conv)
        if token is not None:
            return token
        return _Kind(
            "activation-gather",
            f"It gathers an activation, not a weight: each device receives all of it over "
            f"{why_axes(c.axes)}, a cost that grows with the batch, not with the model.",
        )
    combine = c.kind == "all-reduce" and len(conv.holders) == 2 and r.op == "dot"
    batched = r.ins is not None and bool(int_list(r.ins, "lhs_batch_dims"))
    if combine and batched and experts.axes and set(c.axes) <= set(experts.axes):
        return _Kind(
            "combine-all-reduce",
            f"This all-reduce over {why_axes(c.axes)} takes the place of the expert layer's "
            "all-to-all: each device receives the sum of every token's expert outputs, "
            "where an all-to-all would bring back only its own tokens' outputs.",
            experts.axes,
        )
    return None


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
                f"{needed}, whose result is {why_spec(r.spec)}; it takes each device's "
                f"{_array_words(c.in_dtype, c.in_shape)} to {_array_words(c.out_dtype, c.out_shape)}, "
                "a form no operand of that op is in, so shardviz cannot tell which value "
                "it converts."
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
    if r is not None and conv.reason == "contracting":
        other = next((program.node(o) for o in r.operands[:2] if o != conv.value), None)
        theirs = (
            f" and {program.value_words(other.name)} as {why_spec(other.spec)}"
            if other is not None
            else ""
        )
        return (
            f"{needed} contracts a dim that its operands split differently: {value} is {frm} "
            f"({from_side}){theirs}, so the partitioner {verb} over {axes}, to {to}."
        )
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


def _array_words(dtype: str, shape: Sequence[int]) -> str:
    """``f32[4, 8, 256]``: a collective's side as its dtype and dims."""
    return f"{dtype}[{', '.join(str(n) for n in shape)}]"


def _needed_words(op: str, source: Source | None) -> str:
    """``the matmul at model.py:25 (`y = h @ w2`)``: the op in plain words, its line, its code."""
    where = short_where(source)
    text = source.text if source is not None else ""
    return (
        f"the {op_noun(op)}" + (f" at {where}" if where else "") + (f" (`{text}`)" if text else "")
    )


def _why(program: ShardingGraph, experts: _Experts, c: Collective) -> CollectiveWhy:
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
    kind = _kind(program, experts, c, r, conv) if conv is not None else None
    if kind is not None:
        summary += " " + kind.words
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
        conversion=kind.name if kind else "",
        expert_axes=kind.expert_axes if kind else (),
        better_spec=kind.better if kind else None,
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
    experts = _Experts(program)
    return tuple(
        c if c.user_written else replace(c, why=_why(program, experts, c)) for c in collectives
    )
