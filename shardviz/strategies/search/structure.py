"""What a program's structure says about how to split it: which dims of its arguments are one
logical dim (the hidden dim of ``w1``'s columns and ``w2``'s rows, the heads of ``wq`` and
``wo``, the batch of every input), read from its jaxpr.

Every dim of every value in the jaxpr is a node; nodes that must be split alike are joined:

- a ``dot_general``'s contracted dims (lhs with rhs) and its batch dims; each free dim of the
  result is the operand's dim it comes from (so ``x @ w1 @ w2`` joins ``w1``'s columns with
  ``w2``'s rows: Megatron's column-then-row pair);
- elementwise ops (inputs of the output's rank: dims of one size at one position), transposes,
  broadcasts, reductions, and reshapes (a split dim is its major part; merged dims their major
  part), and the inputs and outputs of called jaxprs (``pjit``, ``remat``, custom derivatives,
  ``scan``: the leading dim of what it scans over is the stacked ``stage`` dim).

A class of joined dims that holds dims of the arguments is a **link**: splitting every dim of a
link over one mesh axis is a plan that moves one collective where the pair meets, rather than a
gather per leaf. The plan search seeds from links and moves them as one knob.

Generic: nothing is read from names. Leaves that no parameter-like name marks are taken as
weights when they are the plain operand of a ``dot_general`` whose other operand was computed,
or when a link joins a free dim of theirs to a weight's (``x @ w1`` beside ``h @ w2``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jax
from jax.extend import core as jcore

from shardviz.capture.jax_compat import scan_counts

__all__ = ["Link", "Structure", "read_structure"]

_PASS = {
    "convert_element_type",
    "copy",
    "copy_p",
    "sharding_constraint",
    "reduce_precision",
    "device_put",
    "optimization_barrier",
}
_REDUCE = {"reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_and", "reduce_or"}


@dataclass(frozen=True)
class Link:
    """Dims of the arguments the program joins into one logical dim.

    Attributes:
        dims: (leaf path, dim) pairs, in argument order.
        stacked: the dim is the leading dim a ``scan`` runs over (layers stacked: a stage).
        reduced: the program reduces over the dim outside a dot (a norm's mean, a softmax's
            sum): split, each such reduction needs its own collective.
    """

    dims: tuple[tuple[str, int], ...]
    stacked: bool = False
    reduced: bool = False

    def of(self, path: str) -> int | None:
        """The dim of leaf ``path`` in this link (the first if several), ``None`` if none."""
        return next((d for p, d in self.dims if p == path), None)

    @property
    def paths(self) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for p, _ in self.dims:
            seen.setdefault(p, None)
        return tuple(seen)


@dataclass(frozen=True)
class Structure:
    """The links of a program's arguments, and which leaves it uses as weights."""

    links: tuple[Link, ...]
    weights: frozenset[str]

    def link_of(self, path: str, dim: int) -> Link | None:
        return next((k for k in self.links if (path, dim) in k.dims), None)


class _Joins:
    """Union-find over nodes (any hashable)."""

    def __init__(self) -> None:
        self.parent: dict[Any, Any] = {}

    def find(self, x: Any) -> Any:
        self.parent.setdefault(x, x)
        root = x
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[x] != root:
            self.parent[x], x = root, self.parent[x]
        return root

    def join(self, a: Any, b: Any) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[ra] = rb


class _Reader:
    def __init__(self) -> None:
        self.joins = _Joins()
        self.fresh = 0
        self.stacked: list[Any] = []
        self.reduced: list[Any] = []
        # (plain leaf operand, its contracted leaf dims, free leaf dims, other operand plain?)
        self.dots: list[tuple[int, tuple[int, ...], tuple[int, ...], bool]] = []
        self.free_of: list[tuple[int, tuple[int, ...]]] = []

    def new(self) -> tuple[str, int]:
        self.fresh += 1
        return ("n", self.fresh)

    def nodes(self, rank: int) -> list[Any]:
        return [self.new() for _ in range(rank)]

    def walk(
        self,
        jaxpr: Any,
        ins: Sequence[list[Any]],
        plain: Sequence[tuple[int, tuple[int, ...]] | None],
    ) -> tuple[list[list[Any]], list[tuple[int, tuple[int, ...]] | None]]:
        """Walk ``jaxpr`` with its inputs' dims as ``ins`` (nodes per dim) and ``plain``
        (for an input that is an argument leaf unchanged: leaf index and its dim per dim);
        returns the same for its outputs."""
        dims: dict[Any, list[Any]] = {}
        direct: dict[Any, tuple[int, tuple[int, ...]] | None] = {}
        for v, d, p in zip(jaxpr.invars, ins, plain, strict=True):
            dims[v], direct[v] = d, p
        for v in jaxpr.constvars:
            dims[v], direct[v] = self.nodes(len(getattr(v.aval, "shape", ()))), None

        def of(v: Any) -> list[Any]:
            if isinstance(v, jcore.Literal) or v not in dims:
                return self.nodes(len(getattr(v.aval, "shape", ())))
            return dims[v]

        for eqn in jaxpr.eqns:
            in_dims = [of(v) for v in eqn.invars]
            in_plain = [
                direct.get(v) if not isinstance(v, jcore.Literal) else None for v in eqn.invars
            ]
            outs, out_plain = self._eqn(eqn, in_dims, in_plain)
            for v, d, p in zip(eqn.outvars, outs, out_plain, strict=True):
                dims[v], direct[v] = d, p
        return [of(v) for v in jaxpr.outvars], [
            direct.get(v) if not isinstance(v, jcore.Literal) else None for v in jaxpr.outvars
        ]

    def _eqn(
        self, eqn: Any, ins: list[list[Any]], plain: list[Any]
    ) -> tuple[list[list[Any]], list[Any]]:
        name = eqn.primitive.name
        out_ranks = [len(getattr(v.aval, "shape", ())) for v in eqn.outvars]
        none = [None] * len(eqn.outvars)
        j = self.joins
        if name == "dot_general":
            return [self._dot(eqn, ins, plain)], none
        if name == "transpose":
            perm = eqn.params["permutation"]
            p = plain[0]
            return [[ins[0][i] for i in perm]], [
                (p[0], tuple(p[1][i] for i in perm)) if p is not None else None
            ]
        if name in _PASS and len(ins) == 1:
            return [list(ins[0])], [plain[0]]
        if name == "broadcast_in_dim":
            out = self.nodes(out_ranks[0])
            shape_in = eqn.invars[0].aval.shape
            for i, d in enumerate(eqn.params["broadcast_dimensions"]):
                if shape_in[i] == eqn.params["shape"][d]:
                    out[d] = ins[0][i]
            return [out], none
        if name in _REDUCE or name in ("argmax", "argmin"):
            axes = set(eqn.params.get("axes", ()))
            self.reduced += [n for i, n in enumerate(ins[0]) if i in axes]
            return [[n for i, n in enumerate(ins[0]) if i not in axes]], none
        if name == "squeeze":
            gone = set(eqn.params["dimensions"])
            return [[n for i, n in enumerate(ins[0]) if i not in gone]], none
        if name == "reshape":
            return [
                self._reshape(eqn.invars[0].aval.shape, eqn.outvars[0].aval.shape, ins[0])
            ], none
        if name == "scan":
            return self._scan(eqn, ins, plain), none
        inner = _called(eqn)
        if inner is not None:
            jaxpr, consts = inner
            outs, out_plain = self.walk(jaxpr, ins, plain)
            return outs, out_plain
        # Elementwise and the like: dims of one size at one position, among inputs of the
        # output's rank, are one dim.
        outs = []
        for k, v in enumerate(eqn.outvars):
            shape = getattr(v.aval, "shape", ())
            out = self.nodes(len(shape))
            for x, d in zip(eqn.invars, ins, strict=True):
                xs = getattr(x.aval, "shape", ())
                if len(xs) != len(shape):
                    continue
                for i, (a, b) in enumerate(zip(xs, shape, strict=True)):
                    if a == b and a > 1:
                        j.join(d[i], out[i])
            outs.append(out)
            del k
        return outs, none

    def _dot(self, eqn: Any, ins: list[list[Any]], plain: list[Any]) -> list[Any]:
        (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
        lhs, rhs = ins
        for a, b in (*zip(lc, rc, strict=True), *zip(lb, rb, strict=True)):
            self.joins.join(lhs[a], rhs[b])
        l_free = [i for i in range(len(lhs)) if i not in lc and i not in lb]
        r_free = [i for i in range(len(rhs)) if i not in rc and i not in rb]
        for side, other, con, free in ((0, 1, lc, l_free), (1, 0, rc, r_free)):
            p = plain[side]
            if p is not None:
                leaf, leaf_dims = p
                self.dots.append(
                    (
                        leaf,
                        tuple(leaf_dims[i] for i in con),
                        tuple(leaf_dims[i] for i in free),
                        plain[other] is not None,
                    )
                )
        return [lhs[i] for i in lb] + [lhs[i] for i in l_free] + [rhs[i] for i in r_free]

    def _reshape(self, a: Sequence[int], b: Sequence[int], nodes: list[Any]) -> list[Any]:
        """Dims grouped where their products meet; a group's major dims are one dim."""
        out = self.nodes(len(b))
        i = k = 0
        while i < len(a) and k < len(b):
            i0, k0 = i, k
            pa, pb = a[i], b[k]
            i, k = i + 1, k + 1
            while pa != pb:
                if pa < pb and i < len(a):
                    pa *= a[i]
                    i += 1
                elif k < len(b):
                    pb *= b[k]
                    k += 1
                else:
                    break
            # skip leading size-1 dims on either side to find the majors
            ma = next((x for x in range(i0, i) if a[x] > 1), None)
            mb = next((x for x in range(k0, k) if b[x] > 1), None)
            if ma is not None and mb is not None:
                self.joins.join(nodes[ma], out[mb])
        return out

    def _scan(self, eqn: Any, ins: list[list[Any]], plain: list[Any]) -> list[list[Any]]:
        p = eqn.params
        body = p["jaxpr"].jaxpr
        nc, nk = scan_counts(p, len(eqn.invars))
        inner_ins: list[list[Any]] = []
        inner_plain: list[Any] = []
        stage = self.new()  # every scanned-over leading dim: one stacked (stage) dim
        self.stacked.append(stage)
        for idx, d in enumerate(ins):
            if idx < nc + nk:
                inner_ins.append(d)
                inner_plain.append(plain[idx] if idx < nc else None)
            else:
                if d:
                    self.joins.join(d[0], stage)
                inner_ins.append(d[1:])
                pl = plain[idx]
                inner_plain.append((pl[0], pl[1][1:]) if pl is not None else None)
        outs, _ = self.walk(body, inner_ins, inner_plain)
        result = []
        for idx, d in enumerate(outs):
            if idx < nk:
                for x, y in zip(d, ins[nc + idx], strict=False):
                    self.joins.join(x, y)
                result.append(d)
            else:
                result.append([stage, *d])
        return result


def _called(eqn: Any) -> tuple[Any, Any] | None:
    """The jaxpr an equation calls with its own inputs and outputs (``pjit``, ``remat``,
    ``custom_jvp_call``...), if any."""
    for value in eqn.params.values():
        jaxpr = getattr(value, "jaxpr", value)
        if isinstance(jaxpr, jcore.Jaxpr) and (
            len(jaxpr.invars) == len(eqn.invars) and len(jaxpr.outvars) == len(eqn.outvars)
        ):
            return jaxpr, getattr(value, "consts", ())
    return None


def read_structure(fn: Any, args: tuple, paths: Sequence[str | None]) -> Structure:
    """The links and weights of ``fn(*args)``'s arguments.

    Args:
        fn: the function, traced with :func:`jax.make_jaxpr` (nothing is compiled or run).
        args: its arguments (arrays or ``ShapeDtypeStruct`` objects).
        paths: the path of each leaf of ``args`` in flattening order (``None``: not searched).
    """
    closed = jax.make_jaxpr(fn)(*args)
    jaxpr = closed.jaxpr
    reader = _Reader()
    ins = []
    plain = []
    for i, v in enumerate(jaxpr.invars):
        rank = len(getattr(v.aval, "shape", ()))
        ins.append([("leaf", i, d) for d in range(rank)])
        plain.append((i, tuple(range(rank))))
    reader.walk(jaxpr, ins, plain)
    joins = reader.joins
    stacked_roots = {joins.find(n) for n in reader.stacked}
    reduced_roots = {joins.find(n) for n in reader.reduced}
    classes: dict[Any, list[tuple[str, int]]] = {}
    for i, v in enumerate(jaxpr.invars):
        path = paths[i] if i < len(paths) else None
        if path is None:
            continue
        for d in range(len(getattr(v.aval, "shape", ()))):
            classes.setdefault(joins.find(("leaf", i, d)), []).append((path, d))
    links = tuple(
        Link(tuple(dims), stacked=root in stacked_roots, reduced=root in reduced_roots)
        for root, dims in classes.items()
    )

    def path_of(i: int) -> str | None:
        return paths[i] if i < len(paths) else None

    weights = {path_of(leaf) for leaf, _, _, other_plain in reader.dots if not other_plain}
    weights.discard(None)
    # A plain operand beside another plain one is a weight when a link joins one of its free
    # dims to a dim of a weight.
    changed = True
    while changed:
        changed = False
        for leaf, _, free, other_plain in reader.dots:
            path = path_of(leaf)
            if not other_plain or path is None or path in weights:
                continue
            for d in free:
                root = joins.find(("leaf", leaf, d))
                if any(p in weights and p != path for p, _ in classes.get(root, [])):
                    weights.add(path)
                    changed = True
                    break
    return Structure(links, frozenset(w for w in weights if w is not None))
