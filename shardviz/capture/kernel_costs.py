"""Every Pallas kernel of a traced program, counted: its flops per call, read off the jaxpr.

A ``pallas_call`` reaches the compiler as one opaque custom call; unless its author declared
a cost estimate, the compiler's cost model counts it as zero. At trace time the call still
holds its kernel's jaxpr and grid (:mod:`.kernel_grid` counts them), and the values of its
scalar-prefetch operands are often known then too: splash attention's block maps are numpy
constants of the program, built from its static mask. This module walks the traced program,
follows such constants through the calls, ``shard_map`` and loops they pass, and gives each
kernel call a :class:`~shardviz.capture.hlo.kernels.KernelCount` keyed as the compiled
module names it (:func:`~shardviz.capture.hlo.kernels.kernel_key`), so the HLO side can
multiply each by how often its computation runs.

Model flops follow the field's convention for attention (the count behind published MFU):
an attention kernel's matmuls in full whatever its mask skips, and a backward kernel's
recomputed matmuls apart (see :func:`model_share`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from shardviz.capture.hlo.kernels import KernelCount, KernelKey, kernel_key
from shardviz.capture.jax_compat import scan_counts
from shardviz.capture.kernel_grid import GridCount, count_kernel
from shardviz.capture.remat_offload import sub_jaxprs

__all__ = ["hlo_type", "is_backward", "kernel_table", "model_share"]

#: Known values are kept for integer and boolean arrays up to this size (block maps, page
#: tables, sequence lengths); weights and activations are never held.
MAX_KNOWN = 1 << 22

_HLO_TYPES = {
    "bool": "pred", "int4": "s4", "int8": "s8", "int16": "s16", "int32": "s32", "int64": "s64",
    "uint4": "u4", "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "bfloat16": "bf16", "float16": "f16", "float32": "f32", "float64": "f64",
    "complex64": "c64", "complex128": "c128",
}  # fmt: skip


def hlo_type(aval: Any) -> str:
    """An array's type as HLO text writes it: ``bf16[4,1024,128]``."""
    dtype = str(getattr(aval, "dtype", ""))
    name = _HLO_TYPES.get(dtype) or re.sub(r"^float8_", "f8", dtype)
    dims = ",".join(str(int(d)) for d in getattr(aval, "shape", ()))
    return f"{name}[{dims}]"


_ATTENTION = re.compile(r"attention|flash|splash|_mha|_mqa|mha_|mqa_", re.IGNORECASE)
#: A sliding-window kernel's name ends with the keys the field counts of those it computes
#: (:func:`shardviz.strategies.models.attention_pallas.pallas_attention`).
_WINDOW = re.compile(r"_(?:window|chunk)_(\d+)_of_(\d+)$")


def model_share(name: str, dots: Sequence[float]) -> float | None:
    """The part of an attention kernel's dense matmul flops the field counts as model
    flops, from its name and its body's matmuls' flops in body order (``None``: not an
    attention kernel whose count follows the convention; its model flops are what it
    computes).

    Attention's model flops are its forward's two matmuls (Q K^T and P V) in full, and its
    backward's four (dP, dV, dK, dQ). A backward kernel recomputes Q K^T first (and a
    separate dq kernel recomputes dP too): a dkv kernel's matmuls but its first are useful
    (4 of 5 when it computes dq as well), a dq kernel's last one (dQ), a kernel for the
    whole backward all but its recomputed ones (jax's GPU attention recomputes Q K^T and dP
    in its dq loop: 4 of its 7; :data:`_RECOMPUTED`). Shares are of flops, not of
    matmuls: MLA's values are narrower than its queries and keys, so its matmuls differ in
    size. Paged attention (serving) is counted as computed: its pages are the work. A name
    ending ``_window_W_of_K`` or ``_chunk_W_of_K`` (a sliding window's or a chunk's kernel,
    computing ``K`` keys a query where the field counts ``W``) scales its share by
    ``W / K``."""
    total = float(sum(dots))
    if not _ATTENTION.search(name) or "paged" in name.lower() or not dots or total <= 0:
        return None
    window = _WINDOW.search(name)
    if window:  # a sliding window's kernel computes its band; the field counts the window
        share = model_share(name[: window.start()], dots)
        return None if share is None else share * int(window[1]) / int(window[2])
    low = name.lower()
    if "dkv" in low:
        return 1.0 - dots[0] / total
    if "dq" in low:
        return dots[-1] / total
    if "bwd" in low or "backward" in low:  # the whole backward in one kernel: 4 useful
        recomputed = _RECOMPUTED.get(len(dots))
        if recomputed is None:
            return min(1.0, 4 / len(dots))
        return 1.0 - sum(dots[i] for i in recomputed) / total
    return 1.0


#: A whole-backward kernel's recomputed matmuls by its matmul count, in body order: one loop
#: (Q K^T, then dV, dP, dK, dQ) recomputes Q K^T; jax's GPU kernel's two loops (dK/dV: Q K^T,
#: dV, dP, dK; then dQ: Q K^T, dP, dQ) recompute Q K^T twice and dP once.
_RECOMPUTED: dict[int, tuple[int, ...]] = {5: (0,), 7: (0, 4, 5)}


def _known(value: Any) -> np.ndarray | None:
    """``value`` as a numpy array if it is one worth holding (small, integer or bool)."""
    try:
        arr = np.asarray(value)
    except Exception:  # a tracer or an array on a device that cannot be read
        return None
    if arr.size > MAX_KNOWN or not (np.issubdtype(arr.dtype, np.integer) or arr.dtype == bool):
        return None
    return arr


def _local(value: np.ndarray | None, aval: Any) -> np.ndarray | None:
    """Inside ``shard_map``: the first device's block of a known value."""
    shape = tuple(int(d) for d in getattr(aval, "shape", ()))
    if value is None or value.shape == shape:
        return value
    if value.ndim != len(shape) or any(b > a for a, b in zip(value.shape, shape, strict=True)):
        return None
    return value[tuple(slice(0, b) for b in shape)]


def _tiled(value: np.ndarray | None, aval: Any) -> np.ndarray | None:
    """Out of ``shard_map``: the first device's block as every device's (a mask's block
    map kept for the backward pass is the same on all), tiled to the whole."""
    shape = tuple(int(d) for d in getattr(aval, "shape", ()))
    if value is None or value.shape == shape:
        return value
    if value.ndim != len(shape) or any(b % a for a, b in zip(value.shape, shape, strict=True)):
        return None
    return np.tile(value, [b // a for a, b in zip(value.shape, shape, strict=True)])


def _shape_op(eqn: Any, vals: list[np.ndarray | None]) -> np.ndarray | None:
    """The value of a layout op on a known value (the block maps pass a few)."""
    name, p, v = eqn.primitive.name, eqn.params, vals[0] if vals else None
    if v is None:
        return None
    try:
        if name in ("copy", "copy_p", "device_put", "sharding_constraint", "pvary",
                    "optimization_barrier", "mesh_cast", "reshard"):  # fmt: skip
            return v
        if name == "convert_element_type":
            return v.astype(np.dtype(p["new_dtype"]))
        if name == "reshape":
            return v.reshape(tuple(p["new_sizes"]))
        if name == "squeeze":
            return np.squeeze(v, axis=tuple(p["dimensions"]))
        if name == "expand_dims":
            return np.expand_dims(v, axis=tuple(p["dimensions"]))
        if name == "transpose":
            return np.transpose(v, tuple(p["permutation"]))
        if name == "broadcast_in_dim":
            shape = tuple(int(d) for d in p["shape"])
            dims = tuple(p["broadcast_dimensions"])
            expanded = v.reshape([v.shape[dims.index(d)] if d in dims else 1
                                  for d in range(len(shape))])  # fmt: skip
            return np.broadcast_to(expanded, shape)
        if name == "slice":
            strides = p.get("strides") or (1,) * v.ndim
            return v[tuple(slice(a, b, s) for a, b, s in
                           zip(p["start_indices"], p["limit_indices"], strides, strict=True))]  # fmt: skip
        if name == "concatenate" and all(x is not None for x in vals):
            return np.concatenate(vals, axis=int(p["dimension"]))  # type: ignore[arg-type]
    except (TypeError, ValueError, KeyError, IndexError):
        return None
    return None


def _sub_jaxprs(eqn: Any) -> Iterator[Any]:
    for value in eqn.params.values():
        yield from sub_jaxprs(value)


class _Walker:
    def __init__(self) -> None:
        self.found: dict[KernelKey, list[KernelCount]] = {}

    def walk(
        self, jaxpr: Any, args: Sequence[np.ndarray | None], consts: Sequence[Any] = ()
    ) -> list[np.ndarray | None]:
        env: dict[Any, np.ndarray | None] = dict(zip(jaxpr.invars, args, strict=False))
        env.update(zip(jaxpr.constvars, (_known(c) for c in consts), strict=False))

        def read(v: Any) -> np.ndarray | None:
            return _known(v.val) if hasattr(v, "val") else env.get(v)

        for eqn in jaxpr.eqns:
            vals = [read(v) for v in eqn.invars]
            outs = self.eqn(eqn, vals)
            for v, o in zip(eqn.outvars, outs, strict=False):
                env[v] = o
        return [read(v) for v in jaxpr.outvars]

    def closed(self, closed: Any, args: Sequence[np.ndarray | None]) -> list:
        return self.walk(closed.jaxpr, args, getattr(closed, "consts", ()))

    def eqn(self, eqn: Any, vals: list[np.ndarray | None]) -> list[np.ndarray | None]:
        name, p, n_out = eqn.primitive.name, eqn.params, len(eqn.outvars)
        none: list[np.ndarray | None] = [None] * n_out
        if name == "pallas_call":
            self.kernel(eqn, vals)
            return none
        if name == "shard_map":
            inner = p["jaxpr"]
            local = [_local(v, iv.aval) for v, iv in zip(vals, inner.invars, strict=False)]
            outs = self.walk(inner, local)
            return [_tiled(o, ov.aval) for o, ov in zip(outs, eqn.outvars, strict=False)] + none[
                len(outs) :
            ]
        if name == "scan":
            body, (nc, _) = p["jaxpr"], scan_counts(p, len(vals))
            self.closed(body, [*vals[:nc], *[None] * (len(vals) - nc)])
            return none
        if name == "while":
            cn, bn = int(p["cond_nconsts"]), int(p["body_nconsts"])
            rest = [None] * (len(vals) - cn - bn)
            self.closed(p["body_jaxpr"], [*vals[cn : cn + bn], *rest])
            return none
        if name == "cond":
            for br in p["branches"]:
                self.closed(br, vals[1:])
            return none
        for key in ("jaxpr", "call_jaxpr", "fun_jaxpr"):
            inner = p.get(key)
            if inner is None:
                continue
            if hasattr(inner, "consts"):
                outs = self.closed(inner, vals)
            elif hasattr(inner, "eqns") and len(inner.invars) == len(vals):
                outs = self.walk(inner, vals)
            else:
                break
            return (outs + none)[:n_out] if len(outs) == n_out else none
        subs = list(_sub_jaxprs(eqn))
        for sub in subs:  # anything else holding code: its kernels, their operands unknown
            self.walk(sub, [None] * len(sub.invars))
        if subs or n_out != 1:
            return none
        return [_shape_op(eqn, vals)]

    def kernel(self, eqn: Any, vals: list[np.ndarray | None]) -> None:
        p = eqn.params
        gm = p["grid_mapping"]
        name = _kernel_name(p)
        types = [hlo_type(v.aval) for v in eqn.invars]
        n_dyn = sum(1 for g in gm.grid if not isinstance(g, int))
        dyn = iter(vals[:n_dyn])
        grid: list[Any] = []
        for g in gm.grid:
            if isinstance(g, int):
                grid.append(g)
            else:
                v = next(dyn)
                grid.append(int(v) if v is not None and v.size == 1 else g)
        prefetch = vals[n_dyn : n_dyn + int(gm.num_index_operands)]
        kernel = p["jaxpr"]
        try:
            counted = count_kernel(kernel, tuple(grid), prefetch)
        except Exception as err:  # a body form the count does not follow: named, not zero
            why = f"shardviz could not read its body ({type(err).__name__}: {str(err)[:120]})"
            counted = GridCount(None, None, why=why)
        hbm = float(sum(_nbytes(v.aval) for v in eqn.invars[n_dyn:]))
        hbm += float(sum(_nbytes(a) for a in p.get("out_avals", ())))
        scope = _scope(eqn)
        if counted.flops is None:
            found = KernelCount(None, None, "not counted", counted.why, hbm)
        else:
            share = model_share(name, _dots(kernel))
            if share is None and scope:
                share = model_share(scope, _dots(kernel))
            dense = counted.dense if counted.dense is not None else counted.flops
            model = counted.flops if share is None else dense * share
            how = "bounded" if counted.bounded else "counted"
            skipped = dense > 0 and counted.flops < dense
            why = f"{counted.flops / dense:.0%} of its grid's matmuls run" if skipped else ""
            backward = is_backward(name, _dots(kernel)) or _is_backward(scope or name)
            found = KernelCount(counted.flops, model, how, why, hbm, backward)
        # The compiled module names the call after the kernel or after the scope around it.
        for alias in dict.fromkeys(n for n in (name, scope) if n):
            self.found.setdefault(kernel_key(alias, types), []).append(found)


def is_backward(name: str, dots: Sequence[float]) -> bool:
    """Whether an attention kernel is the backward pass's, by the part of its matmuls that
    are the model's (a forward kernel's are all of them): a sliding window's or a chunk's
    share of its keys left out, so a recomputed windowed forward is still known as one."""
    share = model_share(_WINDOW.sub("", name), dots)
    return share is not None and share < 1.0


def _is_backward(name: str) -> bool:
    """An attention kernel of the backward pass (dq, dkv, bwd, backward in its name)."""
    low = name.lower()
    return bool(_ATTENTION.search(name)) and any(w in low for w in ("dkv", "dq", "bwd", "backward"))


def _kernel_name(params: Mapping[str, Any]) -> str:
    """The name the compiled module gives the kernel's custom call: the ``pallas_call``'s
    ``name``, else its kernel function's, with what a module name cannot hold as ``_``."""
    name = params.get("name") or getattr(params.get("name_and_src_info"), "name", None)
    if not name:
        info = getattr(params.get("jaxpr"), "debug_info", None)
        name = getattr(info, "func_name", None) or "pallas_call"
    return _sanitized(str(name))


def _sanitized(name: str) -> str:
    """A name as a compiled module's instruction names hold it."""
    return re.sub(r"[^\w.-]", "_", name)


def _scope(eqn: Any) -> str:
    """The innermost ``jax.named_scope`` around an equation ("" when none)."""
    stack = str(getattr(getattr(eqn, "source_info", None), "name_stack", "") or "")
    last = stack.rsplit("/", 1)[-1]
    return _sanitized(last) if last and "(" not in last else ""


def _nbytes(aval: Any) -> int:
    shape = getattr(aval, "shape", None)
    dtype = getattr(aval, "dtype", None)
    if shape is None or dtype is None:
        return 0
    try:
        return math.prod(int(d) for d in shape) * np.dtype(dtype).itemsize
    except TypeError:
        return 0


def _dots(jaxpr: Any) -> list[float]:
    """The flops of each ``dot_general`` the body holds, in body order (all branches, every
    nesting; each counted once, whatever its loops)."""
    out: list[float] = []
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "dot_general":
            out.append(_dot_flops(eqn))
        for sub in _sub_jaxprs(eqn):
            out += _dots(sub)
    return out


def _dot_flops(eqn: Any) -> float:
    """``2 x output elements x contracted size`` of one ``dot_general`` equation."""
    (contract, _), _ = eqn.params["dimension_numbers"]
    lhs = tuple(int(d) for d in eqn.invars[0].aval.shape)
    out = tuple(int(d) for d in eqn.outvars[0].aval.shape)
    return 2.0 * math.prod(out) * math.prod(lhs[d] for d in contract)


def kernel_table(
    closed_jaxpr: Any, args: Sequence[Any] | None = None
) -> dict[KernelKey, KernelCount]:
    """Each Pallas kernel call of a traced program (a ``ClosedJaxpr``) with its count per
    call. ``args``: the program's flat arguments where their values are known (a paged
    kernel's sequence lengths), else nothing is assumed of them. Calls of one kernel with
    one signature but different counts (two masks) are averaged and marked ``bounded``."""
    walker = _Walker()
    flat = [_known(a) if a is not None else None for a in (args or ())]
    n_in = len(closed_jaxpr.jaxpr.invars)
    walker.closed(closed_jaxpr, (flat + [None] * n_in)[:n_in])
    table: dict[KernelKey, KernelCount] = {}
    for key, counts in walker.found.items():
        first = counts[0]
        if all(c == first for c in counts) or first.flops is None:
            table[key] = first
            continue
        known = [c for c in counts if c.flops is not None]
        flops = sum(c.flops or 0.0 for c in known) / len(known)
        model = sum(c.model_flops or 0.0 for c in known) / len(known)
        why = "calls of one signature compute different blocks: their mean"
        table[key] = KernelCount(flops, model, "bounded", why, first.hbm_bytes)
    return table
