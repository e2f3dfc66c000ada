"""Where a value's sharding came from, read from the module sharding completion wrote.

Pure text in (the ``*before_spmd-partitioning`` dump, no jax). :class:`ShardingGraph` holds the
program's array values, read lazily (a program has thousands, a question visits a few). A
value is a **source** of shardings when it is an argument (an entry parameter whose sharding
was given, not propagated), a sharding constraint (``with_sharding_constraint``, or GSPMD's
``Sharding`` custom call), a ``shard_map``'s specs, the declared output, or the in/out
shardings of a jitted function called inside. Otherwise :meth:`ShardingGraph.origin` finds,
per mesh axis of its spec, the nearest sources the axis reaches it from through ops whose dims
line up (elementwise ops and copies, dots' batch and free dims, transposes, broadcasts,
reductions' kept dims, reshapes' whole dims, slices' unchanged dims): producers first (the way
values flow), then also users and the other side of a dot's contraction (Shardy propagates
backwards as well). A tie names every source; no path names none (the origin reads unknown).

Shardy records the same per axis (``sdy.sharding_origins``) when the dump's pass regex
contains ``shardy-verbose``; the tests check the two agree.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property

from shardviz.capture.hlo.sharding import hlo_sharding_to_spec, parse_hlo_sharding
from shardviz.capture.hlo.text import ArrayShape, HloInstruction, HloModule, HloParseError
from shardviz.model import MeshLayout, ShardingOf, Source, Spec
from shardviz.model.why import AxisOrigin, Origin, OriginKind

__all__ = ["UNKNOWN", "ShardingGraph", "Value", "leaf_path", "reshape_pairs"]


#: Values a root search visits at most per (value, axis), and over a whole program: bounds
#: on the cost (a search that hits them finds nothing: the origin reads unknown). A 2-layer
#: transformer's train step (1,700 values, 56 collectives) visits ~9,000 in all.
_MAX_VISITS = 4000
_PROGRAM_VISITS = 400_000


@dataclass
class Value:
    """One array value of the program, with what the search needs."""

    name: str
    op: str
    dims: tuple[int, ...]
    spec: Spec | None
    operands: tuple[str, ...] = ()
    op_name: str = ""
    source: Source | None = None
    #: What makes it a source of shardings (None: it got its sharding from others).
    fixed: OriginKind | None = None
    #: For a fixed node: how the user names it (``argument params/w1`` ...).
    label: str = ""
    ins: HloInstruction | None = field(default=None, repr=False)


@dataclass(frozen=True)
class _Edge:
    """A neighbour and the dims that correspond: ``(mine, theirs)`` pairs. ``way`` is
    ``back`` (to a producer), ``forward`` (to a user) or ``side`` (the other operand of a
    dot, across its contracting dims)."""

    to: str
    pairs: tuple[tuple[int, int], ...]
    way: str


def leaf_path(op_name: str) -> str:
    """An argument's leaf path (``params/w1``) from the name jax gives its HLO parameter
    (``params['w1']``, ``batch[0]``, ``state.mu['w']``); the name as it is if it does not
    read as a key path."""
    text = op_name.replace("\\'", "'").replace('\\"', '"')
    m = re.match(r"[^\[\].]+", text)
    if not m:
        return op_name
    parts = [m.group(0)]
    rest = text[m.end() :]
    key = re.compile(r"\['((?:[^'\\]|\\.)*)'\]|\[\"((?:[^\"\\]|\\.)*)\"\]|\[(-?\d+)\]|\.(\w+)")
    while rest:
        k = key.match(rest)
        if not k:
            return op_name
        parts.append(next(g for g in k.groups() if g is not None))
        rest = rest[k.end() :]
    return "/".join(parts)


def last_op(op_name: str) -> str:
    """The primitive that made a value: the last ``/`` part of its ``op_name``, with
    transforms such as ``transpose(jvp(...))`` peeled off."""
    last = op_name.split(";")[0].strip().rsplit("/", 1)[-1]
    while True:
        m = re.fullmatch(r"\w+\((.*)\)", last)
        if not m or last.startswith("jit("):
            return last
        last = m.group(1)


def short_where(source: Source | None) -> str:
    """``model.py:12`` or ``In [12], line 12`` (the innermost frame as a person names its
    file), or "" without a source."""
    f = source.innermost if source is not None else None
    return f.place if f is not None else ""


def where(source: Source | None) -> str:
    """``/path/model.py:12`` (the innermost frame), or "" without a source."""
    return source.location if source is not None and source.innermost is not None else ""


def spec_axes(spec: Spec | None) -> list[str]:
    """The mesh axes a spec splits over, dim by dim."""
    return [a for entry in spec or () for a in entry]


def without(spec: Spec, axes: Iterable[str]) -> Spec:
    """``spec`` with ``axes`` taken out of every dim."""
    drop = set(axes)
    return tuple(tuple(a for a in entry if a not in drop) for entry in spec)


def is_prefix(part: tuple[str, ...], whole: tuple[str, ...]) -> bool:
    """Whether a dim split over ``part`` becomes one split over ``whole`` by slicing locally."""
    return whole[: len(part)] == part


def _declared_outputs(module: HloModule, n: int) -> list[bool]:
    """Which of the ``n`` outputs have a declared sharding (not left to propagation)."""
    text = module.attrs.get("allow_spmd_sharding_propagation_to_output", "")
    flags = [w.strip() == "true" for w in text.strip("{}").split(",") if w.strip()]
    if not flags:
        return [True] * n
    if len(flags) == 1:
        return [not flags[0]] * n
    return [not f for f in flags[:n]] + [True] * max(0, n - len(flags))


def _propagated_parameters(module: HloModule) -> set[int]:
    text = module.attrs.get("allow_spmd_sharding_propagation_to_parameters", "")
    flags = [w.strip() == "true" for w in text.strip("{}").split(",") if w.strip()]
    return {i for i, f in enumerate(flags) if f}


class ShardingGraph:
    """The program's values as a graph the root search walks, read lazily: a program has
    thousands of values and a search visits a few of them."""

    def __init__(
        self,
        module: HloModule,
        mesh: MeshLayout,
        device_ids: Sequence[int] | None,
        intermediates: Sequence[ShardingOf],
    ) -> None:
        self.module = module
        self.mesh = mesh
        self.device_ids = device_ids
        self.sizes = dict(zip(mesh.axis_names, mesh.axis_sizes, strict=True))
        self.known = {s.name: s for s in intermediates}
        self.entry = module.entry
        self.propagated_params = _propagated_parameters(module)
        self._nodes: dict[str, Value | None] = {}
        self._specs: dict[tuple[str, int], Spec | None] = {}
        self._edges: dict[str, list[_Edge]] = {}
        self._roots: dict[tuple[str, str], list[tuple[Value, str]]] = {}
        self._outputs: dict[str, list[str]] = {}  # producer -> its output pseudo-nodes
        self._budget = _PROGRAM_VISITS
        self.outputs: list[tuple[Value, str]] = []  # (output node, producer)
        self._add_outputs()

    # --- values ---------------------------------------------------------------------------

    def node(self, name: str) -> Value | None:
        """The value called ``name`` (``None`` for tuples, tokens and unknown names)."""
        if name not in self._nodes:
            ins = self.module.instruction(name)
            self._nodes[name] = self._make_node(ins) if ins is not None else None
        return self._nodes[name]

    def spec_of(self, text: str | None, dims: tuple[int, ...]) -> Spec | None:
        key = (text or "{replicated}", len(dims))
        if key not in self._specs:
            try:
                self._specs[key] = hlo_sharding_to_spec(key[0], dims, self.mesh, self.device_ids)
            except HloParseError:
                self._specs[key] = None
        return self._specs[key]

    def _make_node(self, ins: HloInstruction) -> Value | None:
        known = self.known.get(ins.name)
        if known is not None:
            node = Value(
                ins.name, ins.opcode, known.shape, known.spec, known.operands, known.op_name,
                known.source, ins=ins,
            )  # fmt: skip
        else:
            if not isinstance(ins.shape, ArrayShape):
                return None
            dims = ins.shape.dims
            node = Value(
                ins.name, ins.opcode, dims, self.spec_of(ins.sharding, dims), ins.operands,
                ins.op_name, ins=ins,
            )  # fmt: skip
        self._mark_fixed(node, ins)
        return node

    # --- sources ---------------------------------------------------------------------------

    def _mark_fixed(self, node: Value, ins: HloInstruction) -> None:
        last = last_op(node.op_name)
        where = short_where(node.source) if node.op in ("copy", "custom-call") else ""
        at = f" at {where}" if where else ""
        if node.op == "parameter" and ins.computation == self.entry.name:
            number = ins.operand_text.strip()
            if not number.isdigit() or int(number) not in self.propagated_params:
                node.fixed = "argument"
                node.label = f"argument {leaf_path(node.op_name) if node.op_name else node.name}"
        elif last == "sharding_constraint" or (
            node.op == "custom-call" and 'custom_call_target="Sharding"' in ins.attr_text
        ):
            node.fixed = "constraint"
            node.label = f"sharding constraint{at}"
        elif last == "shard_map" and node.spec is not None and node.op in ("copy", "custom-call"):
            node.fixed = "shard_map"
            node.label = f"shard_map specs{at}"
        elif last.startswith("jit(") and node.op == "copy" and node.operands:
            # A jitted function called inside the program: its in/out shardings. An argument
            # passed straight in keeps being the argument; at the program's end it is the
            # declared output.
            arg = self.node(node.operands[0])
            if arg is not None and arg.fixed == "argument" and arg.spec == node.spec:
                node.fixed, node.label = "argument", arg.label
            elif node.name in self._root_values and self._declared(node.name):
                node.fixed, node.label = "output", f"declared output sharding ({last})"
            else:
                node.fixed, node.label = "constraint", f"shardings {last} declares{at}"

    @cached_property
    def _root_values(self) -> tuple[str, ...]:
        root = self.entry.root
        if root is None:
            return ()
        return tuple(root.operands) if root.opcode == "tuple" else (root.name,)

    def _declared(self, name: str) -> bool:
        values = self._root_values
        flags = _declared_outputs(self.module, len(values))
        return any(flags[i] for i, v in enumerate(values) if v == name)

    def _add_outputs(self) -> None:
        root = self.entry.root
        if root is None:
            return
        if root.opcode == "tuple":
            producers = list(root.operands)
            try:
                sharding = parse_hlo_sharding(root.sharding) if root.sharding else None
            except HloParseError:
                sharding = None
            elements = (
                sharding.elements if sharding is not None and sharding.kind == "tuple" else ()
            )
            declared = _declared_outputs(self.module, len(producers))
            for i, name in enumerate(producers):
                p = self.node(name)
                if p is None:
                    continue
                spec = p.spec
                if i < len(elements):
                    spec = self.spec_of(elements[i].text, p.dims)
                out = Value(f"<output {i}>", "output", p.dims, spec, operands=(name,))
                if declared[i]:
                    out.fixed = "output"
                    out.label = "declared output sharding" + (
                        f" (output {i})" if len(producers) > 1 else ""
                    )
                self._nodes[out.name] = out
                self._outputs.setdefault(name, []).append(out.name)
                self.outputs.append((out, name))
            return
        node = self.node(root.name)
        if node is None:
            return
        if _declared_outputs(self.module, 1)[0] and node.fixed is None:
            node.fixed = "output"
            node.label = "declared output sharding"
        producer = self._through_tuple(node)
        if producer is not None:
            self.outputs.append((node, producer))

    def _through_tuple(self, node: Value) -> str | None:
        """The value a ``get-tuple-element`` of a ``tuple`` reads, or a copy's operand."""
        ins = node.ins
        if ins is None or not node.operands:
            return None
        if node.op == "get-tuple-element":
            t = self.module.instruction(node.operands[0])
            if t is not None and t.opcode == "tuple":
                index = int(ins.attrs.get("index", "-1"))
                if 0 <= index < len(t.operands):
                    return t.operands[index]
            return None
        return node.operands[0] if node.op == "copy" else None

    def users(self, name: str) -> list[str]:
        return [u.name for u in self.module.users(name)] + self._outputs.get(name, [])

    # --- dims that correspond ------------------------------------------------------------

    def edges(self, name: str, back_only: bool = False) -> list[_Edge]:
        """The value's neighbours: producers (``back``) first; users and the other side of
        a dot only when ``back_only`` is false (they cost a look at every user)."""
        key = name if not back_only else name + "\0back"
        if key not in self._edges:
            self._edges[key] = (
                self._back_edges(name) if back_only
                else self.edges(name, True) + self._other_edges(name)
            )  # fmt: skip
        return self._edges[key]

    def _back_edges(self, name: str) -> list[_Edge]:
        node = self.node(name)
        assert node is not None
        out: list[_Edge] = []
        for i, o in enumerate(node.operands):
            if self.node(o) is not None:
                pairs = self._pairs(node, i)
                if pairs:
                    out.append(_Edge(o, pairs, "back"))
        if node.op == "get-tuple-element":
            through = self._through_tuple(node)
            other = self.node(through) if through else None
            if other is not None and other.dims == node.dims:
                out.append(_Edge(other.name, _same(node.dims), "back"))
        return out

    def _other_edges(self, name: str) -> list[_Edge]:
        out: list[_Edge] = []
        for u in self.users(name):
            user = self.node(u)
            if user is None:
                out.extend(self._through_tuple_users(name, u))
                continue
            for i, o in enumerate(user.operands):
                if o == name:
                    pairs = self._pairs(user, i)
                    if pairs:
                        out.append(_Edge(u, tuple((b, a) for a, b in pairs), "forward"))
            if user.op == "dot" and len(user.operands) >= 2 and user.ins is not None:
                lc = int_list(user.ins, "lhs_contracting_dims")
                rc = int_list(user.ins, "rhs_contracting_dims")
                lhs, rhs = user.operands[0], user.operands[1]
                if name == lhs and self.node(rhs) is not None:
                    out.append(_Edge(rhs, tuple(zip(lc, rc, strict=False)), "side"))
                elif name == rhs and self.node(lhs) is not None:
                    out.append(_Edge(lhs, tuple(zip(rc, lc, strict=False)), "side"))
        return out

    def _through_tuple_users(self, name: str, tuple_name: str) -> list[_Edge]:
        """Forward edges from a value put in a tuple to the ``get-tuple-element``s that
        read it back out (a result's way to a declared output, say)."""
        t = self.module.instruction(tuple_name)
        node = self.node(name)
        if t is None or t.opcode != "tuple" or node is None:
            return []
        at = {i for i, o in enumerate(t.operands) if o == name}
        out = []
        for g in self.users(tuple_name):
            gte = self.node(g)
            if gte is None or gte.op != "get-tuple-element" or gte.ins is None:
                continue
            if int(gte.ins.attrs.get("index", "-1")) in at and gte.dims == node.dims:
                out.append(_Edge(g, _same(node.dims), "forward"))
        return out

    def _pairs(self, node: Value, i: int) -> tuple[tuple[int, int], ...]:
        """``(node dim, operand i dim)`` pairs that hold the same data."""
        operand = self.node(node.operands[i])
        ins = node.ins
        if operand is None:
            return ()
        rank, orank = len(node.dims), len(operand.dims)
        if node.op == "output":
            return _same(node.dims)
        if ins is None:
            return ()
        op = node.op
        if op == "dot":
            lhs = self.node(node.operands[0])
            lhs_rank = len(lhs.dims) if lhs is not None else 0
            return tuple(_dot_result_dims(ins, i, orank, lhs_rank))
        if op == "transpose":
            perm = int_list(ins, "dimensions")
            return tuple((r, p) for r, p in enumerate(perm)) if i == 0 else ()
        if op == "broadcast":
            dims = int_list(ins, "dimensions")
            return tuple((d, j) for j, d in enumerate(dims) if d < rank) if i == 0 else ()
        if op == "reduce":
            if i >= max(1, len(node.operands) // 2):
                return ()  # an init value
            reduced = set(int_list(ins, "dimensions"))
            kept = [d for d in range(orank) if d not in reduced]
            return tuple((r, d) for r, d in enumerate(kept) if r < rank)
        if op == "reshape":
            return reshape_pairs(node.dims, operand.dims)
        if rank == orank and rank > 0:
            # Elementwise ops, copies, constraints (equal shapes); slices, pads and
            # concatenations keep the dims whose size they do not change.
            return tuple((d, d) for d in range(rank) if node.dims[d] == operand.dims[d])
        return ()

    # --- where a sharding came from ----------------------------------------------------

    def roots(self, name: str, axis: str) -> list[tuple[Value, str]]:
        """The nearest sources ``axis`` of ``name``'s spec reaches it from, each with the
        neighbour of ``name`` it came through (its own name when it is a source)."""
        key = (name, axis)
        if key not in self._roots:
            self._roots[key] = self._find_roots(name, axis)
        return self._roots[key]

    def _find_roots(self, name: str, axis: str) -> list[tuple[Value, str]]:
        node = self.node(name)
        if node is None:
            return []
        if node.fixed:
            return [(node, name)]
        start = [d for d, entry in enumerate(node.spec or ()) if axis in entry]
        if not start:
            return []
        for ways in (("back",), ("back", "forward", "side")):
            found = self._search(name, start[0], axis, ways)
            if found:
                return found
        return []

    def _search(
        self, name: str, dim: int, axis: str, ways: tuple[str, ...]
    ) -> list[tuple[Value, str]]:
        """Breadth first from ``(name, dim)`` over dims holding ``axis``: the sources at the
        first level that has any."""
        seen = {(name, dim)}
        level: list[tuple[str, int, str]] = [(name, dim, "")]
        while level and len(seen) < min(_MAX_VISITS, self._budget):
            self._budget -= len(level)
            found: dict[str, tuple[Value, str]] = {}
            nxt: list[tuple[str, int, str]] = []
            for at, d, hop in level:
                for e in self.edges(at, back_only=ways == ("back",)):
                    if e.way not in ways:
                        continue
                    for mine, theirs in e.pairs:
                        if mine != d or (e.to, theirs) in seen:
                            continue
                        other = self.node(e.to)
                        spec = other.spec if other is not None else None
                        if spec is None or theirs >= len(spec) or axis not in spec[theirs]:
                            continue
                        assert other is not None
                        seen.add((e.to, theirs))
                        first = hop or e.to
                        if other.fixed:
                            found.setdefault(other.name, (other, first))
                        else:
                            nxt.append((e.to, theirs, first))
            if found:
                return list(found.values())
            level = nxt
        return []

    def origin(self, name: str, axes: Sequence[str] | None = None) -> Origin:
        """Where ``name``'s sharding (only ``axes`` of it, when given) came from."""
        node = self.node(name)
        if node is None:
            return UNKNOWN
        if node.fixed:
            return Origin(node.fixed, node.spec, node.label, node.name, where(node.source))
        if node.spec is None:
            return replace(UNKNOWN, detail="the value has no named sharding", value=name)
        want = list(axes) if axes is not None else spec_axes(node.spec)
        if not want:
            return self._unsplit_origin(node)
        per_axis: list[AxisOrigin] = []
        sources: dict[str, Value] = {}
        hops: dict[str, None] = {}
        for axis in want:
            found = self.roots(name, axis)
            if not found:
                per_axis.append(AxisOrigin(axis, "unknown", "unknown"))
                continue
            for root, hop in found:
                per_axis.append(
                    AxisOrigin(axis, root.fixed or "unknown", root.label, root.name,
                               where(root.source))
                )  # fmt: skip
                sources[root.name] = root
                if hop != root.name:
                    hops[hop] = None
        via = self._op_words(self.node(next(iter(hops)))) if len(hops) == 1 else ""
        if len(sources) == 1 and all(a.kind != "unknown" for a in per_axis):
            root = next(iter(sources.values()))
            return Origin(
                root.fixed or "unknown", root.spec, root.label, root.name,
                where(root.source), via=via, axes=tuple(per_axis),
            )  # fmt: skip
        if not sources:
            return replace(UNKNOWN, spec=node.spec, value=name)
        if len(hops) == 1:
            through = self.node(next(iter(hops)))
            assert through is not None
            return Origin(
                "propagation", through.spec, f"propagated from {via}", through.name,
                where(through.source), via=via, axes=tuple(per_axis),
            )  # fmt: skip
        named = [noun(r.fixed, r.label) for r in sources.values()]
        detail = (
            "propagated from " + " and ".join(named) if len(named) <= 3 and not hops
            else "propagated from several ops"
        )  # fmt: skip
        return Origin("propagation", None, detail, axes=tuple(per_axis))

    def _unsplit_origin(self, node: Value) -> Origin:
        """A value split over no axis: the nearest source holding the same unsplit value
        (through ops of the same shape), else unknown."""
        for ways in (("back",), ("back", "forward")):
            seen, level = {node.name}, [(node.name, "")]
            while level and len(seen) < _MAX_VISITS:
                found: dict[str, tuple[Value, str]] = {}
                nxt = []
                for at, hop in level:
                    for e in self.edges(at, back_only=ways == ("back",)):
                        other = self.node(e.to)
                        if e.way not in ways or e.to in seen or other is None:
                            continue
                        if other.dims != node.dims or other.spec is None:
                            continue
                        if spec_axes(other.spec):
                            continue
                        seen.add(e.to)
                        if other.fixed:
                            found.setdefault(other.name, (other, hop or e.to))
                        else:
                            nxt.append((e.to, hop or e.to))
                if len(found) == 1:
                    root, hop = next(iter(found.values()))
                    first = self.node(hop)
                    via = self._op_words(first) if first is not None and hop != root.name else ""
                    return Origin(
                        root.fixed or "unknown", root.spec, root.label, root.name,
                        where(root.source), via=via,
                    )  # fmt: skip
                if found:
                    break
                level = nxt
        return replace(UNKNOWN, spec=node.spec, value=node.name)

    # --- words --------------------------------------------------------------------------

    def _op_words(self, node: Value | None) -> str:
        """The op that made ``node`` in plain words, with its line: ``a matmul at
        model.py:12`` (a source of shardings by its label: ``argument x``)."""
        if node is None:
            return ""
        if node.fixed:
            return noun(node.fixed, node.label)
        op = a_op(last_op(node.op_name) or node.op)
        where = short_where(node.source)
        return f"{op} at {where}" if where else op

    def value_words(self, name: str) -> str:
        """The value ``name`` in the user's terms: an argument's leaf path, the value of a
        constraint, ``the value made at model.py:12 (`h = jnp.tanh(x @ w1)`)`` when its
        line's code is known (``the result of the transpose at model.py:14 (`y = h.T @ w`)``
        when the line uses it again: a step of the line, not what it makes), else ``the
        result of a matmul at model.py:12``."""
        node = self.node(name)
        if node is None:
            return f"value {name}"
        if node.fixed == "argument":
            return node.label.removeprefix("argument ")
        if node.fixed:
            return f"the value of {noun(node.fixed, node.label)}"
        where = short_where(node.source)
        if not where or node.source is None or not node.source.text:
            return f"the result of {self._op_words(node)}"
        code = f"at {where} (`{node.source.text}`)"
        if self._used_on_its_line(node):
            return f"the result of the {op_noun(last_op(node.op_name) or node.op)} {code}"
        return f"the value made {code}"

    def _used_on_its_line(self, node: Value) -> bool:
        """Whether an op of the same line uses ``node`` (it is a step inside the line)."""
        line = where(node.source)
        for user in self.users(node.name):
            other = self.node(user)
            if other is not None and other.source is not None and where(other.source) == line:
                return True
        return False

    def tile(self, dims: Sequence[int], spec: Spec) -> tuple[int, ...]:
        return tuple(
            -(-d // math.prod(self.sizes.get(a, 1) for a in entry))
            for d, entry in zip(dims, spec, strict=False)
        )


def _same(dims: Sequence[int]) -> tuple[tuple[int, int], ...]:
    return tuple((d, d) for d in range(len(dims)))


def reshape_pairs(out: Sequence[int], operand: Sequence[int]) -> tuple[tuple[int, int], ...]:
    """Dims a reshape keeps whole: the same size, after the same number of elements (in
    row-major order), e.g. ``[128] <- [1, 1, 128]`` or ``[16, 64, 8, 16] <- [16, 64, 128]``
    for the first two. Size-1 dims hold no split and are left out."""
    starts: dict[tuple[int, int], int] = {}
    before = 1
    for e, n in enumerate(operand):
        if n > 1:
            starts[(before, n)] = e
        before *= n
    pairs = []
    before = 1
    for d, n in enumerate(out):
        if n > 1 and (before, n) in starts:
            pairs.append((d, starts[(before, n)]))
        before *= n
    return tuple(pairs)


#: Plain words for the primitives (and HLO opcodes) whose names are the compiler's, not the
#: user's; any other op is named as it is (``tanh``, ``transpose``).
OP_NOUNS = {
    "select_n": "jnp.where",
    "select": "jnp.where",
    **dict.fromkeys(("gt", "lt", "ge", "le", "eq", "ne", "compare"), "comparison"),
    "dot_general": "matmul",
    "dot": "matmul",
    "add": "addition",
    "add_any": "addition",
    "sub": "subtraction",
    "subtract": "subtraction",
    "mul": "multiplication",
    "multiply": "multiplication",
    "div": "division",
    "divide": "division",
    "neg": "negation",
    "negate": "negation",
    "max": "maximum",
    "min": "minimum",
    "integer_pow": "power",
    "pow": "power",
    "power": "power",
    "logistic": "sigmoid",
    "reduce_sum": "sum",
    "reduce_max": "max over an axis",
    "reduce_min": "min over an axis",
    "reduce_prod": "product over an axis",
    "reduce": "reduction",
    "broadcast_in_dim": "broadcast",
    "convert_element_type": "dtype conversion",
    "convert": "dtype conversion",
    "dynamic_slice": "slice",
    "dynamic_update_slice": "slice update",
    "concatenate": "concatenation",
    "conv_general_dilated": "convolution",
    "cumsum": "cumulative sum",
    "iota": "jnp.arange",
    "sharding_constraint": "sharding constraint",
}


def op_noun(op: str) -> str:
    """An op in plain words: ``select_n`` -> ``jnp.where``, ``gt`` -> ``comparison``,
    ``dot_general`` -> ``matmul``; an op with no plainer name as it is (``tanh``)."""
    return OP_NOUNS.get(op, op)


def a_op(op: str) -> str:
    """``a matmul``, ``an addition``: :func:`op_noun` with its article."""
    word = op_noun(op)
    return ("an " if word[:1] in tuple("aeiou") else "a ") + word


def noun(kind: str | None, label: str) -> str:
    """A source's label as a noun phrase (arguments are named bare: ``argument x``)."""
    return label if kind == "argument" else "the " + label


UNKNOWN = Origin("unknown", None, "shardviz cannot tell where it came from")


def int_list(ins: HloInstruction, key: str) -> tuple[int, ...]:
    """An instruction's ``key={1,2}`` attribute as ints (``()`` when absent)."""
    text = ins.attrs.get(key, "").strip("{}")
    return tuple(int(x) for x in text.split(",") if x.strip())


def _dot_result_dims(
    ins: HloInstruction, i: int, orank: int, lhs_rank: int
) -> list[tuple[int, int]]:
    """``(result dim, operand dim)`` for a dot's operand ``i`` (0 lhs, 1 rhs): batch dims
    first, then the lhs's free dims, then the rhs's."""
    if i > 1:
        return []
    lb, lc = int_list(ins, "lhs_batch_dims"), int_list(ins, "lhs_contracting_dims")
    rb, rc = int_list(ins, "rhs_batch_dims"), int_list(ins, "rhs_contracting_dims")
    batch, contracting = (lb, lc) if i == 0 else (rb, rc)
    pairs = list(enumerate(batch))
    out = len(batch) + (lhs_rank - len(lb) - len(lc) if i == 1 else 0)
    for d in range(orank):
        if d in batch or d in contracting:
            continue
        pairs.append((out, d))
        out += 1
    return pairs
