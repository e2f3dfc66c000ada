"""Run a compiled program for real: time it, check it against one device, profile it."""

from __future__ import annotations

import contextlib
import glob
import os
import re
import shutil
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from shardviz.capture.calls import (
    Filtered,
    arrays_only,
    context_mesh,
    in_mesh,
    is_array,
    one_device_like,
    plain_function,
)
from shardviz.capture.interrupts import interrupts_deferred
from shardviz.capture.layout import path_str
from shardviz.capture.processes import agreed_max, host_value, local_device, local_pieces
from shardviz.errors import CompileError, problem
from shardviz.model import Check, OpEvent, OpTiming

#: Executing a collective with more participants than this on CPU aborts the whole process
#: (a rendezvous timeout, then SIGABRT): a notebook kernel would die. Measured on jax 0.10.2.
CPU_MAX_PARTICIPANTS = 256


def _block(tree: Any) -> Any:
    return jax.block_until_ready(tree)


Fresh = Callable[[], tuple[tuple, dict]]


def run_steps(
    call: Any, args: tuple, kwargs: dict, steps: int, fn_name: str, *, fresh: Fresh | None = None
):
    """Run once (first run) then ``steps`` more; return outputs, first seconds, step samples.

    ``fresh`` (for a program that donates its inputs) gives new ``(args, kwargs)`` for each
    run, made before the clock starts: a donated buffer is never passed twice.
    """
    try:
        a, k = fresh() if fresh else (args, kwargs)
        t0 = time.perf_counter()
        out = _block(call(*a, **k))
        first = time.perf_counter() - t0
        samples = []
        for _ in range(steps):
            a, k = fresh() if fresh else (args, kwargs)
            t0 = time.perf_counter()
            _block(call(*a, **k))
            samples.append(time.perf_counter() - t0)
    except Exception as err:
        text = str(err)
        oom = "RESOURCE_EXHAUSTED" in text or "out of memory" in text.lower()
        cause = "the devices ran out of memory" if oom else f"{type(err).__name__}: {text[:300]}"
        fix = (
            "shard the largest arguments over more devices (see report.memory with run=False)"
            if oom
            else "run it with run=False to inspect the compiled program, or call it without "
            "shardviz to see the full error"
        )
        raise CompileError(
            problem(f"function {fn_name!r}", f"running it failed: {cause}", fix)
        ) from err
    return out, first, samples


def _to_single_device(tree: Any, device: Any) -> Any:
    def move(x: Any) -> Any:
        if isinstance(x, jax.Array):
            return jax.device_put(host_value(x), device)
        return x

    return jax.tree.map(move, tree)


def tolerance_rule(
    dtype: Any, computed_in: Any = None, tolerance: float | None = None
) -> tuple[float, str]:
    """The relative tolerance of outputs of ``dtype`` (times ``max(1, |reference|)``) and
    how to say it: float64 1e-9; float32 and complex64 1e-3 (sums run in another order when
    sharded, and Adam's ``m / sqrt(v)`` amplifies those last bits on near-zero gradients);
    16 bits and fewer 2e-2, or twice the type's epsilon where that is larger (float8);
    integers and bools exactly.

    ``computed_in``: the float dtype the program did its math in, when it is less precise
    than the outputs (float32 weights updated from bfloat16 matmuls): those outputs carry
    that dtype's error, and get its tolerance. ``tolerance``: the relative tolerance the
    caller gave, for every float output (integers stay exact).
    """
    d = np.dtype(dtype)
    if not (jnp.issubdtype(d, jnp.floating) or jnp.issubdtype(d, jnp.complexfloating)):
        return 0.0, f"{d.name}: exact"
    if tolerance is not None:
        return tolerance, f"{d.name}: {tolerance:g} x max(1, |reference|) (tolerance= given)"
    real = np.finfo(d).dtype if d.kind == "c" else d
    said = d.name
    if computed_in is not None:
        inner = np.dtype(computed_in)
        if jnp.issubdtype(inner, jnp.floating) and inner.itemsize < real.itemsize:
            real, said = inner, f"{d.name} computed in {inner.name}"
    bits = 8 * real.itemsize
    if bits >= 64:
        rel = 1e-9
    elif bits == 32:
        rel = 1e-3
    else:
        rel = max(2e-2, 2 * float(jnp.finfo(real).eps))
    return rel, f"{said}: {rel:g} x max(1, |reference|)"


def _numeric(dtype: Any) -> bool:
    d = np.dtype(dtype)
    return d == np.bool_ or bool(jnp.issubdtype(d, jnp.number))


def first_line(err: BaseException, limit: int = 300) -> str:
    """An error's first line, cut at a word boundary when longer than ``limit``."""
    text = str(err).strip()
    line = text.splitlines()[0] if text else ""
    if len(line) <= limit:
        return line
    cut = line[:limit].rsplit(" ", 1)[0]
    return cut + " ..."


def reference_outputs(fn: Any, args: tuple, kwargs: dict) -> Any:
    """``fn`` run unsharded on one device: array leaves moved there, every other leaf (static
    arguments, an activation function in a module) compiled in; outputs as
    :func:`~shardviz.capture.calls.arrays_only`.

    Under ``with jax.set_mesh(mesh):`` the context mesh would pull the run back onto the
    mesh's devices; it runs under a one-device mesh with the same axis names instead, so a
    bare ``P('data')`` inside still resolves (and splits nothing).
    """
    device = local_device()
    a, k = _to_single_device(args, device), _to_single_device(kwargs, device)
    plain = plain_function(fn)
    if all(is_array(x) for x in jax.tree.leaves((a, k))):
        program = jax.jit(plain)  # the same function each time: jax's own cache serves repeats
    else:
        program = jax.jit(Filtered(plain, a, k))
        a, k = arrays_only(a), arrays_only(k)
    mesh = context_mesh()
    # Ctrl-C waits for the compile (one inside it can crash the interpreter as it exits).
    with (
        interrupts_deferred(),
        in_mesh(one_device_like(mesh, device) if mesh is not None else None),
    ):
        out = program(*a, **k)
    return _block(out)


def check_against_one_device(
    fn: Any,
    args: tuple,
    kwargs: dict,
    outputs: Any,
    computed_in: Any = None,
    tolerance: float | None = None,
) -> tuple[Check | None, str | None, Any]:
    """Run ``fn`` unsharded on one device and compare with the sharded ``outputs``
    (:func:`compare_outputs`, with ``computed_in`` and ``tolerance``).

    Returns the check (or ``None`` and the reason it could not run, e.g. the function pins
    shardings to a mesh inside, as ``shard_map`` and sharding constraints do) and the
    reference outputs.
    """
    try:
        ref = reference_outputs(fn, args, kwargs)
    except Exception as err:  # the function may only make sense on its mesh
        return (
            None,
            "no single-device check: the function does not run unsharded on one device "
            f"({type(err).__name__}: {first_line(err)}); "
            "pass reference= an unconstrained version of it",
            None,
        )
    check = compare_outputs(outputs, ref, computed_in, tolerance)
    if check is None:
        return None, "no single-device check: the outputs have a different structure", ref
    return check, None, ref


#: The ops whose operands' float type is the precision a program computes in.
_COMPUTE_OPS = ("dot_general", "dot", "convolution")
#: A StableHLO tensor type's element type (``tensor<32x64xbf16>`` is ``bf16``).
_TENSOR_TYPE = re.compile(r"tensor<(?:[\d?]+x)*([A-Za-z]\w*)>")
#: An HLO instruction: its name, result element type and opcode (``%dot.1 = f32[8,16]{1,0}
#: dot(...)``); and an operand's name.
_HLO_OP = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*(\w+)\[[^=]*?\s([\w\-]+)\((.*)$")
_HLO_OPERAND = re.compile(r"%([\w.\-]+)")


def _float_dtype(name: str) -> np.dtype | None:
    """The numpy float dtype of an HLO/StableHLO element type (``bf16``, ``f32``,
    ``f8E4M3FN``), or ``None`` for any other (integers, tuples, predicates)."""
    if not name.startswith(("f", "bf")):
        return None
    full = {"bf16": "bfloat16", "f16": "float16", "f32": "float32", "f64": "float64"}.get(name)
    try:
        return np.dtype(jnp.dtype(full or f"float8_{name[2:].lower()}"))
    except TypeError:
        return None


def compute_dtype(text: str) -> np.dtype | None:
    """The narrowest float type the operands of ``text``'s matmuls and convolutions have: the
    precision a program computes in (``bfloat16`` for a step that casts float32 weights to
    bfloat16 for its dots); ``None`` when it has no float dot or convolution.

    ``text`` is a StableHLO module (``lowered.as_text()``: the dots as written, before a
    backend widens them, as the CPU's does bfloat16 dots to float32) or an HLO module.
    """
    narrowest: np.dtype | None = None
    types: dict[str, str] = {}  # HLO: each instruction's element type, by name
    for line in text.splitlines():
        found: list[str] = []
        if "stablehlo." in line:
            op = line.split("stablehlo.", 1)[1].split(None, 1)[0].split("(", 1)[0]
            if op in _COMPUTE_OPS and " : (" in line:
                found = _TENSOR_TYPE.findall(line.rsplit(" : (", 1)[1].split(") ->", 1)[0])
        else:
            m = _HLO_OP.match(line)
            if m is None:
                continue
            name, result, op, rest = m.groups()
            types[name] = result
            if op in _COMPUTE_OPS:
                operands = rest.split(")", 1)[0]
                found = [types.get(o, "") for o in _HLO_OPERAND.findall(operands)]
        for element in found:
            d = _float_dtype(element)
            if d is not None and (narrowest is None or d.itemsize < narrowest.itemsize):
                narrowest = d
    return narrowest


def program_compute_dtype(lowered: Any, hlo_text: str) -> np.dtype | None:
    """:func:`compute_dtype` of a compiled program: the narrower of its lowered module's (the
    dots as the program wrote them; ``lowered`` may be ``None``) and its compiled module's."""
    found = [compute_dtype(hlo_text)]
    if lowered is not None:
        # A stage that cannot print its module: the compiled text alone says.
        with contextlib.suppress(Exception):
            found.append(compute_dtype(lowered.as_text()))
    dtypes = [d for d in found if d is not None]
    return min(dtypes, key=lambda d: d.itemsize) if dtypes else None


def _widened(x: np.ndarray) -> np.ndarray:
    """``x`` in float64, complex128 for complex values (their imaginary part kept)."""
    return np.asarray(x).astype(np.complex128 if x.dtype.kind == "c" else np.float64)


def difference(got: np.ndarray, want: np.ndarray) -> float:
    """The largest ``|got - want|`` element-wise (the magnitude of a complex difference),
    NaN and infinities taken as values: NaN against NaN and an infinity against the same
    infinity differ by 0, NaN or an infinity against anything else by infinity."""
    if not np.size(got):
        return 0.0
    g, w = _widened(np.asarray(got)), _widened(np.asarray(want))
    with np.errstate(invalid="ignore"):
        d = np.abs(g - w)
        same = (g == w) | (np.isnan(g) & np.isnan(w))
    d = np.where(same, 0.0, np.where(np.isfinite(d), d, np.inf))
    return float(np.max(d))


def compare_outputs(
    outputs: Any, ref: Any, computed_in: Any = None, tolerance: float | None = None
) -> Check | None:
    """Sharded outputs against reference outputs, leaf by leaf (None if the trees differ),
    each within :func:`tolerance_rule` of its dtype (and of ``computed_in``, the dtype the
    program computed in, when that is less precise; or the relative ``tolerance`` given).
    The check names the leaf closest to failing (``out/0/w1``: the output's path) and its
    largest difference."""
    got_leaves = jax.tree.leaves(outputs)
    ref_flat = jax.tree_util.tree_flatten_with_path({"out": ref})[0]
    if len(got_leaves) != len(ref_flat):
        return None
    # Per leaf: its path, the largest difference (over this process's shards, then over
    # every process), the reference's scale and the dtype's tolerance.
    leaves: list[tuple[str, float, float, str]] = []
    diffs: list[float] = []
    for got, (keys, want) in zip(got_leaves, ref_flat, strict=True):
        w = np.asarray(want)
        if not _numeric(w.dtype):
            continue
        diff = 0.0
        for g, part in local_pieces(got, w):
            diff = max(diff, difference(g, part))
        wide = _widened(w)
        finite = np.abs(wide[np.isfinite(wide)])
        scale = float(np.max(finite)) if finite.size else 0.0
        rel, rule = tolerance_rule(w.dtype, computed_in, tolerance)
        diffs.append(diff)
        leaves.append((path_str(keys), scale, rel * max(1.0, scale), rule))
    max_abs, max_rel, tol, ok, worst, said = 0.0, 0.0, 0.0, True, -1.0, ""
    leaf, leaf_diff = "", 0.0
    for diff, (path, scale, leaf_tol, rule) in zip(agreed_max(diffs), leaves, strict=True):
        max_abs = max(max_abs, diff)
        max_rel = max(max_rel, diff / scale if scale else diff)
        ratio = diff / leaf_tol if leaf_tol else (0.0 if diff == 0 else float("inf"))
        if ratio > worst:  # report the tolerance of the leaf closest to failing
            worst, tol, said, leaf, leaf_diff = ratio, leaf_tol, rule, path, diff
        ok = ok and diff <= leaf_tol
    return Check(max_abs_diff=max_abs, max_rel_diff=max_rel, tolerance=tol, matches=ok,
                 tolerance_rule=said, leaf=leaf, leaf_diff=leaf_diff)  # fmt: skip


def profile_trace(
    call: Any,
    args: tuple,
    kwargs: dict,
    module_name: str,
    steps: int = 3,
    *,
    fresh: Fresh | None = None,
) -> tuple[tuple[OpTiming, ...], tuple[OpEvent, ...]]:
    """Trace a few runs with ``jax.profiler``: each HLO op's median duration, and every op of
    the last run per device (the timeline).

    Durations come from the op events of the trace (matched to the compiled module's name);
    on CPU the threads stand in for devices, so collective times are mostly waiting and are
    marked illustrative. ``fresh`` is as for :func:`run_steps` (all copies are made before
    the trace starts).
    """
    calls = [fresh() if fresh else (args, kwargs) for _ in range(steps)]
    folder = tempfile.mkdtemp(prefix="shardviz-profile-")
    durations: dict[str, list[float]] = defaultdict(list)
    # (run id, device, op, start ns, duration ns) of each op event that names its device.
    raw: list[tuple[int, int, str, float, float]] = []
    try:
        with jax.profiler.trace(folder):
            for a, k in calls:
                _block(call(*a, **k))
        files = glob.glob(os.path.join(folder, "**", "*.xplane.pb"), recursive=True)
        if not files:
            return (), ()
        data = jax.profiler.ProfileData.from_file(files[0])
        for plane in data.planes:
            plane_device = _plane_device(plane.name)
            for line in plane.lines:
                for event in line.events:
                    stats = dict(event.stats)
                    op = stats.get("hlo_op")
                    if op is None or stats.get("hlo_module") not in (module_name, None):
                        continue
                    durations[str(op)].append(float(event.duration_ns) * 1e-9)
                    run = stats.get("run_id", 0)  # accelerator planes may not say: one run
                    device = stats.get("device_ordinal", plane_device)
                    if isinstance(run, int) and isinstance(device, int):
                        raw.append(
                            (run, device, str(op), float(event.start_ns), float(event.duration_ns))
                        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    illustrative = jax.default_backend() == "cpu"
    timings = tuple(
        OpTiming(name=op, seconds=statistics.median(v), count=len(v), illustrative=illustrative)
        for op, v in sorted(durations.items())
    )
    return timings, _last_run(raw)


def _plane_device(name: str) -> int | None:
    """The device number of an accelerator plane (``/device:GPU:3`` is 3), else None."""
    match = re.fullmatch(r"/device:[A-Z]+:(\d+)", name)
    return int(match.group(1)) if match else None


def _last_run(raw: list[tuple[int, int, str, float, float]]) -> tuple[OpEvent, ...]:
    """The events of the last traced run (the steadiest), timed from its first op."""
    if not raw:
        return ()
    last = max(raw, key=lambda r: r[3])[0]
    run = [r for r in raw if r[0] == last]
    t0 = min(r[3] for r in run)
    return tuple(
        OpEvent(device=d, name=op, start=(s - t0) * 1e-9, seconds=n * 1e-9)
        for _, d, op, s, n in sorted(run, key=lambda r: (r[1], r[3]))
    )
