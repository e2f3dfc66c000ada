"""``explain(fn, *args)``: what the compiler did with the partition specs, then a live run."""

from __future__ import annotations

import functools
import inspect
import os
import statistics
from collections import OrderedDict
from dataclasses import replace
from typing import Any

import jax
from jax.sharding import NamedSharding

from shardviz.errors import CompileError, problem
from shardviz.model import Cost, MeshLayout, Report, Source, Timing, TreeLayout

from . import hlo
from .compile import Compiled, device_order, global_cost, lower_and_compile
from .layout import layout_tree
from .memory import device_stats, memory_report
from .mesh import mesh_layout
from .run import CPU_MAX_PARTICIPANTS, check_against_one_device, profile_ops, run_steps

_CACHE_SIZE = 32
_cache: OrderedDict[Any, tuple[Compiled, Report]] = OrderedDict()


def clear_cache() -> None:
    """Forget every compiled program ``explain`` kept."""
    _cache.clear()


def _fn_name(fn: Any) -> str:
    plain = getattr(fn, "__wrapped__", fn)
    return getattr(plain, "__qualname__", None) or getattr(plain, "__name__", None) or repr(fn)


def _leaf_key(x: Any) -> Any:
    if isinstance(x, jax.Array | jax.ShapeDtypeStruct):
        return ("array", tuple(x.shape), str(x.dtype), getattr(x, "sharding", None))
    try:
        hash(x)
    except TypeError:
        return ("value", type(x).__name__, id(x))
    return ("value", type(x).__name__, x)


def _key(fn: Any, args: tuple, jit_kwargs: dict) -> Any:
    leaves, treedef = jax.tree.flatten(args)
    try:
        kw = tuple(sorted(jit_kwargs.items()))
        hash(kw)
    except TypeError:
        kw = repr(sorted(jit_kwargs.items()))
    # The partitioner in use changes the program for the same function and shardings.
    partitioner = bool(getattr(jax.config, "jax_use_shardy_partitioner", True))
    return (fn, kw, treedef, tuple(_leaf_key(x) for x in leaves), partitioner)


def _named_args(fn: Any, args: tuple) -> dict[str, Any]:
    """The arguments by parameter name (``params``, ``opt_state``, ``batch``...) for leaf paths."""
    plain = getattr(fn, "__wrapped__", fn)
    try:
        names = list(inspect.signature(plain).parameters)
    except (TypeError, ValueError):
        names = []
    out: dict[str, Any] = {}
    for i, a in enumerate(args):
        name = names[i] if i < len(names) and not names[i].startswith("*") else f"arg{i}"
        out[name if name not in out else f"arg{i}"] = a
    return out


def _is_abstract(args: tuple) -> bool:
    return any(isinstance(x, jax.ShapeDtypeStruct) for x in jax.tree.leaves(args))


def _mesh_of(compiled: Any) -> MeshLayout | None:
    for s in jax.tree.leaves(compiled.input_shardings) + jax.tree.leaves(compiled.output_shardings):
        if isinstance(s, NamedSharding):
            return mesh_layout(s.mesh)
    return None


def _outputs(lowered: Any, compiled: Any) -> TreeLayout:
    infos = jax.tree.leaves(lowered.out_info)
    shardings = jax.tree.leaves(compiled.output_shardings)
    if len(infos) != len(shardings):
        return TreeLayout(())
    outs = [
        jax.ShapeDtypeStruct(i.shape, i.dtype, sharding=s)
        for i, s in zip(infos, shardings, strict=True)
    ]
    struct = jax.tree.structure(lowered.out_info)
    return layout_tree({"out": jax.tree.unflatten(struct, outs)})


def _cost(comp: Compiled) -> Cost | None:
    """Per device from the compiled program; global from the program before partitioning."""
    try:
        per_dev = comp.compiled.cost_analysis()
    except Exception:  # some backends raise instead of returning None
        per_dev = None
    if isinstance(per_dev, list | tuple):
        per_dev = per_dev[0] if per_dev else None
    if not isinstance(per_dev, dict):
        per_dev = None
    glob = global_cost(comp)
    if per_dev is None and glob is None:
        return None

    def get(d: dict | None, k: str) -> float | None:
        return float(d[k]) if d and k in d else None

    return Cost(
        flops_per_device=get(per_dev, "flops"),
        bytes_accessed_per_device=get(per_dev, "bytes accessed"),
        flops_global=get(glob, "flops"),
        bytes_accessed_global=get(glob, "bytes accessed"),
    )


def _analyse(fn: Any, args: tuple, jit_kwargs: dict) -> tuple[Compiled, Report]:
    comp = compile_program(fn, args, jit_kwargs)
    return comp, analyse_program(fn, args, comp)


def compile_program(fn: Any, args: tuple, jit_kwargs: dict) -> Compiled:
    """The first half of :func:`explain`: jit, lower and compile, with the dump captured."""
    name = _fn_name(fn)
    try:
        jitted = jax.jit(fn, **jit_kwargs)
    except Exception as err:
        raise CompileError(
            problem(f"function {name!r}", f"jax.jit refused it ({err})", "check the jit options")
        ) from err
    return lower_and_compile(jitted, args, {}, name)


def analyse_program(fn: Any, args: tuple, comp: Compiled) -> Report:
    """The second half: read the compiled program into a (not yet run) report.

    Pure reading of ``comp`` (no jax state changes), so it may run on another thread while
    the next program compiles.
    """
    name = _fn_name(fn)
    mesh = _mesh_of(comp.compiled)
    ids = device_order(comp.compiled)
    notes: list[str] = []
    try:
        collectives = hlo.collectives(comp.hlo_text, device_ids=ids, mesh=mesh)
    except hlo.HloParseError as err:  # a format this jax version prints that we do not know
        collectives = ()
        notes.append(f"the collective ledger is empty: shardviz could not read the HLO ({err})")
    try:
        intermediates = (
            hlo.intermediates(comp.propagated_text, mesh=mesh, device_ids=ids)
            if comp.propagated_text and mesh is not None
            else ()
        )
    except hlo.HloParseError as err:
        intermediates = ()
        notes.append(f"no intermediate shardings: shardviz could not read the dump ({err})")
    collectives = _trim_sources(hlo.link_reshards(collectives, intermediates))
    intermediates = _trim_sources(intermediates)
    arguments = layout_tree(_named_args(fn, args), skip_non_arrays=True)
    return Report(
        function=name,
        platform=jax.default_backend(),
        mesh=mesh,
        arguments=arguments,
        outputs=_outputs(comp.lowered, comp.compiled),
        collectives=collectives,
        intermediates=intermediates,
        memory=memory_report(comp.compiled, arguments),
        cost=_cost(comp),
        timing=None,
        check=None,
        ran=False,
        notes=tuple(notes),
    )


_CAPTURE_DIR = os.path.dirname(os.path.abspath(__file__))
#: shardviz's own machinery between the user and jax: capture (explain > _analyse > ...) and the
#: widgets that call it (Explorer > ExplorerSession.run > explain). Never where a collective
#: comes from. (The model zoo in shardviz/strategies is user-level code and stays.)
_MACHINERY_DIRS = (
    _CAPTURE_DIR + os.sep,
    os.path.join(os.path.dirname(_CAPTURE_DIR), "widgets") + os.sep,
)
#: Frames of the machinery that runs the user's code (a Jupyter kernel, the interpreter's
#: module runner, test runners): never where a collective comes from.
_RUNNER_PARTS = (
    "/ipykernel/", "/IPython/", "/runpy.py", "/asyncio/", "/tornado/", "/traitlets/",
    "/jupyter_client/", "/zmq/", "/threading.py", "/concurrent/", "/_pytest/", "/pluggy/",
    "/nbclient/", "<frozen ",
)  # fmt: skip


@functools.lru_cache(maxsize=4096)
def _is_runner_frame(file: str) -> bool:
    path = os.path.abspath(file) if not file.startswith("<") else file
    return path.startswith(_MACHINERY_DIRS) or any(part in path for part in _RUNNER_PARTS)


@functools.lru_cache(maxsize=4096)
def _trim(source: Source | None) -> Source | None:
    """Drop shardviz's own machinery frames (capture, widgets) and the frames of the kernel or
    runner around the user's code from a call chain."""
    if source is None:
        return None
    kept = tuple(f for f in source.frames if not _is_runner_frame(f.file))
    return Source(kept) if kept != source.frames else source


def _trim_sources(items: tuple) -> tuple:
    out = []
    for x in items:
        trimmed = _trim(x.source)
        out.append(x if trimmed is x.source else replace(x, source=trimmed))
    return tuple(out)


def _participants(report: Report) -> int:
    most = 0
    for c in report.collectives:
        n = len({d for p in c.pairs for d in p}) if c.pairs else c.group_size
        most = max(most, n)
    return most


def remember_program(fn: Any, args: tuple, jit_kwargs: dict, comp: Compiled, report: Report):
    """Keep a compiled program and its report: a later :func:`explain` of the same function,
    shapes and shardings (real arrays or ``ShapeDtypeStruct``s) reuses them."""
    _cache[_key(fn, args, jit_kwargs)] = (comp, report)
    while len(_cache) > _CACHE_SIZE:
        _cache.popitem(last=False)


def explain(
    fn: Any,
    *args: Any,
    run: bool = True,
    steps: int = 5,
    profile: bool = False,
    check: bool = True,
    reference: Any = None,
    **jit_kwargs: Any,
) -> Report:
    """Compile ``fn`` on its (sharded) arguments, explain the result, and run it for real.

    Args:
        fn: a function or an already-jitted one.
        *args: its arguments: real arrays (placed with shardings) or ``jax.ShapeDtypeStruct``
            with shardings (then nothing can run; the report says so).
        run: run the compiled program: first run, then ``steps`` timed steps.
        steps: timed steady-state steps (the median is reported; the first run is apart).
        profile: also trace a few steps with ``jax.profiler`` and time each ledger entry.
        check: compare the outputs with an unsharded single-device run.
        reference: the function to run for that check (default ``fn`` itself); give an
            unconstrained twin when ``fn`` pins shardings inside (constraints, shard_map).
        **jit_kwargs: passed to ``jax.jit`` (``in_shardings``, ``donate_argnums``, ...).

    Returns:
        A :class:`~shardviz.model.Report`. Repeated calls with the same function, shapes and
        shardings reuse the compiled program.
    """
    report, _, _ = explain_run(
        fn, *args, run=run, steps=steps, profile=profile, check=check, reference=reference,
        **jit_kwargs,
    )  # fmt: skip
    return report


def explain_run(
    fn: Any,
    *args: Any,
    run: bool = True,
    steps: int = 5,
    profile: bool = False,
    check: bool = True,
    reference: Any = None,
    **jit_kwargs: Any,
) -> tuple[Report, Any, Any]:
    """:func:`explain`, also returning the sharded outputs and the reference outputs (or None)."""
    key = _key(fn, args, jit_kwargs)
    if key in _cache:
        _cache.move_to_end(key)
        comp, base = _cache[key]
    else:
        comp, base = _analyse(fn, args, jit_kwargs)
        remember_program(fn, args, jit_kwargs, comp, base)
    if not run:
        return base, None, None
    notes: list[str] = list(base.notes)
    if _is_abstract(args):
        return _compile_only(
            base,
            (
                "compile-only: the arguments are ShapeDtypeStructs (hypothetical arrays), so "
                "there is nothing to run; pass real arrays to time and check the program"
            ),
        )
    most = _participants(base)
    if base.platform == "cpu" and most > CPU_MAX_PARTICIPANTS:
        return _compile_only(
            base,
            (
                f"compile-only: a collective here has {most} participants; executing more "
                f"than {CPU_MAX_PARTICIPANTS} on fake CPU devices aborts the whole process "
                "(it would kill the kernel), so shardviz did not run it"
            ),
        )
    donating = bool(jit_kwargs.get("donate_argnums") or jit_kwargs.get("donate_argnames"))
    call = comp.compiled
    name = base.function
    if donating:

        def call(*a: Any) -> Any:  # donated buffers die after each call: feed fresh copies
            return comp.compiled(
                *jax.tree.map(lambda x: x.copy() if isinstance(x, jax.Array) else x, a)
            )

    outputs, first, samples = run_steps(call, args, {}, max(1, steps), name)
    timing = Timing(
        compile_seconds=comp.lower_seconds + comp.compile_seconds,
        first_run_seconds=first,
        step_seconds=statistics.median(samples),
        steps=len(samples),
        step_samples=tuple(samples),
    )
    chk, ref = None, None
    if check:
        chk, why, ref = check_against_one_device(reference or fn, args, {}, outputs)
        if why:
            notes.append(why)
    prof = None
    if profile:
        module = comp.hlo_text.split(None, 2)[1].rstrip(",") if comp.hlo_text else ""
        prof = profile_ops(call, args, {}, module)
        if prof and prof[0].illustrative:
            notes.append(
                "profile on fake CPU devices: threads stand in for devices, so collective "
                "times are mostly waiting; the timings are illustrative, not a prediction"
            )
    memory = base.memory
    ids = [d.id for d in base.mesh.devices] if base.mesh else []
    stats = device_stats(ids)
    if stats:
        memory = replace(memory, device_stats=stats)
    report = replace(
        base, timing=timing, check=chk, profile=prof, ran=True, memory=memory, notes=tuple(notes)
    )
    return report, outputs, ref


def _compile_only(base: Report, note: str) -> tuple[Report, None, None]:
    return replace(base, notes=(*base.notes, note)), None, None
