"""``explain(fn, *args)``: what the compiler did with the partition specs, then a live run."""

from __future__ import annotations

import functools
import linecache
import numbers
import os
import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

import jax

from shardviz.analysis.collective_why import collective_reasons
from shardviz.analysis.detect import CompilerEvidence, candidates
from shardviz.analysis.detect.fix_code import CodeNames, with_code
from shardviz.analysis.estimate.step import with_estimate
from shardviz.capture import hlo
from shardviz.capture.calls import (
    CallPlan,
    Filtered,
    abstract_placed,
    arrays_only,
    donated_flags,
    equinox_jit,
    function_name,
    is_jax_jit,
    named_args,
    needs_filter,
    needs_own_jit,
    nnx_jit,
    placed_for,
    refuse_deleted,
    statics,
    user_function,
)
from shardviz.capture.compile import (
    Compiled,
    EarlyWork,
    is_compile_only,
    lower_and_compile,
    platform_of,
    program_devices,
    read_compiled,
    text_cost,
)
from shardviz.capture.hlo.compiler_log import FullRemat, full_rematerializations
from shardviz.capture.host_split import host_split
from shardviz.capture.layout import layout_tree
from shardviz.capture.leaves import first_named_mesh
from shardviz.capture.memory import device_stats, memory_report
from shardviz.capture.mesh import mesh_layout
from shardviz.capture.offload import program_offload
from shardviz.capture.places import labelled, without_repeats
from shardviz.capture.processes import host_figures
from shardviz.capture.run import (
    CPU_MAX_PARTICIPANTS,
    check_against_one_device,
    profile_trace,
    program_compute_dtype,
    run_steps,
)
from shardviz.capture.stages import StageProgram, jax_stage
from shardviz.capture.step_cost import ModuleWork, module_work, program_cost
from shardviz.capture.topology import topology_of
from shardviz.capture.user_names import caller_namespace, leaf_expressions, mesh_name
from shardviz.errors import CompileError, ShardvizError, problem
from shardviz.explainer.cache import PROGRAMS, remember_program
from shardviz.explainer.call import Call
from shardviz.explainer.detector_inputs import compiler_evidence, with_trips
from shardviz.explainer.fix_check import (
    FixTrial,
    Tried,
    outcome,
    tried_with,
    untried_findings,
    with_target,
)
from shardviz.model import Collective, Cost, Frame, MeshLayout, Report, Source, Timing, TreeLayout
from shardviz.model.arguments import finite_number


def _is_abstract(args: tuple) -> bool:
    return any(isinstance(x, jax.ShapeDtypeStruct) for x in jax.tree.leaves(args))


def _mesh_of(compiled: Any) -> MeshLayout | None:
    return _first_mesh(
        jax.tree.leaves(compiled.input_shardings) + jax.tree.leaves(compiled.output_shardings)
    )


def _sub_byte(tree: Any) -> bool:
    """Whether an array leaf has a type narrower than a byte (int4, uint2, float4...)."""
    return any(
        isinstance(x, jax.Array) and jax.dtypes.itemsize_bits(x.dtype) < 8
        for x in jax.tree.leaves(tree)
    )


def _argument_shardings(args: tuple) -> list:
    return [
        x.sharding
        for x in jax.tree.leaves(args)
        if isinstance(x, jax.Array | jax.ShapeDtypeStruct) and getattr(x, "sharding", None)
    ]


def _first_mesh(shardings: list) -> MeshLayout | None:
    mesh = first_named_mesh(shardings)
    return None if mesh is None else mesh_layout(mesh)


@dataclass(frozen=True)
class _EarlyReading:
    """Read from the dumps while the compiler still ran, for the mesh and device order of
    the lowered program (used only if the compiled program's agree)."""

    mesh: MeshLayout | None
    device_ids: tuple[int, ...]
    intermediates: tuple = ()
    #: The ledger of the partitioned module (TPU/GPU) and of the final one (TPU).
    partitioned: tuple | None = None
    final: tuple | None = None
    global_cost: dict | None = None
    #: The program before SPMD partitioning, parsed (the reasons for collectives read it).
    propagated: hlo.HloModule | None = None
    #: The final ledger with each collective's reason, worked out on the dump thread.
    reasoned: tuple | None = None
    #: ``intermediates`` with their sources trimmed from ``entry`` on, as the report shows
    #: them (and ``reasoned`` read them).
    lines: tuple | None = None
    entry: Entry | None = None
    #: ``reasoned`` is the report's ledger as it is (no partitioned module's twins merged
    #: into it: a CPU program).
    whole: bool = False


def _agreeing(early: Any, mesh: MeshLayout | None, ids: list[int]) -> _EarlyReading | None:
    """``early`` if it was read for this mesh and device order (else it is read again)."""
    if isinstance(early, _EarlyReading) and early.mesh == mesh and early.device_ids == tuple(ids):
        return early
    return None


def _early_reading(lowered: Any, entry: Entry | None = None) -> EarlyWork | None:
    """The work :func:`lower_and_compile` may run on the dumps during the compile (``None``
    when the lowered program does not say its shardings)."""
    try:  # jax 0.10 keeps the shardings it will compile with in the lowering's arguments
        args = lowered._lowering.compile_args
        shardings = jax.tree.leaves(args["in_shardings"]) + jax.tree.leaves(args["out_shardings"])
        assignment = next(
            s._device_assignment for s in shardings if getattr(s, "_device_assignment", None)
        )
    except Exception:
        return None
    mesh = _first_mesh(shardings)
    ids = tuple(int(d.id) for d in assignment)
    accelerator = platform_of(assignment[0]) != "cpu"

    state: dict[str, _EarlyReading] = {}

    texts: dict[str, str] = {}

    def work(propagated: str, partitioned: str) -> _EarlyReading:
        texts["propagated"] = propagated
        module = hlo.parse_hlo_module(propagated) if propagated and mesh is not None else None
        intermediates = (
            hlo.intermediates(module, mesh=mesh, device_ids=ids)
            if module is not None and mesh is not None
            else ()
        )
        state["shardings"] = _EarlyReading(
            mesh=mesh,
            device_ids=ids,
            intermediates=intermediates,
            lines=_trim_sources(intermediates, entry),  # as analyse_program trims them
            entry=entry,
            propagated=module,
            partitioned=(
                hlo.collectives(partitioned, device_ids=ids, mesh=mesh)
                if accelerator and partitioned
                else None
            ),
            global_cost=text_cost(propagated) if propagated else None,
        )
        return state["shardings"]

    def cost(module: hlo.HloModule, text: str, kernels: Any) -> ModuleWork:
        early = state.get("shardings")

        def propagated() -> hlo.HloModule | None:  # parsed on the thread only if needed
            if early is not None and early.propagated is not None:
                return early.propagated
            return hlo.parse_hlo_module(texts["propagated"]) if texts.get("propagated") else None

        return module_work(module, text, kernels, propagated)

    def final(module: hlo.HloModule) -> _EarlyReading:
        ledger = hlo.collectives(module, device_ids=ids, mesh=mesh)
        early = state.get("shardings")
        reasoned = None
        if early is not None and early.propagated is not None:  # the reasons, while it compiles
            twins = early.partitioned  # what the backend's rewrites lost, as analyse_program
            merged = hlo.with_partitioned(ledger, twins) if twins is not None else ledger
            linked = hlo.link_reshards(merged, early.intermediates)
            trimmed = _trim_sources(linked, entry)
            reasoned = collective_reasons(trimmed, early.lines or (), early.propagated, mesh, ids)
            return _EarlyReading(
                mesh=mesh,
                device_ids=ids,
                final=ledger,
                reasoned=reasoned,
                entry=entry,
                whole=twins is None,
            )
        return _EarlyReading(mesh=mesh, device_ids=ids, final=ledger)

    return EarlyWork(shardings=work, final=final, cost=cost)


def _outputs(lowered: Any, compiled: Any) -> TreeLayout:
    lowered = lowered if lowered is not None else compiled  # a Compiled given alone
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


def _cost(comp: Compiled, early: _EarlyReading | None = None) -> Cost | None:
    """Per device from the compiled program; global from the program before partitioning;
    both per step, each loop body counted as often as it runs (:mod:`shardviz.capture.step_cost`);
    each loop's source named as a person names it."""
    work = comp.early.cost  # the final module's per-op cost, worked out during the compile
    if early is None:
        cost = program_cost(comp, work=work)
    else:
        cost = program_cost(comp, early.global_cost, early.propagated, work)
    if cost is None:
        return cost
    if cost.kernels:
        cost = replace(cost, kernels=tuple(
            replace(k, source=_caller_of_kernel(k.source)) for k in cost.kernels))  # fmt: skip
    if not cost.loops:
        return cost
    labels: dict[str, str] = {}
    loops = tuple(
        replace(lp, source=Source(labelled(lp.source.frames, labels), lp.source.text))
        if lp.source is not None
        else lp
        for lp in cost.loops
    )
    return replace(cost, loops=loops)


#: jax's own files: a kernel shipped with jax (splash attention) is called from them.
_JAX_DIR = os.path.dirname(os.path.abspath(jax.__file__)) + os.sep


def _caller_of_kernel(source: Source | None) -> Source | None:
    """A kernel's call chain from the user's side: jax's own frames (a shipped kernel's
    wrappers) and shardviz's dropped, so its line is where the program calls it."""
    if source is None:
        return None
    frames = tuple(f for f in source.frames if not os.path.abspath(f.file).startswith(_JAX_DIR))
    return _trim(Source(frames, ""), None) if frames else None


def _analyse(
    call: Call, diagnose: bool = True, names: CodeNames | None = None
) -> tuple[Compiled, Report]:
    comp = compile_program(call.fn, call.args, call.jit_kwargs, call.kwargs)
    report = analyse_program(call.fn, call.args, comp)
    if diagnose:
        report = diagnosed(call, comp, report, names)
    return comp, report


def code_names(fn: Any, args: tuple) -> CodeNames:
    """How the code that called shardviz names the arguments' mesh and leaves."""
    namespace = caller_namespace()
    inside, outside = leaf_expressions(fn, args, namespace)
    return CodeNames(mesh_name(args, namespace), inside, outside)


def diagnosed(call: Call, comp: Compiled, report: Report, names: CodeNames | None = None) -> Report:
    """``report`` with its findings, their fixes kept to be tried (see
    :meth:`~shardviz.Report.try_fixes`): nothing more is compiled here. ``names``: how the
    user's code names the mesh and the leaves, so each fix's code runs as pasted."""
    ids = [int(d.id) for d in program_devices(comp.compiled)]
    evidence = compiler_evidence(report, comp.compiler_log, comp.propagated_text, ids)
    names = names or CodeNames()
    found = [with_code(c, names) for c in candidates(report, evidence)]
    tried = _fix_trier(call, ids, comp)
    trial = FixTrial(
        report.function, ((tuple(found), outcome(report, evidence)),), tried, None, names
    )
    return replace(report, findings=untried_findings(trial))


def _fix_trier(call: Call, ids: list[int], comp: Compiled):
    """How a fix is tried: applied to the call's function and arguments, compiled and read
    (compile-only). The arguments are kept abstract, placed as ``comp`` was compiled for
    them: a kept trial holds none of the caller's arrays, and a program explained again
    with other arrays of the same shapes tries its fixes the same way."""
    if isinstance(call.fn, StageProgram):
        return _untried(call.fn)
    abstract = call.with_arguments(*abstract_placed(comp.compiled, call.args, dict(call.kwargs)))

    def compile_and_read(fixed: Call) -> tuple[Compiled, Report, CompilerEvidence]:
        new = compile_program(fixed.fn, fixed.args, fixed.jit_kwargs, fixed.kwargs)
        rep = analyse_program(fixed.fn, fixed.args, new)
        return new, rep, compiler_evidence(rep, new.compiler_log, new.propagated_text, ids)

    return tried_with(abstract, compile_and_read)


def _untried(stage: StageProgram):
    """How a stage's fixes are tried: they are not (a fix changes the function or its
    arguments' shardings, and a stage has them compiled in)."""
    why = (
        f"{stage.where} has its function and shardings compiled in; explain the step "
        "function itself to try fixes"
    )
    return lambda fix: Tried(None, None, error=why)


def _targeted(call: Call, comp: Compiled, report: Report, target: Any) -> Report:
    """The findings with times on the target and a check of the peak against its HBM."""
    if report.findings is None or report.estimate is None:
        return report
    ids = [int(d.id) for d in program_devices(comp.compiled)]
    return with_target(
        report,
        lambda c, r: estimated(c, r, target),
        _fix_trier(call, ids, comp),
    )


@dataclass
class Program(Compiled):
    """A compiled program and how a call of the user's function maps onto it."""

    plan: CallPlan = field(default_factory=CallPlan)
    #: The jitted function lowered: arrays of sub-byte types (int4, int2) run through it,
    #: since jax's ahead-of-time call refuses their layouts (jax.jit itself takes them).
    jitted: Any = field(default=None, repr=False, compare=False)


def plan_of(comp: Compiled) -> CallPlan:
    """How to call ``comp`` (a program compiled elsewhere takes the arguments as they are)."""
    return comp.plan if isinstance(comp, Program) else CallPlan()


def _jit(fn: Any, args: tuple, kwargs: dict, jit_kwargs: dict) -> tuple[Any, CallPlan]:
    """The jitted function to lower, and how to call it (the plan's ``donated`` not yet known).

    A ``jax.jit`` function that donates or has static arguments, with no options given here,
    is lowered as it is (so they hold); others are jitted again, as before. An
    ``equinox.filter_jit`` function is unwrapped and jitted the filter way (array leaves
    traced, every other leaf static), keeping its donation; so is a function whose arguments
    hold leaves ``jax.jit`` cannot take (functions, strings). A
    ``flax.nnx.jit`` function is unwrapped and made functional: the program also returns the
    modules it was given, so their in-place updates are in it (its own jit options are not
    used: pass them to ``explain``).
    """
    eqx, nnx = equinox_jit(fn), nnx_jit(fn)
    target, options = (eqx[0], _eqx_donation(eqx[1], len(args))) if eqx else (nnx or fn, {})
    options = {**options, **jit_kwargs}
    # Another jit around a jax.jit function keeps its shardings (and its name in the HLO's
    # metadata) but inlines away its donation and static arguments: those are lowered as is.
    jitted = fn if needs_own_jit(fn) and not jit_kwargs else jax.jit(target, **options)
    nums, names = statics(jitted, options)
    plan = CallPlan(static_argnums=nums, static_argnames=names, returns_args=nnx is not None)
    if eqx is None and not needs_filter(args, kwargs, nums, names):
        return jitted, plan
    plain = getattr(target, "__wrapped__", target) if is_jax_jit(target) else target
    filtered = Filtered(plain, args, kwargs)
    return jax.jit(filtered, **options), replace(plan, filtered=filtered)


def _eqx_donation(donate: dict[str, bool], n_args: int) -> dict[str, Any]:
    """``equinox.filter_jit``'s ``donate=`` as ``donate_argnums``."""
    first = [0] if donate["donate_first"] and n_args else []
    rest = list(range(1, n_args)) if donate["donate_rest"] else []
    return {"donate_argnums": tuple(first + rest)} if first or rest else {}


def compile_program(fn: Any, args: tuple, jit_kwargs: dict, kwargs: dict | None = None) -> Program:
    """The first half of :func:`explain`: jit, lower and compile, with the dump captured.

    The result also says how to call the program (a :class:`~shardviz.capture.calls.CallPlan`:
    static arguments left out, non-array leaves closed over, which inputs are donated).
    """
    if isinstance(fn, StageProgram):
        return _compile_stage(fn)
    name = function_name(fn)
    kwargs = kwargs or {}
    try:
        jitted, plan = _jit(fn, args, kwargs, jit_kwargs)
    except ShardvizError:
        raise  # already names the argument and the fix
    except Exception as err:
        raise CompileError(
            problem(f"function {name!r}", f"jax.jit refused it ({err})", "check the jit options")
        ) from err
    lower_args, lower_kwargs = plan.lower_args(args, kwargs)
    early = functools.partial(_early_reading, entry=entry_of(fn))
    comp = lower_and_compile(jitted, lower_args, lower_kwargs, name, early=early)
    plan = replace(plan, donated=donated_flags(comp.lowered))
    return Program(
        **{f.name: getattr(comp, f.name) for f in fields(comp) if f.init}, plan=plan, jitted=jitted
    )


def _compile_stage(stage: StageProgram) -> Program:
    """A stage a framework made, compiled here with the dumps (a Traced or Lowered), or read
    as it is (a Compiled: see :func:`~shardviz.capture.compile.read_compiled`)."""
    if stage.kind == "Compiled":
        comp = read_compiled(stage.stage)
    else:
        early = functools.partial(_early_reading, entry=stage.entry)
        comp = lower_and_compile(stage.stage, (), {}, stage.__name__, early=early)
    plan = CallPlan(donated=stage.donated())
    return Program(**{f.name: getattr(comp, f.name) for f in fields(comp) if f.init}, plan=plan)


def _stage_arguments(stage: StageProgram, comp: Compiled) -> tuple:
    """A stage's positional arguments as ``ShapeDtypeStruct`` objects placed as the compiled
    program takes them (what the report lists)."""
    args, kwargs = stage.abstract()
    placed, _ = abstract_placed(comp.compiled, args, kwargs)
    return placed


def _remat_note(r: FullRemat) -> str:
    what = f"{r.op_name!r} (HLO %{r.instruction})" if r.op_name else f"HLO %{r.instruction}"
    return (
        f"the compiler could not reshard {what} from {r.source_sharding} to "
        f"{r.target_sharding} efficiently: it replicates the value and splits it again "
        "(XLA's 'involuntary full rematerialization' warning, kept from the compile's log); "
        "give the value the sharding its user needs, e.g. with a sharding constraint"
    )


def analyse_program(fn: Any, args: tuple, comp: Compiled) -> Report:
    """The second half: read the compiled program into a (not yet run) report.

    Pure reading of ``comp`` (no jax state changes), so it may run on another thread while
    the next program compiles.
    """
    name = function_name(fn)
    if isinstance(fn, StageProgram):  # explained from what the stage holds
        args = _stage_arguments(fn, comp)
    # A program that reads none of its sharded arguments (the compiler drops them) still
    # runs on their mesh: it is never "one device" when its arguments span a mesh.
    mesh = _mesh_of(comp.compiled) or _first_mesh(_argument_shardings(args))
    devices = program_devices(comp.compiled)
    ids = [int(d.id) for d in devices]
    notes: list[str] = []
    early = _agreeing(comp.early.shardings, mesh, ids)
    final = _agreeing(comp.early.final, mesh, ids)
    collectives = _ledger(comp, early, final, mesh, ids, notes)
    intermediates, propagated = _intermediates(comp, early, mesh, ids, notes)
    entry = entry_of(fn)
    if isinstance(fn, StageProgram):
        notes.extend(fn.notes())
    notes.extend(_remat_note(r) for r in full_rematerializations(comp.compiler_log))
    # Trimmed as here on the dump thread when it started from the same frame.
    lines = early.lines if early is not None and early.entry == entry else None
    if lines is None:
        lines = _trim_sources(intermediates, entry)
    if (
        final is not None
        and final.reasoned is not None
        and final.whole
        and final.entry == entry
        and collectives is final.final
    ):
        collectives = final.reasoned  # linked, trimmed and reasoned on the dump thread
    else:
        collectives = _trim_sources(hlo.link_reshards(collectives, intermediates), entry)
        # Why the partitioner inserted each collective (from the program before partitioning).
        collectives = _with_reasons(collectives, lines, propagated, mesh, ids, final)
    intermediates = lines
    if " while(" in comp.hlo_text:  # loops repeat their collectives
        collectives = with_trips(collectives, comp.module())
    platform = platform_of(devices[0])
    collectives, host_notes = host_split(collectives, devices, mesh, platform)
    notes.extend(host_notes)
    # What the program holds: an uncommitted array (optax's step counter) as jit places it.
    held, _ = abstract_placed(comp.compiled, args, {}, committed_too=False)
    arguments = layout_tree(named_args(fn, held), skip_non_arrays=True)
    outputs = _outputs(comp.lowered, comp.compiled)
    transfers, requests, scratch = program_offload(comp, platform)
    return Report(
        function=name,
        platform=platform,
        mesh=mesh,
        arguments=arguments,
        outputs=outputs,
        collectives=collectives,
        intermediates=intermediates,
        memory=memory_report(
            comp.compiled,
            arguments,
            platform,
            comp.buffer_assignment,
            comp.memory_usage_report,
            outputs,
            offloaded=scratch,
        ),
        cost=_cost(comp, early),
        host_transfers=transfers,
        offload_requests=requests,
        timing=None,
        check=None,
        ran=False,
        notes=tuple(notes),
        deviceless=is_compile_only(devices[0]),
    )


def _ledger(
    comp: Compiled, early: Any, final: Any, mesh: Any, ids: list[int], notes: list[str]
) -> tuple[Collective, ...]:
    """The collectives of the compiled program (read on the dump thread where it agreed),
    with what TPU and GPU rewrites lost put back from the partitioned program; empty, said
    so, where this jax prints a format shardviz cannot read."""
    try:
        collectives = (
            final.final
            if final is not None and final.final is not None
            else hlo.collectives(comp.module(), device_ids=ids, mesh=mesh)
        )
        if comp.partitioned_text:  # TPU/GPU: what their rewrites lost (see with_partitioned)
            twins = (
                early.partitioned
                if early is not None and early.partitioned is not None
                else hlo.collectives(comp.partitioned_text, device_ids=ids, mesh=mesh)
            )
            collectives = hlo.with_partitioned(collectives, twins)
    except hlo.HloParseError as err:  # a format this jax version prints that we do not know
        notes.append(f"the collective ledger is empty: shardviz could not read the HLO ({err})")
        return ()
    return collectives


def _intermediates(
    comp: Compiled, early: Any, mesh: Any, ids: list[int], notes: list[str]
) -> tuple[tuple, hlo.HloModule | str]:
    """The intermediates' shardings after propagation, and the propagated program they were
    read from (its text where it was not parsed); none, said so, where the dump cannot be
    read."""
    propagated: hlo.HloModule | str = comp.propagated_text
    try:
        if early is not None:
            return early.intermediates, early.propagated or propagated
        if comp.propagated_text and mesh is not None:
            propagated = hlo.parse_hlo_module(comp.propagated_text)
            return hlo.intermediates(propagated, mesh=mesh, device_ids=ids), propagated
    except hlo.HloParseError as err:
        notes.append(f"no intermediate shardings: shardviz could not read the dump ({err})")
    return (), propagated


def _with_reasons(
    collectives: tuple,
    intermediates: tuple,
    propagated: Any,
    mesh: MeshLayout | None,
    ids: list[int],
    final: _EarlyReading | None,
) -> tuple:
    """``collectives`` with their reasons: those worked out on the dump thread where the
    collective is the same one (same name, kind, shapes, axes and reshard point), the rest
    now."""
    done = {_same_key(c): c.why for c in (final.reasoned or ()) if final} if final else {}
    if done and all(c.user_written or _same_key(c) in done for c in collectives):
        return tuple(
            c if c.user_written else replace(c, why=done[_same_key(c)]) for c in collectives
        )
    return collective_reasons(collectives, intermediates, propagated, mesh, ids)


def _same_key(c: Any) -> tuple:
    return (c.name, c.kind, c.in_shape, c.out_shape, c.axes, c.reshard, c.user_written)


_EXPLAINER_DIR = os.path.dirname(os.path.abspath(__file__))
_PACKAGE_DIR = os.path.dirname(_EXPLAINER_DIR)
#: shardviz's own machinery between the user and jax: capture (explain > _analyse > ...), the
#: widgets that call it (Explorer > ExplorerSession.run > explain) and the strategy runner
#: (compare > _run_here > _compile_strategy). Never where a collective comes from. (The model
#: zoo and its training step in shardviz/strategies are the model's lines and stay.)
_MACHINERY_DIRS = (
    _EXPLAINER_DIR + os.sep,
    os.path.join(_PACKAGE_DIR, "capture") + os.sep,
    os.path.join(_PACKAGE_DIR, "widgets") + os.sep,
    os.path.join(_PACKAGE_DIR, "strategies", "runner.py"),
)
#: Frames of the machinery that runs the user's code (a Jupyter kernel, the interpreter's
#: module runner, test runners): never where a collective comes from.
_RUNNER_PARTS = (
    "/ipykernel/", "/ipykernel_launcher.py", "/IPython/", "/runpy.py", "/asyncio/",
    "/tornado/", "/traitlets/", "/jupyter_client/", "/zmq/", "/threading.py", "/concurrent/",
    "/_pytest/", "/pluggy/", "/nbclient/", "<frozen ",
)  # fmt: skip
#: The function name of a module's (or a notebook cell's) top level: the line there calls
#: ``explain`` or ``compare``, outside the traced program, so it is no part of a call chain.
_MODULE_LEVEL = "<module>"


@functools.lru_cache(maxsize=4096)
def _is_runner_frame(file: str) -> bool:
    path = os.path.abspath(file) if not file.startswith("<") else file
    return path.startswith(_MACHINERY_DIRS) or any(part in path for part in _RUNNER_PARTS)


def _kept(frame: Frame) -> bool:
    """A frame of the traced program: not shardviz's or the kernel's, not a module's top level."""
    return frame.function != _MODULE_LEVEL and not _is_runner_frame(frame.file)


def _line_text(frame: Frame) -> str:
    """The code on ``frame``'s line, stripped (``""`` when the file cannot be read)."""
    return linecache.getline(frame.file, frame.line).strip() if frame.line > 0 else ""


#: Where the traced function's own frame is: its file and its (qualified) names.
Entry = tuple[str, frozenset[str]]


def entry_of(fn: Any) -> Entry | None:
    """The frame ``fn`` (the function given to ``explain``) runs in, to start call chains at;
    ``None`` when it has no code of its own (a ``functools.partial``, a callable object).
    A stage's is the function it was traced from, by its file where jax says it and else by
    its name alone (file ``""``)."""
    if isinstance(fn, StageProgram):
        return fn.entry
    code = getattr(user_function(fn), "__code__", None)
    if code is None:
        return None
    return code.co_filename, frozenset({code.co_name, getattr(code, "co_qualname", code.co_name)})


def _trim(
    source: Source | None, entry: Entry | None = None, labels: dict[str, str] | None = None
) -> Source | None:
    """A call chain as the views show it: from the traced function's own frame (``entry``)
    inward, with shardviz's own machinery frames (capture, widgets, the strategy runner), the
    frames of the kernel or runner around the user's code and module-level lines dropped, and
    the innermost line's code read (:attr:`Source.text`). ``None`` when no frame of the
    traced program is left (the caller's lines only)."""
    if source is None:
        return None
    frames = source.frames
    if entry is not None:
        start = _entry_index(frames, entry)
        if start is None:  # the caller's frames alone (e.g. an argument's copy)
            return None
        frames = frames[start:]
    kept = without_repeats(f for f in frames if _kept(f))
    if not kept:
        return None
    kept = labelled(kept, labels if labels is not None else {})
    text = source.text or _line_text(kept[-1])
    return Source(kept, text) if (kept, text) != (source.frames, source.text) else source


def _entry_index(frames: tuple[Frame, ...], entry: Entry) -> int | None:
    """Where the traced function's own frame is in ``frames`` (``None``: not there)."""
    file, names = entry
    return next(
        (i for i, f in enumerate(frames) if (not file or f.file == file) and f.function in names),
        None,
    )


def _trim_sources(items: tuple, entry: Entry | None = None) -> tuple:
    """``items`` (collectives or intermediates) with their sources trimmed by :func:`_trim`.

    ``entry`` is used only if some source passes through it (a wrapper shardviz does not know
    may trace the function under another frame: then the chains are trimmed without it).
    Files are read as they are now (a file edited since it was last read is read again); each
    distinct source once per call, since thousands of values share a few lines.
    """
    distinct = {x.source for x in items if x.source is not None}
    if entry is not None and not any(_entry_index(s.frames, entry) is not None for s in distinct):
        entry = None
    for file in {f.file for s in distinct for f in s.frames[-1:]}:
        linecache.checkcache(file)
    trimmed: dict[Source, Source | None] = {}
    labels: dict[str, str] = {}
    out = []
    for x in items:
        if x.source is None:
            out.append(x)
            continue
        if x.source not in trimmed:
            trimmed[x.source] = _trim(x.source, entry, labels)
        new = trimmed[x.source]
        out.append(x if new is x.source else replace(x, source=new))
    return tuple(out)


def _participants(report: Report) -> int:
    most = 0
    for c in report.collectives:
        n = len({d for p in c.pairs for d in p}) if c.pairs else c.group_size
        most = max(most, n)
    return most


def explain(
    fn: Any,
    *args: Any,
    run: bool = True,
    steps: int = 5,
    profile: bool = False,
    check: bool = True,
    reference: Any = None,
    kwargs: dict[str, Any] | None = None,
    target: Any = None,
    diagnose: bool = True,
    tolerance: float | None = None,
    **jit_kwargs: Any,
) -> Report:
    """Compile ``fn`` on its (sharded) arguments, explain the result, and run it for real.

    Training steps as users write them work as they are:

    - **Donation** (``donate_argnums``/``donate_argnames`` here, or a ``jax.jit(step,
      donate_argnums=0)`` passed as it is): every run gets fresh copies of the donated
      arguments, made outside the timed region, so no buffer is donated twice and your arrays
      stay alive. ``report.memory.alias_bytes`` shows the bytes the outputs reuse.
    - **Static arguments** (``static_argnums``/``static_argnames``, or the jitted function's
      own): compiled in; another value is another program. Pass keyword arguments of ``fn``
      as ``kwargs={"n": 3}`` (``explain``'s own keywords are jit options).
    - ``equinox.filter_jit`` **functions**, and arguments holding leaves ``jax.jit`` cannot
      take (an activation function in an ``eqx.Module``): jitted the filter way, array leaves
      traced and every other leaf static (its ``donate=`` is kept).
    - ``with jax.set_mesh(mesh):`` **around the call**: the program compiles under it, and the
      single-device check runs on a one-device mesh with the same axis names.
    - **A step a framework jitted itself** (MaxText's ``train_compile``, Levanter, Flax NNX
      trainers): pass what it holds, ``jax.jit(step).trace(*args)`` (a ``Traced``),
      ``.lower(*args)`` (a ``Lowered``) or ``.compile()`` (a ``Compiled``), or their Flax NNX
      twins (``nnx.jit(step).lower(...)``). The arguments' shapes and shardings are the
      program's own (``args_info``, its input shardings) and nothing runs, as with
      ``run=False``; pass the real arguments after it (``sv.explain(lowered, *args)``, its
      static arguments left out, as the compiled program takes them) to run, time and check
      it as usual. A Traced or Lowered is compiled again with shardviz's dump options (the
      same program: its own shardings, donation and compiler options); a Traced also gives
      its jaxpr (remat policies, kernels, and the single-device check). A Compiled keeps no
      link to its Lowered in jax 0.10 and its dumps were never written, so it is read as it
      is: the ledger, memory and per-device cost are its own, but there are no intermediate
      shardings, reasons for collectives, global cost or (TPU/GPU) buffer assignment; the
      report says so: explain the Lowered to have them. Fixes of a stage's findings are not
      tried (its function and shardings are compiled in), and a Lowered or Compiled is
      checked against one device only with ``reference=`` (it holds no function).

    Args:
        fn: a function or an already-jitted one (``jax.jit`` or ``equinox.filter_jit``), or
            a jax stage of one (``Traced``, ``Lowered``, ``Compiled``; jit options cannot be
            given with a stage).
        *args: its arguments: real arrays (placed with shardings) or ``jax.ShapeDtypeStruct``
            with shardings (then nothing can run; the report says so).
        run: run the compiled program: first run, then ``steps`` timed steps.
        steps: timed steady-state steps (the median is reported; the first run is apart).
        profile: also trace a few steps with ``jax.profiler`` and time each ledger entry.
        check: compare the outputs with an unsharded single-device run.
        reference: the function to run for that check (default ``fn`` itself); give an
            unconstrained twin when ``fn`` pins shardings inside (constraints, shard_map).
        tolerance: the check's relative tolerance for every float output (times
            ``max(1, |reference|)``); default each output's dtype's, or that of the narrowest
            float the program's matmuls and convolutions take where that is less precise
            (bfloat16 dots updating float32 weights: 0.02). ``report.check`` names the leaf
            closest to failing (``check.leaf``) and its largest difference.
        kwargs: keyword arguments for ``fn`` (their arrays are not listed in
            ``report.arguments``: pass arrays positionally to see their layouts).
        diagnose: look for problems (``report.findings``). Their fixes are not tried here
            (each is a compile): ``report.try_fixes()`` applies each, compiles it
            (compile-only) and keeps those that help; :func:`~shardviz.diagnose` does both.
        target: the hardware to estimate times and HBM fit on: a preset name (``"v5e"``,
            ``"h100"``...), a topology name (``"v5e:4x4"``), a :class:`~shardviz.Hardware`
            or :class:`~shardviz.Target`. Default: the devices' own (a topology's, or real
            TPU/GPU devices); on fake CPU devices, none (``report.estimate`` is None). Given
            on CPU devices, the estimate describes the same mesh on that hardware.
        **jit_kwargs: passed to ``jax.jit`` (``in_shardings``, ``donate_argnums``,
            ``static_argnums``, ...).

    Returns:
        A :class:`~shardviz.model.Report`. Repeated calls with the same function, shapes,
        shardings and static values reuse the compiled program.
    """
    report, _, _ = explain_run(
        fn, *args, run=run, steps=steps, profile=profile, check=check, reference=reference,
        target=target, diagnose=diagnose, tolerance=tolerance,
        kwargs=kwargs, **jit_kwargs,
    )  # fmt: skip
    return report


def _stage_of(fn: Any, jit_kwargs: dict) -> StageProgram | None:
    """``fn`` as a :class:`~shardviz.capture.stages.StageProgram` when it is a jax stage
    (``Traced``, ``Lowered``, ``Compiled``, or Flax NNX's), else ``None``.

    Raises:
        ShardvizError: jit options given with a stage (its own are compiled in).
    """
    if jax_stage(fn) is None:
        return None
    stage = StageProgram(fn)
    if jit_kwargs:
        raise ShardvizError(
            problem(
                f"explain({stage.where})",
                f"jit options ({', '.join(sorted(jit_kwargs))}) cannot change a program "
                "already traced: its shardings and donation are in it",
                "pass them to jax.jit before tracing or lowering "
                "(jax.jit(step, donate_argnums=0).lower(*args)), or explain the function",
            )
        )
    return stage


def _check_options(fn: Any, steps: Any, kwargs: Any) -> None:
    """Refuse what ``explain`` cannot use, naming it and the fix: a function that is not
    callable, ``steps`` that is not a whole number >= 1, ``kwargs`` that is not a dict of
    names."""
    if not callable(fn):
        raise ShardvizError(
            problem(
                "explain",
                f"the first argument {fn!r} is not a function or a jax stage",
                "pass the function to explain first, then its arguments; or what jax.jit "
                "gives: jax.jit(step).lower(*args), its .trace(*args) or .compile()",
            )  # fmt: skip
        )
    if isinstance(steps, bool) or not isinstance(steps, numbers.Integral) or steps < 1:
        raise ShardvizError(
            problem(
                "explain",
                f"steps={steps!r} is not a whole number >= 1",
                "pass steps as an int, e.g. steps=5",
            )  # fmt: skip
        )
    if kwargs is not None and (
        not isinstance(kwargs, Mapping) or not all(isinstance(k, str) for k in kwargs)
    ):
        raise ShardvizError(
            problem(
                "explain",
                f"kwargs={kwargs!r} is not a dict of keyword arguments",
                "pass the function's keyword arguments as kwargs={'name': value}",
            )  # fmt: skip
        )


def explain_run(
    fn: Any,
    *args: Any,
    run: bool = True,
    steps: int = 5,
    profile: bool = False,
    check: bool = True,
    reference: Any = None,
    kwargs: dict[str, Any] | None = None,
    target: Any = None,
    diagnose: bool = True,
    tolerance: float | None = None,
    **jit_kwargs: Any,
) -> tuple[Report, Any, Any]:
    """:func:`explain`, also returning the sharded outputs and the reference outputs (or None)."""
    stage = _stage_of(fn, jit_kwargs)
    _check_options(stage or fn, steps, kwargs)
    if tolerance is not None:
        tolerance = finite_number("explain", "tolerance", tolerance, example=1e-2)
    kwargs = dict(kwargs or {})
    if run:
        refuse_deleted(args, kwargs)
    given: tuple[tuple, dict] | None = None
    if stage is not None:  # explained from what it holds; the arguments only run it
        if args or kwargs:
            given = stage.arguments(args, kwargs)
        fn, args, kwargs = stage, (), {}
    comp, base = _explained(Call(fn, args, kwargs, jit_kwargs), diagnose, target)
    if not run:
        return base, None, None
    notes: list[str] = list(base.notes)
    if base.deviceless:  # the status line says what it was compiled for
        return base, None, None
    if stage is not None and given is not None:
        args, kwargs = given
    why = _why_compile_only(base, stage, given is not None, args, kwargs)
    if why is not None:
        return _compile_only(base, why)
    plan = plan_of(comp)
    call_args, call_kwargs = placed_for(comp.compiled, *plan.program_args(args, kwargs))
    # A donating program kills its input buffers: each run gets fresh copies (never the
    # caller's arrays), made before the clock starts.
    fresh = plan.fresh(call_args, call_kwargs)
    name = base.function
    call = comp.compiled
    jitted = comp.jitted if isinstance(comp, Program) else None
    if _sub_byte((call_args, call_kwargs)) and jitted is not None:
        call = jitted
        notes.append(
            "sub-byte arguments (int4, int2): run through jax.jit, the same program compiled "
            "once more, since jax's ahead-of-time call refuses their layouts"
        )
    raw, first, samples = run_steps(call, call_args, call_kwargs, max(1, steps), name, fresh=fresh)
    timing = Timing(
        compile_seconds=comp.lower_seconds + comp.compile_seconds,
        first_run_seconds=first,
        step_seconds=statistics.median(samples),
        steps=len(samples),
        step_samples=tuple(samples),
    )
    chk, ref = None, None
    if check:
        chk, ref = _checked(fn, comp, args, kwargs, raw, reference, tolerance, notes)
    prof, events = None, None
    if profile:
        module = comp.hlo_text.split(None, 2)[1].rstrip(",") if comp.hlo_text else ""
        prof, events = profile_trace(comp.compiled, call_args, call_kwargs, module, fresh=fresh)
        if prof and prof[0].illustrative:
            notes.append(
                "profile on fake CPU devices: threads stand in for devices, so collective "
                "times are mostly waiting; the timings are illustrative, not a prediction"
            )
    report = replace(
        _with_device_memory(base, timing.step_seconds),
        timing=timing,
        check=chk,
        profile=prof,
        timeline=events,
        ran=True,
        notes=tuple(notes),
    )
    return report, plan.outputs(raw), ref


def _explained(call: Call, diagnose: bool, target: Any) -> tuple[Compiled, Report]:
    """The program compiled and analysed (or kept from an earlier call with the same
    program), estimated and its findings timed on ``target``: kept with the program, so a
    repeated explain is served at once."""
    if call.key in PROGRAMS:
        PROGRAMS.move_to_end(call.key)
        comp, base = PROGRAMS[call.key]
        if diagnose and base.findings is None:  # kept from an explain(diagnose=False)
            base = diagnosed(call, comp, base, code_names(call.fn, call.args))
            remember_program(call.key, comp, base)
    else:
        names = code_names(call.fn, call.args) if diagnose else None
        comp, base = _analyse(call, diagnose=diagnose, names=names)
        remember_program(call.key, comp, base)
    if not diagnose:
        base = replace(base, findings=None)
    # On the target: estimated, findings timed, the device-order search (a tenth of a second
    # on a large program).
    on_target = comp.on_target
    target_key = (repr(target), id(base))
    if target_key not in on_target:
        on_target.clear()  # one base at a time: a kept id is never a reused one
        on_target[target_key] = (
            _targeted(call, comp, estimated(comp, base, target), target),
            base,
        )
    return comp, on_target[target_key][0]


def _why_compile_only(
    base: Report, stage: Any, given: bool, args: tuple, kwargs: dict
) -> str | None:
    """Why the program is explained but not run (``None``: it runs): a framework's stage
    explained without its arguments, hypothetical arrays, or more participants in one
    collective than fake CPU devices survive."""
    if stage is not None and not given:
        return (
            f"compile-only: {stage.where} was explained without its arguments; {stage.how_to_run()}"
        )
    if _is_abstract((args, kwargs)):
        return (
            "compile-only: the arguments are ShapeDtypeStructs (hypothetical arrays), so "
            "there is nothing to run; pass real arrays to time and check the program"
        )
    most = _participants(base)
    if base.platform == "cpu" and most > CPU_MAX_PARTICIPANTS:
        return (
            f"compile-only: a collective here has {most} participants; executing more "
            f"than {CPU_MAX_PARTICIPANTS} on fake CPU devices aborts the whole process "
            "(it would kill the kernel), so shardviz did not run it"
        )
    return None


def _checked(
    fn: Any,
    comp: Compiled,
    args: tuple,
    kwargs: dict,
    raw: Any,
    reference: Any,
    tolerance: float | None,
    notes: list[str],
) -> tuple[Any, Any]:
    """The sharded outputs ``raw`` checked against one device (the check and the reference
    outputs), saying in ``notes`` why a check could not be made."""
    if isinstance(fn, StageProgram) and fn.jaxpr is None and reference is None:
        notes.append(
            f"no single-device check: {fn.where} holds no function to run unsharded; pass "
            "reference=<the step function> to check its outputs"
        )
        return None, None
    computed_in = program_compute_dtype(comp.lowered, comp.hlo_text)
    chk, why, ref = check_against_one_device(
        reference or fn, args, kwargs, arrays_only(raw), computed_in, tolerance
    )
    if why:
        notes.append(why)
    return chk, ref


def _with_device_memory(base: Report, step_seconds: float) -> Report:
    """``base`` with what the devices themselves say of their memory after the run, and
    each host's figures."""
    memory = base.memory
    ids = [d.id for d in base.mesh.devices] if base.mesh else []
    stats = device_stats(ids)
    if stats:
        memory = replace(memory, device_stats=stats)
    peak = max((s.peak_bytes_in_use for s in stats), default=None)
    return replace(base, hosts=host_figures(step_seconds, peak, ids), memory=memory)


def estimated(comp: Compiled, report: Report, target: Any = None) -> Report:
    """``report`` with the estimate on ``target`` (see :func:`explain`), or on the devices'
    own hardware; unchanged on fake CPU devices without a target.

    A deviceless topology's own name is the target (its whole slice, so wraparound is judged
    on the slice, not on the part of it a mesh uses).
    """
    if target is None:
        topo = topology_of(program_devices(comp.compiled))
        target = topo.target if topo is not None else None
    if target is None and report.platform == "cpu":
        return report
    # Loops repeat their collectives: count them as many times as the loop runs (the report
    # read the trip counts already; without a loop every collective runs once).
    trips = {c.hlo_name: c.trips for c in report.collectives} if " while(" in comp.hlo_text else {}
    try:
        return with_estimate(report, target, trip_counts=trips)
    except ShardvizError:
        raise
    except Exception as err:  # an estimate must never cost the user the report
        note = f"no estimate: {type(err).__name__}: {err}"
        return replace(report, notes=(*report.notes, note))


def _compile_only(base: Report, note: str) -> tuple[Report, None, None]:
    return replace(base, notes=(*base.notes, note)), None, None
