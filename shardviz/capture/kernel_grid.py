"""A Pallas kernel's matmul flops per call, counted from its body over its grid.

A ``pallas_call`` runs its kernel body once per point of its grid. The body's matmuls
(``dot_general``) have static block shapes, so each point's work is known, except where
the body skips work on a condition: splash attention computes a block only where its
mask's block map (a scalar-prefetch operand) says so, jax's flash attention only on and
below the causal diagonal (a test on the program ids), a paged-attention kernel only over
the pages its sequence lengths cover (a loop bounded by a scalar-prefetch value).

This module evaluates the body's *scalar* control once for every grid point at a time,
vectorised with numpy: program ids, reads of scalar-prefetch operands whose values are
known at trace time, integer arithmetic and comparisons, ``cond`` branches, ``scan`` and
``while`` loops. Each ``dot_general`` adds its flops times the grid points that reach it.
Tensors are not evaluated. Where a condition depends on something unknown (a value only
the data has), every branch is taken at its largest and the count is an upper bound
(:attr:`GridCount.bounded`); a loop whose trips are unknown cannot be counted
(:attr:`GridCount.why`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from shardviz.capture.jax_compat import scan_counts

__all__ = ["MAX_GRID_POINTS", "GridCount", "count_kernel"]

#: Grids above this many points are counted as if every point computed (an upper bound):
#: the vectorised evaluation holds a few arrays of this length per scalar of the body.
MAX_GRID_POINTS = 1 << 22
#: A loop inside the body runs at most this many trips before the count gives up on it.
MAX_TRIPS = 1 << 14
#: A kernel whose steps pass values to each other is counted one step at a time, up to
#: this many steps.
MAX_SEQUENTIAL = 1 << 14


@dataclass(frozen=True)
class GridCount:
    """What one call of a kernel computes.

    ``flops``: its matmul flops as the hardware runs them (steps a condition skips left
    out); ``dense``: the same with every condition taken (what the body computes at every
    grid point, as a dense kernel would). ``bounded``: a condition could not be read, so
    ``flops`` counts it taken (an upper bound). ``why``: non-empty when nothing could be
    counted (``flops`` is then ``None``)."""

    flops: float | None
    dense: float | None
    bounded: bool = False
    why: str = ""


class _Ref:
    """A scalar-prefetch operand whose value is known: what the body's reads see."""

    def __init__(self, value: np.ndarray) -> None:
        self.value: np.ndarray | None = np.array(value)  # a copy: writes may change it
        self.written = False  # the body writes it: its reads depend on the order of steps


class _Unknown(Exception):
    """The body holds what the count cannot follow (a loop of unknown trips)."""


Value = Any  # a numpy array (one value per grid point, or one for all), or None: unknown


def _dot_flops(eqn: Any) -> float:
    lhs = eqn.invars[0].aval
    (contract, _), _ = eqn.params["dimension_numbers"]
    out = eqn.outvars[0].aval
    k = math.prod(int(lhs.shape[d]) for d in contract)
    return 2.0 * math.prod(int(d) for d in out.shape) * k


def _is_scalar(var: Any) -> bool:
    aval = getattr(var, "aval", None)
    return getattr(aval, "shape", None) == ()


def _int_div(a: Any, b: Any) -> Any:
    """lax.div on integers: rounds toward zero."""
    q = np.abs(a) // np.where(b == 0, 1, np.abs(b))
    return np.where((a < 0) ^ (b < 0), -q, q)


_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "max": np.maximum,
    "min": np.minimum, "eq": np.equal, "ne": np.not_equal, "lt": np.less,
    "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal, "and": np.bitwise_and,
    "or": np.bitwise_or, "xor": np.bitwise_xor, "shift_left": np.left_shift,
    "shift_right_logical": np.right_shift, "shift_right_arithmetic": np.right_shift,
}  # fmt: skip
_UNARY: dict[str, Callable[[Any], Any]] = {
    "neg": np.negative, "abs": np.abs, "not": np.invert, "sign": np.sign,
}  # fmt: skip
#: Ops that pass their first operand through unchanged, as far as a scalar's value goes.
_SAME = frozenset(("multiple_of", "copy", "copy_p", "pvary", "optimization_barrier"))


def _as_dtype(value: Any, eqn: Any) -> Any:
    dtype = getattr(eqn.outvars[0].aval, "dtype", None)
    try:
        return np.asarray(value).astype(dtype) if dtype is not None else value
    except TypeError:  # a dtype numpy does not hold (bfloat16 works through ml_dtypes)
        return value


def _scalar_op(eqn: Any, vals: list[Value]) -> Value:
    """The value of a scalar op from its operands' values (``None``: unknown)."""
    name = eqn.primitive.name
    if any(v is None for v in vals):
        return None
    with np.errstate(all="ignore"):
        if name in _BINARY and len(vals) == 2:
            return _BINARY[name](vals[0], vals[1])
        if name in _UNARY and len(vals) == 1:
            return _UNARY[name](vals[0])
        if name == "div" and len(vals) == 2:
            a, b = vals
            integer = np.issubdtype(np.asarray(a).dtype, np.integer)
            return _int_div(a, b) if integer else np.true_divide(a, b)
        if name == "rem" and len(vals) == 2:
            return np.fmod(vals[0], np.where(vals[1] == 0, 1, vals[1]))
        if name == "convert_element_type":
            return _as_dtype(vals[0], eqn)
        if name in _SAME or name in ("squeeze", "reshape", "broadcast_in_dim"):
            return vals[0]
        if name == "select_n":
            which = np.asarray(vals[0]).astype(np.int64)
            return np.choose(np.clip(which, 0, len(vals) - 2), vals[1:])
        if name == "clamp" and len(vals) == 3:
            return np.clip(vals[1], vals[0], vals[2])
        if name == "integer_pow":
            return np.power(vals[0], int(eqn.params["y"]))
    return None


class _Evaluator:
    """Walks a kernel body once for all grid points (lanes)."""

    def __init__(self, grid: tuple[int, ...], point: Sequence[int] | None = None) -> None:
        self.grid = grid
        if point is None:  # every grid point at once
            self.points = math.prod(grid)
            self.ids = np.indices(grid).reshape(len(grid), self.points) if grid else None
        else:  # one point, its steps taken in order (``sequential``)
            self.points = 1
            self.ids = np.array(point, dtype=np.int64).reshape(len(grid), 1)
        self.flops = 0.0
        self.dense = 0.0
        self.bounded = False
        self.sequential = point is not None

    def _fresh(self) -> _Evaluator:
        trial = _Evaluator(self.grid)
        trial.points, trial.ids, trial.sequential = self.points, self.ids, self.sequential
        return trial

    def run(self, jaxpr: Any, args: Sequence[Value], active: Any, dense: float) -> list[Value]:
        """Evaluate ``jaxpr`` where ``active`` (one bool per lane) holds; ``dense``: the
        lanes a dense kernel would count here. Returns its outputs' values."""
        env: dict[Any, Value] = {}
        for v, a in zip(jaxpr.invars, args, strict=False):
            env[v] = a
        for v, c in zip(getattr(jaxpr, "constvars", ()), getattr(jaxpr, "consts", ()) or (),
                        strict=False):  # fmt: skip
            env[v] = np.asarray(c) if np.ndim(c) == 0 else None

        def read(v: Any) -> Value:
            if hasattr(v, "val"):  # a Literal
                return np.asarray(v.val)
            return env.get(v)

        for eqn in jaxpr.eqns:
            outs = self.eqn(eqn, [read(v) for v in eqn.invars], active, dense)
            for v, o in zip(eqn.outvars, outs, strict=False):
                env[v] = o
        return [read(v) for v in jaxpr.outvars]

    def _count(self, active: Any) -> int:
        return int(np.count_nonzero(active)) if isinstance(active, np.ndarray) else self.points

    def eqn(self, eqn: Any, vals: list[Value], active: Any, dense: float) -> list:
        name = eqn.primitive.name
        n_out = len(eqn.outvars)
        if name == "dot_general":
            flops = _dot_flops(eqn)
            self.flops += flops * self._count(active)
            self.dense += flops * dense
            return [None]
        if name == "program_id":
            axis = int(eqn.params["axis"])
            return [self.ids[axis] if self.ids is not None and axis < len(self.grid) else None]
        if name == "num_programs":
            axis = int(eqn.params["axis"])
            return [np.asarray(self.grid[axis]) if axis < len(self.grid) else None]
        if name == "get":
            return [self._get(eqn, vals)]
        if name in ("swap", "addupdate") and isinstance(vals[0], _Ref):
            vals[0].written = True
            if self.sequential:
                return [self._write(eqn, vals)] + [None] * (n_out - 1)
        if name == "cond":
            return self._cond(eqn, vals, active, dense)
        if name == "scan":
            return self._scan(eqn, vals, active, dense)
        if name == "while":
            return self._while(eqn, vals, active, dense)
        inner = _called(eqn)
        if inner is not None:
            return self.run(inner, vals, active, dense)[:n_out] + [None] * max(
                0, n_out - len(inner.outvars)
            )
        if name == "run_scoped":
            self.run(eqn.params["jaxpr"], vals, active, dense)
            return [None] * n_out
        if n_out == 1 and _is_scalar(eqn.outvars[0]):
            return [_scalar_op(eqn, vals)]
        return [None] * n_out

    def _index(self, eqn: Any, vals: list[Value], first: int) -> tuple | None:
        """The scalar index a read or write of a known ref uses (operands from ``first``
        on hold it), clipped to the ref; ``None`` when it is not one known scalar index."""
        ref = vals[0]
        if not isinstance(ref, _Ref) or ref.value is None:
            return None
        try:
            transforms = eqn.params["tree"].unflatten(list(range(first, len(vals))))
        except Exception:
            return None
        if len(transforms) != 1 or not hasattr(transforms[0], "indices"):
            return None
        index: list[Any] = []
        for i in transforms[0].indices:
            if not isinstance(i, int):
                return None
            v = vals[i]
            if v is None or np.ndim(v) > 1:
                return None
            index.append(np.asarray(v).astype(np.int64))
        value = ref.value
        if len(index) != value.ndim:
            return None
        return tuple(np.clip(i, 0, value.shape[d] - 1) for d, i in enumerate(index))

    def _write(self, eqn: Any, vals: list[Value]) -> Value:
        """A scalar write to a known ref, one step at a time: later steps read it."""
        ref = vals[0]
        index = self._index(eqn, vals, 2)
        new = vals[1]
        if index is None or new is None or ref.value is None:
            ref.value = None  # what it holds from here on is unknown
            return None
        old = ref.value[index]
        with np.errstate(all="ignore"):
            value = old + new if eqn.primitive.name == "addupdate" else new
        ref.value[index] = np.asarray(value).reshape(-1)[0]
        return old

    def _get(self, eqn: Any, vals: list[Value]) -> Value:
        """A scalar read of a known scalar-prefetch operand: one value per lane."""
        ref = vals[0]
        if not isinstance(ref, _Ref) or not _is_scalar(eqn.outvars[0]):
            return None
        clipped = self._index(eqn, vals, 1)
        return ref.value[clipped] if clipped is not None and ref.value is not None else None

    def _cond(self, eqn: Any, vals: list[Value], active: Any, dense: float) -> list[Value]:
        branches = eqn.params["branches"]
        index = vals[0]
        n_out = len(eqn.outvars)
        if index is None:  # unknown: the costliest branch everywhere, an upper bound
            self.bounded = True
            best = None
            for br in branches:
                trial = self._fresh()
                trial.run(br.jaxpr, vals[1:], active, dense)
                if best is None or trial.flops > best.flops:
                    best = trial
            if best is not None:
                self.flops += best.flops
                self.dense += best.dense
                self.bounded = self.bounded or best.bounded
            return [None] * n_out
        which = np.clip(np.asarray(index).astype(np.int64), 0, len(branches) - 1)
        outs: list[Value] = [None] * n_out
        most = max(range(len(branches)), key=lambda b: _static_flops(branches[b].jaxpr))
        for b, br in enumerate(branches):
            taken = active & (which == b) if isinstance(active, np.ndarray) else (which == b)
            taken = np.broadcast_to(taken, (self.points,)) if np.ndim(taken) == 0 else taken
            if b != most and not np.any(taken):
                continue
            # A dense kernel takes the costliest branch wherever this point is reached.
            self.run(br.jaxpr, vals[1:], taken, dense if b == most else 0.0)
        return outs

    def _scan(self, eqn: Any, vals: list[Value], active: Any, dense: float) -> list[Value]:
        p = eqn.params
        length = int(p["length"])
        n_consts, n_carry = scan_counts(p, len(vals))
        body = p["jaxpr"].jaxpr
        consts, carry = vals[:n_consts], vals[n_consts : n_consts + n_carry]
        xs = [None] * (len(vals) - n_consts - n_carry)
        if length > MAX_TRIPS:  # once, the carry unknown, times the trips
            before = (self.flops, self.dense)
            self.run(body, [*consts, *[None] * n_carry, *xs], active, dense)
            self.flops = before[0] + (self.flops - before[0]) * length
            self.dense = before[1] + (self.dense - before[1]) * length
            return [None] * len(eqn.outvars)
        for _ in range(length):
            outs = self.run(body, [*consts, *carry, *xs], active, dense)
            carry = outs[:n_carry]
        return [*carry, *[None] * (len(eqn.outvars) - n_carry)]

    def _while(self, eqn: Any, vals: list[Value], active: Any, dense: float) -> list[Value]:
        p = eqn.params
        nc, nb = int(p["cond_nconsts"]), int(p["body_nconsts"])
        cconsts, bconsts, carry = vals[:nc], vals[nc : nc + nb], vals[nc + nb :]
        running = active if isinstance(active, np.ndarray) else np.ones(self.points, bool)
        for _ in range(MAX_TRIPS):
            (go,) = self.run(p["cond_jaxpr"].jaxpr, [*cconsts, *carry], running, 0.0)
            if go is None:
                raise _Unknown("a loop in its body runs as many times as its data says")
            running = running & np.broadcast_to(np.asarray(go, bool), (self.points,))
            if not running.any():
                return carry
            # A dense kernel runs every lane's loop as long as the longest (a causal loop
            # that stops at the diagonal counts the whole row): ``dense`` lanes each trip.
            out = self.run(p["body_jaxpr"].jaxpr, [*bconsts, *carry], running, dense)
            carry = [
                None if o is None or c is None else np.where(running, o, c)
                for o, c in zip(out, carry, strict=True)
            ]
        raise _Unknown(f"a loop in its body runs more than {MAX_TRIPS} trips")


def _called(eqn: Any) -> Any:
    """The jaxpr a call-like op runs with its operands one to one (``jit``, ``closed_call``,
    ``remat``, custom derivatives' primal), else ``None``."""
    if eqn.primitive.name not in ("pjit", "jit", "closed_call", "core_call", "remat2",
                                  "checkpoint", "custom_jvp_call", "custom_vjp_call",
                                  "custom_vjp_call_jaxpr"):  # fmt: skip
        return None
    for key in ("jaxpr", "call_jaxpr", "fun_jaxpr"):
        inner = eqn.params.get(key)
        if inner is not None:
            return getattr(inner, "jaxpr", inner) if not hasattr(inner, "eqns") else inner
    return None


def _static_flops(jaxpr: Any) -> float:
    """Matmul flops of one pass through ``jaxpr``, every branch at its costliest and every
    loop once (to pick the branch a dense kernel would count)."""
    total = 0.0
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "dot_general":
            total += _dot_flops(eqn)
        elif eqn.primitive.name == "cond":
            total += max((_static_flops(b.jaxpr) for b in eqn.params["branches"]), default=0)
        else:
            for key in ("jaxpr", "call_jaxpr", "body_jaxpr"):
                inner = eqn.params.get(key)
                inner = getattr(inner, "jaxpr", inner)
                if hasattr(inner, "eqns"):
                    total += _static_flops(inner)
    return total


def count_kernel(
    kernel: Any, grid: tuple[int, ...], prefetch: Sequence[np.ndarray | None]
) -> GridCount:
    """One call's matmul flops: ``kernel`` (the ``pallas_call``'s body jaxpr) run over
    ``grid``, its first ``len(prefetch)`` operands the scalar-prefetch values (``None``
    where unknown)."""
    if not all(isinstance(g, int) for g in grid):
        return GridCount(None, None, why="its grid's size depends on the data")
    points = math.prod(grid)
    if points > MAX_GRID_POINTS:  # every point computes: an upper bound
        per_point = _static_flops(kernel)
        return GridCount(per_point * points, per_point * points, bounded=True)
    known = [np.asarray(p) if p is not None else None for p in prefetch]
    for _ in range(len(known) + 1):
        refs = [_Ref(p) if p is not None else None for p in known]
        args: list[Value] = [*refs, *[None] * (len(kernel.invars) - len(refs))]
        ev = _Evaluator(grid)
        try:
            ev.run(kernel, args, np.ones(points, bool), float(points))
        except _Unknown as err:
            return GridCount(None, None, why=str(err))
        written = [i for i, r in enumerate(refs) if r is not None and r.written]
        if not written:
            return GridCount(ev.flops, ev.dense, ev.bounded)
        if points <= MAX_SEQUENTIAL and all(known[i] is not None for i in written):
            return _in_order(kernel, grid, known)
        for i in written:  # a value the steps pass each other: unknown to a count of all at once
            known[i] = None
    return GridCount(None, None, why="its steps pass values to each other")


def _in_order(kernel: Any, grid: tuple[int, ...], known: list[np.ndarray | None]) -> GridCount:
    """The count one grid step at a time, in the order the hardware takes them (the last
    grid dimension fastest): for a kernel whose steps pass values on through scalar memory
    (a paged-attention kernel's sequence and buffer indices)."""
    refs = [_Ref(p) if p is not None else None for p in known]
    flops = dense = 0.0
    bounded = False
    for point in np.ndindex(*grid):
        ev = _Evaluator(grid, point)
        args: list[Value] = [*refs, *[None] * (len(kernel.invars) - len(refs))]
        try:
            ev.run(kernel, args, np.ones(1, bool), 1.0)
        except _Unknown as err:
            return GridCount(None, None, why=str(err))
        flops, dense, bounded = flops + ev.flops, dense + ev.dense, bounded or ev.bounded
    return GridCount(flops, dense, bounded)
