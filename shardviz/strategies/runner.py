"""``compare(model, strategies)``: run each strategy for real on the same model, side by side."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import replace
from typing import Any, Literal, overload

import jax
import jax.numpy as jnp
import numpy as np
import optax

from shardviz.analysis.estimate.step import with_estimate
from shardviz.capture.interrupts import interrupts_deferred
from shardviz.capture.jax_compat import fast_compile_options
from shardviz.capture.mesh import as_jax_mesh, mesh_layout
from shardviz.capture.processes import local_device
from shardviz.capture.run import compare_outputs, program_compute_dtype
from shardviz.capture.topology import Topology, topology, topology_of
from shardviz.errors import ArgumentError, ShardvizError, problem
from shardviz.explainer.background import OwnedPool
from shardviz.explainer.call import Call
from shardviz.explainer.explain import (
    analyse_program,
    compile_program,
    diagnosed,
    estimated,
    explain_run,
    remember_program,
)
from shardviz.model import (
    CollectiveSummary,
    Comparison,
    MemoryBreakdown,
    Report,
    StrategyResult,
)
from shardviz.model.arguments import finite_number, shown, whole_number
from shardviz.model.hardware_presets import hardware
from shardviz.model.pipeline_timing import measured_schedule
from shardviz.model.program import HOST_FROM_COMPILER
from shardviz.model.schedule import Schedule, gpipe
from shardviz.model.schedule import schedule as make_schedule
from shardviz.model.serving import ServingComparison
from shardviz.strategies.models.configs import ArchConfig
from shardviz.strategies.pipeline.gspmd import pipelined_model
from shardviz.strategies.pipeline.shard_map import residual_bytes
from shardviz.strategies.pipeline.stages import STAGE_AXIS
from shardviz.strategies.progress import Steps, stepping
from shardviz.strategies.rules import OFFLOAD, OFFLOAD_WHAT, RuleSet
from shardviz.strategies.rules.logical import LOGICAL_STRATEGIES, logical_rule_set
from shardviz.strategies.rules.named import get_rule_set
from shardviz.strategies.serving.compare import compare_serving
from shardviz.strategies.step import StrategyStep, strategy_step
from shardviz.strategies.zoo import ModelDef, get_model, make_train_step

_ROLES = {"params": "params", "opt_state": "optimizer", "batch": "batch"}


def _summarise(report: Report) -> tuple[CollectiveSummary, ...]:
    groups: dict[tuple[str, tuple[str, ...]], list] = defaultdict(list)
    for c in report.collectives:
        groups[(c.kind, c.axes)].append(c)
    return tuple(
        CollectiveSummary(
            kind=k, axes=a, count=sum(c.trips or 1 for c in cs),
            in_bytes=sum(c.in_bytes * (c.trips or 1) for c in cs),
            moved_bytes=sum(c.moved_bytes * (c.trips or 1) for c in cs),
            cross_host_bytes=sum(c.cross_host_bytes * (c.trips or 1) for c in cs),
        )
        for (k, a), cs in sorted(groups.items())
    )  # fmt: skip


def _full_bytes(tree: Any) -> int:
    return sum(int(np.prod(x.shape)) * jnp.dtype(x.dtype).itemsize for x in jax.tree.leaves(tree))


def _memory(report: Report, grads: int) -> MemoryBreakdown:
    m = report.memory
    by_role: dict[str, int] = defaultdict(int)
    on_host: dict[str, int] = defaultdict(int)
    for leaf in m.by_leaf:
        by_role[_ROLES.get(leaf.role, leaf.role)] += leaf.bytes
        if leaf.on_host:
            on_host[_ROLES.get(leaf.role, leaf.role)] += leaf.bytes
    # HBM temp from the buffer assignment where there is one (TPU, GPU): the TPU compiler
    # reports temp as 0, or, when the program offloads, a figure larger than its HBM peak
    # (6 MiB beside a 5 MiB peak for zero-offload); the assignment's HBM roles add to the peak.
    temp = dict(m.assigned).get("temp", m.temp_bytes) if m.assigned else m.temp_bytes
    # Host outputs as the output leaves count them (what the new state is), unless donated
    # arguments share their buffers; what the compiler's host figure holds beyond the
    # leaves is its layout padding (a TPU pads arrays to its 8 x 128 tiles).
    out_on_host = sum(lb.bytes for lb in m.out_leaves if lb.on_host)
    outputs = (
        out_on_host
        if out_on_host and not m.host_alias_bytes
        else max(0, m.host_output_bytes - m.host_alias_bytes)
    )
    scratch = m.host_temp_bytes + m.offloaded_bytes
    # The leaves count host arguments too; a TPU/GPU compiler counts them apart (on CPU its
    # argument figure already holds them).
    compiler_args = m.argument_bytes + (
        m.host_argument_bytes if m.host_source == HOST_FROM_COMPILER else 0
    )
    padding = max(0, m.host_bytes - on_host["params"] - on_host["optimizer"] - outputs - scratch)
    return MemoryBreakdown(
        params=by_role["params"], grads=grads, optimizer=by_role["optimizer"],
        batch=by_role["batch"], activations=max(0, temp - grads),
        arguments_from_leaves=sum(lb.bytes for lb in m.by_leaf),
        arguments_from_compiler=compiler_args, temp=temp, output=m.output_bytes,
        alias=m.alias_bytes, peak=m.peak_bytes, host=m.host_bytes,
        host_params=on_host["params"], host_optimizer=on_host["optimizer"],
        host_outputs=outputs, host_scratch=scratch, host_padding=padding,
    )  # fmt: skip


def _form_notes(
    rule_set: RuleSet, summary: tuple[CollectiveSummary, ...], grad_bytes_full: int
) -> tuple[str, ...]:
    """Where the compiler moved data in another form than the textbook one, say so.

    ``grad_bytes_full`` is the whole gradient's size: an all-reduce over the axis carrying at
    least half of it is taken to be the gradient reduction.
    """
    notes = []
    for kind, axis, carries in rule_set.expects:
        over_axis = [s for s in summary if axis in s.axes]
        present = [s for s in over_axis if s.kind == kind]
        total = sum(s.moved_bytes for s in over_axis)
        if present:
            moved = sum(s.moved_bytes for s in present)
            if total and moved < 0.1 * total:
                others = " + ".join(sorted({s.kind for s in over_axis if s.kind != kind}))
                notes.append(
                    f"the {kind} over {axis!r} is there but carries little ({moved:,} of "
                    f"{total:,} bytes moved over {axis!r}); the {carries} move by {others} "
                    "instead"
                )
            continue
        alt = sorted({s.kind for s in over_axis})
        reduced = sum(s.in_bytes for s in over_axis if s.kind == "all-reduce")
        if kind == "reduce-scatter" and carries == "gradients" and reduced >= grad_bytes_full / 2:
            notes.append(
                f"the textbook form reduce-scatters the gradients over {axis!r}; this compiler "
                f"all-reduces them over {axis!r} and each device then keeps its 1/N slice: "
                "the same result and the same memory for the stored gradients, twice the "
                "bytes moved"
            )
        elif alt:
            notes.append(
                f"the textbook form moves the {carries} with a {kind} over {axis!r}; this "
                f"compiler used {' + '.join(alt)} over {axis!r} instead"
            )
        else:
            notes.append(
                f"the textbook form moves the {carries} with a {kind} over {axis!r}; this "
                f"compiler inserted no collective over {axis!r}"
            )
    return tuple(notes)


def _run_once(fn: Any, *args: Any, **jit_kwargs: Any) -> Any:
    """Programs that run once (state init, the reference step) are compiled for compile speed
    (:func:`~shardviz.capture.jax_compat.fast_compile_options`): the backend's optimizations
    cost more time than they would save on one run, and on jax 0.10.2 the CPU's older loop
    emitters halve the compile (the transformer's reference step 0.67 -> 0.32 s; its outputs
    differ in the last bits, far inside the check's tolerance)."""
    options = fast_compile_options()
    with interrupts_deferred():  # Ctrl-C between compiles, never inside one
        program = jax.jit(fn, **jit_kwargs).lower(*args).compile(compiler_options=options)
    return program(*args)


def initial_state(model: ModelDef, optimizer: Any, seed: int = 0) -> tuple[Any, Any, Any]:
    """Parameters, optimizer state and batch, made once on one device, returned as host arrays.

    Every strategy starts from these same values (placed with its own shardings), and the
    unsharded reference step runs on them.
    """
    opt = optimizer or optax.adam(1e-3)
    key_p, key_b = jax.random.split(jax.random.key(seed))
    device = jax.sharding.SingleDeviceSharding(local_device())
    params = _run_once(model.init_params, key_p, out_shardings=device)
    batch = _run_once(model.make_batch, key_b, out_shardings=device)
    opt_state = _run_once(opt.init, params, out_shardings=device)
    # Host copies: each strategy places them with its shardings by slicing (4 ms for the
    # transformer); a device-to-device put compiles a reshard program per leaf sharding (0.7 s).
    return jax.tree.map(np.asarray, (params, opt_state, batch))


def reference_outputs(model: ModelDef, optimizer: Any, state: tuple[Any, Any, Any]) -> Any:
    """One unsharded training step on one device: what every strategy must reproduce.

    Computed once per comparison (it does not depend on the strategy).
    """
    opt = optimizer or optax.adam(1e-3)
    return jax.block_until_ready(_run_once(make_train_step(model, opt), *state))


def run_strategy(
    model: ModelDef,
    rule_set: RuleSet,
    mesh: Any = None,
    *,
    steps: int = 3,
    seed: int = 0,
    optimizer: optax.GradientTransformation | None = None,
    reference: Any = None,
    state: tuple[Any, Any, Any] | None = None,
    profile: bool = False,
) -> StrategyResult:
    """Place the model's state with ``rule_set`` on ``mesh``, then explain and run a step.

    ``state`` is :func:`initial_state` and ``reference`` :func:`reference_outputs` (both
    made here when not given; :func:`compare` makes them once for all strategies).
    ``profile`` traces the step as :func:`~shardviz.explain` does with ``profile=True``.
    """
    opt = optimizer or optax.adam(1e-3)
    finish = _compile_strategy(model, rule_set, mesh, steps, seed, opt, profile=profile)
    start = state if state is not None else initial_state(model, opt, seed)
    return finish(
        start, lambda: reference if reference is not None else reference_outputs(model, opt, start)
    )


#: What :func:`_compile_strategy` leaves to do: run from a starting state, then check the
#: outputs against the reference (asked for only then).
Finish = Callable[[tuple[Any, ...], Callable[[], Any]], StrategyResult]


def _compile_strategy(
    model: ModelDef,
    rule_set: RuleSet,
    mesh: Any,
    steps: int,
    seed: int,
    opt: optax.GradientTransformation,
    helper: Executor | None = None,
    devices: Sequence[Any] | None = None,
    *,
    profile: bool = False,
    tolerance: float | None = None,
) -> Finish:
    """The first half of :func:`run_strategy`: place nothing, compile the step from shapes
    and shardings alone, and analyse it (on ``helper`` when given, while the caller goes on
    to compile the next strategy). :func:`compare` compiles every strategy this way while
    the helper also makes the starting state and the reference."""
    built = strategy_step(model, rule_set, mesh, seed=seed, optimizer=opt, devices=devices)
    step, abstract = built.step, built.abstract
    comp = compile_program(step, abstract, {})
    if helper is None:
        base = analyse_program(step, abstract, comp)
        analysed: Callable[[], Report] = lambda: base  # noqa: E731
    else:
        analysed = helper.submit(analyse_program, step, abstract, comp).result

    def finish(state: tuple[Any, ...], get_reference: Callable[[], Any]) -> StrategyResult:
        call = Call(step, abstract)
        base = diagnosed(call, comp, analysed())
        remember_program(call.key, comp, base)
        if base.deviceless:  # compiled for a topology that is not here: nothing runs
            return _result(rule_set, built, estimated(comp, base))
        computed_in = _narrowest(
            _compute_dtype(model), program_compute_dtype(comp.lowered, comp.hlo_text)
        )
        return _run_result(
            rule_set, built, state, get_reference, steps, profile, computed_in, tolerance
        )

    return finish


def _run_result(
    rule_set: RuleSet,
    built: StrategyStep,
    state: tuple[Any, Any, Any],
    get_reference: Callable[[], Any],
    steps: int,
    profile: bool = False,
    computed_in: Any = None,
    tolerance: float | None = None,
) -> StrategyResult:
    """Place ``state`` with the strategy's shardings, run and time the compiled step (and
    profile it, with ``profile``), and check its outputs and loss against the reference.

    Both checks follow one rule (:func:`~shardviz.capture.run.tolerance_rule`): each output
    within the tolerance of its dtype, or of ``computed_in`` (the dtype the model computes
    in, or the narrowest its matmuls take) where that is less precise, or the relative
    ``tolerance`` given; ``report.check`` judges every output (the parameters,
    the optimizer state and the loss), ``loss_matches`` the loss alone.
    """
    params, opt_state, batch = jax.device_put(state, built.shardings)
    report, outputs, _ = explain_run(
        built.step, params, opt_state, batch, steps=steps, check=False, profile=profile
    )
    reference = get_reference()
    ref_loss = float(reference[2])
    if outputs is None:
        return _result(
            rule_set, built, report, reference_loss=ref_loss,
            step_seconds=report.timing.step_seconds if report.timing else None,
        )  # fmt: skip
    report = replace(report, check=compare_outputs(outputs, reference, computed_in, tolerance))
    loss_check = compare_outputs(outputs[2], reference[2], computed_in, tolerance)
    return _result(
        rule_set, built, report, loss=float(outputs[2]), reference_loss=ref_loss,
        loss_matches=loss_check.matches if loss_check is not None else None,
        step_seconds=report.timing.step_seconds if report.timing else None,
    )  # fmt: skip


def _compute_dtype(model: ModelDef) -> str | None:
    """The dtype a model does its math in when it says so (a published decoder's
    ``compute_dtype``, its weights cast to it in the loss); ``None``: its own dtypes."""
    dtype = model.info.get("compute_dtype")
    return str(dtype) if dtype is not None else None


def _narrowest(*dtypes: Any) -> np.dtype | None:
    """The float dtype of fewest bytes among ``dtypes`` (``None`` ones left out)."""
    found = [np.dtype(jnp.dtype(d)) for d in dtypes if d is not None]
    return min(found, key=lambda d: d.itemsize) if found else None


def _result(
    rule_set: RuleSet, built: StrategyStep, report: Report, **measured: Any
) -> StrategyResult:
    """A strategy's result from its report: what every result has (mesh, memory, collectives,
    form notes), and what was ``measured`` by running it (losses, step time), if it ran. A
    pipeline's schedule is timed from the report's timeline when the run was profiled."""
    summary = _summarise(report)
    mesh = mesh_layout(built.mesh)
    schedule = _schedule(rule_set, built)
    if schedule is not None and report.timeline:
        schedule, why = measured_schedule(
            schedule, report.timeline, mesh, STAGE_AXIS, report.platform
        )
        if why:
            report = replace(report, notes=(*report.notes, why))
    measured["schedule"] = schedule
    for direction in ("to host", "to device"):
        measured[direction.replace(" ", "_") + "_bytes"] = sum(
            t.bytes_per_step for t in report.host_transfers if t.direction == direction
        )
    return StrategyResult(
        strategy=rule_set.name, title=rule_set.title, description=rule_set.description,
        mesh=mesh, report=report,
        memory=_memory(report, built.grad_bytes), collectives=summary,
        notes=_form_notes(rule_set, summary, _full_bytes(built.params_shape)) + built.notes,
        **measured,
    )  # fmt: skip


def _schedule(rule_set: RuleSet, built: StrategyStep) -> Schedule | None:
    """A pipeline strategy's schedule: GSPMD's loop runs GPipe's order; a ``shard_map``
    pipeline the schedule it was given, with what a stage keeps per microbatch in flight."""
    extra = rule_set.extra
    stages, microbatches = extra.get("stages"), extra.get("microbatches")
    if not stages or not microbatches:
        return None
    kind = extra.get("schedule")
    checkpoint = bool(extra.get("checkpoint"))
    if kind is None:
        return replace(gpipe(stages, microbatches), checkpoint=checkpoint)
    inputs = built.abstract[2]["inputs"]
    shards = dict(zip(built.mesh.axis_names, built.mesh.devices.shape, strict=True))
    kept = residual_bytes(
        built.params_shape, inputs, microbatches, checkpoint, shards.get("data", 1)
    )
    return replace(
        make_schedule(kind, stages, microbatches), form="shard_map", checkpoint=checkpoint,
        residual_bytes=kept,
    )  # fmt: skip


#: The training strategies compared when none are named (serving modes have their own).
_TRAIN_DEFAULT: tuple[str, ...] = ("dp", "fsdp", "tp")


@overload
def compare(
    model: str | ModelDef = ...,
    strategies: Sequence[str | RuleSet] = ...,
    mesh: Any = ...,
    *,
    mode: Literal["decode", "prefill"],
    **kwargs: Any,
) -> ServingComparison: ...
@overload
def compare(
    model: str | ModelDef = ...,
    strategies: Sequence[str | RuleSet] = ...,
    mesh: Any = ...,
    *,
    mode: Literal["train"] = ...,
    **kwargs: Any,
) -> Comparison: ...
def compare(
    model: str | ModelDef = "mlp",
    strategies: Sequence[str | RuleSet] = _TRAIN_DEFAULT,
    mesh: Any = None,
    *,
    mode: str = "train",
    target: Any = None,
    steps: int = 3,
    seed: int = 0,
    optimizer: optax.GradientTransformation | None = None,
    stages: int | None = None,
    microbatches: int | None = None,
    schedule: str | None = None,
    checkpoint: bool = False,
    profile: bool = False,
    progress: bool | Steps = True,
    tolerance: float | None = None,
    **sizes: Any,
) -> Comparison | ServingComparison:
    """Run ``model``'s training step under each strategy on the same devices and compare.

    With ``mode="decode"`` or ``"prefill"`` it compares serving strategies instead
    (``"tp"``, ``"dp+tp"``, ``"dp"``, ``"tp-heads"``, and ``"ep"`` for an MoE) of a decoder,
    published or your own (a ``ModelDef`` that declares its sizes), dense or MoE, each
    step compiled on ``target`` with a KV cache: ``batch=``, ``context=``, ``dtype=``
    (``"bfloat16"``, ``"int8"``, ``"int4"``, or a (weights, cache) pair); see
    :func:`~shardviz.strategies.serving.compare.compare_serving`.

    Args:
        model: a built-in name (``"mlp"``, ``"transformer"``, ``"moe"``) or a
            :class:`~shardviz.strategies.zoo.ModelDef` (``ModelDef.custom(...)`` for your own).
        strategies: built-in names (``"dp"``, ``"zero1"``, ``"zero2"``, ``"zero3"``/``"fsdp"``,
            ``"tp"``, ``"2d"``, ``"sp"``, ``"ep"``) or your own :class:`RuleSet`.
        mesh: one mesh for every strategy; by default each strategy gets a mesh over all
            devices with the axes it names (one axis: all devices; two: 2 x n/2). A mesh on a
            topology's devices compiles there without running (and is the mesh used for
            that topology in ``target``; other topologies get their default meshes).
        target: one target or a list, each giving a result per strategy, side by side:

            - a topology (``sv.topology("v5e:16x16")`` or its name ``"v5e:16x16"``,
              ``"h100:2x8"``): every strategy is compiled for it by its real compiler, on a
              mesh over its devices, and not run (memory is that compiler's; times are
              estimates);
            - a preset name (``"v5e"``, ``"h100"``), a :class:`~shardviz.Hardware` or a
              :class:`~shardviz.Target`: the strategies run here, and their estimates
              describe the same mesh on that hardware;
            - ``None`` (the default): run here, estimated only on real TPU/GPU devices.
        steps: timed steps per strategy (after the first run).
        stages, microbatches: for the pipeline strategies ``"pp"`` and ``"pp+dp"`` (the
            zoo transformer's layers split over ``stages``; default 2 stages, 4
            microbatches). Their results carry the pipeline's ``schedule``. A published
            architecture's ``"pp"`` takes ``stages`` as the size of its ``stage`` axis
            (default 2; the other devices on ``fsdp``) and no microbatches.
        schedule: the pipelines' order: ``None`` (default) for GSPMD's form (one loop the
            compiler partitions; autodiff runs the backwards after all forwards, as GPipe);
            ``"gpipe"`` or ``"1f1b"`` for each stage's program written with ``shard_map``
            and run in that order.
        checkpoint: the pipelines keep only each stage's input for the backward and compute
            the stage again there (``jax.checkpoint``).
        profile: also trace each strategy's step with ``jax.profiler``, as
            :func:`~shardviz.explain` does with ``profile=True`` (``report.profile`` and
            ``report.timeline``); a pipeline's ``schedule`` then carries its slots as they
            ran and the bubble measured (illustrative on CPU, real on GPU/TPU). Strategies
            compiled for a topology do not run, so there is nothing to profile.
        progress: once the work has taken 2 s, show each step (``step 2 of 6: compiling
            fsdp for v5e:16x16, 12 s``) as a bar in a notebook or a line on a terminal's
            stderr (nothing in a file or a test); ``False`` shows nothing; an object with
            ``start(k, n, what)`` and ``finish(words)`` is told instead
            (:class:`~shardviz.strategies.progress.Steps`).
        tolerance: the check's relative tolerance for every float output, as
            :func:`~shardviz.explain`'s (default each output's dtype's, or that of the
            narrowest float the step's matmuls take where that is less precise).
        **sizes: model sizes for a built-in model (e.g. ``d_model=256``); for a published
            architecture (``"llama3.1-70b"``...) also ``seq``, ``batch`` or
            ``batch_per_device`` (times the devices compiled for), ``remat``...; its
            strategies are then its logical axis rules (``fsdp``, ``fsdp+tp``, ``tp``,
            ``dp+fsdp``, ``sp``, ``ep``, ``pp``).

    Raises:
        ShardvizError: an unknown model, strategy, preset or topology (naming the fix).
    """
    if tolerance is not None:
        tolerance = finite_number("compare", "tolerance", tolerance, example=1e-2)
    if mode != "train":
        if mesh is not None:
            raise ShardvizError(
                problem(
                    f"compare(mode={mode!r})",
                    "serving strategies make their own data x sequence x tensor mesh",
                    "leave mesh out and name the devices with target= (e.g. 'v5e:4x4')",
                )
            )
        # A RuleSet among them is refused there, naming the serving strategies.
        serving: Any = None if strategies is _TRAIN_DEFAULT else strategies
        return compare_serving(model, serving, mode=mode, target=target, progress=progress, **sizes)
    chosen = [] if isinstance(strategies, str) else list(strategies)
    if not chosen:
        raise ShardvizError(
            problem(
                "compare",
                f"strategies={strategies!r} is not a list of strategies",
                "pass a list of one or more, e.g. ['dp', 'fsdp']",
            )
        )
    steps = whole_number("compare", "steps", steps, example=3)
    seed = whole_number("compare", "seed", seed, low=0, example=0)
    entries = list(target) if isinstance(target, list | tuple) else [target]
    targets = [_target_entry(t) for t in entries]  # bad names fail before any work
    if "batch_per_device" in sizes:
        sizes = _global_batch(sizes, targets, mesh)
    m = get_model(model, **sizes) if isinstance(model, str) else model
    if not isinstance(m, ModelDef):
        raise ShardvizError(
            problem("compare", f"model {model!r} is not a model", "pass a name or a ModelDef")
        )
    pipeline = _pipeline_options(m, stages, microbatches, schedule, checkpoint)
    # Unknown names fail before any work.
    rule_sets = [rule_set_for(m, s, pipeline) for s in chosen]
    opt = optimizer or optax.adam(1e-3)
    mesh_topo = topology_of(as_jax_mesh(mesh).devices.flat) if mesh is not None else None
    if mesh_topo is not None:  # the mesh is on a topology: that topology, on that mesh
        targets = [t for t in targets if isinstance(t, Topology)] or [mesh_topo]
    live = mesh_topo is None and any(not isinstance(t, Topology) for t in targets)
    elsewhere = [t for t in targets if isinstance(t, Topology) and t is not mesh_topo]
    # Each strategy compiled here (and run: two steps), on the mesh's topology, and on each
    # other topology.
    units = (2 if live else 1 if mesh_topo is not None else 0) + len(elsewhere)
    names = [t.name for t in ([mesh_topo] if mesh_topo is not None else []) + elsewhere]
    done = _done_words(len(rule_sets), live, names)
    with stepping(progress, "shardviz.compare", units * len(rule_sets), done) as step:
        if mesh_topo is not None:
            local = _by_model(
                _compile_only, m, rule_sets, mesh, steps, seed, opt, None, step, mesh_topo.name
            )
        elif live:
            local = _by_model(
                _run_here, m, rule_sets, mesh, steps, seed, opt, profile, step, tolerance
            )
        results: list[StrategyResult] = []
        for t in targets:
            if isinstance(t, Topology) and t is mesh_topo:
                results += local
            elif isinstance(t, Topology):
                results += _by_model(
                    _compile_only, m, rule_sets, None, steps, seed, opt, t.devices, step, t.name
                )
            elif t is None:
                results += local
            else:
                results += [replace(r, report=_estimated(r.report, t)) for r in local]
    leaves = jax.tree.leaves(jax.eval_shape(m.init_params, jax.random.key(seed)))
    dtypes = sorted({str(jnp.dtype(x.dtype)) for x in leaves})
    return Comparison(
        model=m.name, num_params=int(sum(int(np.prod(x.shape)) for x in leaves)),
        param_dtype="/".join(dtypes), results=tuple(results),
    )  # fmt: skip


def _estimated(report: Report, target: Any) -> Report:
    """``report`` estimated on ``target``, each collective as often as its loops run it (the
    ledger's trips, as ``explain`` counts them), not once."""
    trips = {c.hlo_name: c.trips for c in report.collectives}
    return with_estimate(report, target, trip_counts=trips)


def _done_words(k: int, live: bool, compiled_for: list[str]) -> str:
    """What a comparison did, for its progress's last line: ``3 strategies run here and
    compiled for v5e:16x16, h100:2x8``."""
    parts = (["run here"] if live else []) + (
        [f"compiled for {', '.join(compiled_for)}"] if compiled_for else []
    )
    return f"{k} strateg{'y' if k == 1 else 'ies'} " + " and ".join(parts)


def rule_set_for(m: ModelDef, strategy: str | RuleSet, pipeline: dict[str, Any]) -> RuleSet:
    """A published architecture's strategies are its logical axis rules (MaxText's way:
    ``fsdp``, ``fsdp+tp``, ``tp``, ``dp+fsdp``, ``sp``, ``ep``, ``pp``); any other name, or
    any other model, the built-in rule set of that name."""
    if (
        isinstance(strategy, str)
        and isinstance(m.info.get("config"), ArchConfig)
        and strategy in LOGICAL_STRATEGIES
    ):
        rule_set = logical_rule_set(strategy, m)
        if strategy == "pp" and pipeline.get("stages"):  # the 'stage' axis's size
            return replace(rule_set, extra={**rule_set.extra, "stages": pipeline["stages"]})
        return rule_set
    if isinstance(strategy, str) and isinstance(m.info.get("config"), ArchConfig):
        offload = OFFLOAD.get(strategy)
        if offload is not None:  # the same offload on the architecture's logical FSDP
            return replace(
                logical_rule_set("fsdp", m), name=offload.name,
                title=f"{offload.title} (logical fsdp)", host=offload.host,
                remat=offload.remat, description=f"the logical fsdp rules, with "
                f"{OFFLOAD_WHAT[offload.name]}",
            )  # fmt: skip
    return get_rule_set(strategy, **pipeline)


def _pipeline_options(
    m: ModelDef,
    stages: Any,
    microbatches: Any,
    schedule: str | None,
    checkpoint: bool,
) -> dict[str, Any]:
    """The pipeline strategies' options, checked: ``stages`` and ``microbatches`` whole
    numbers where given (left out: the pipelines' defaults, 2 and 4).

    Raises:
        ArgumentError: a count that is not a whole number >= 1; ``microbatches``,
            ``schedule`` or ``checkpoint`` for a published architecture, whose ``pp`` splits
            its stacked layers over ``stages`` devices and runs no microbatch schedule.
    """
    out: dict[str, Any] = {}
    if stages is not None:
        out["stages"] = whole_number("compare", "stages", stages, example=2)
    if microbatches is not None:
        out["microbatches"] = whole_number("compare", "microbatches", microbatches, example=4)
    if isinstance(m.info.get("config"), ArchConfig):
        given = [
            f"{k}={shown(v)}"
            for k, v in (("microbatches", microbatches), ("schedule", schedule))
            if v is not None
        ] + (["checkpoint=True"] if checkpoint else [])
        if given:
            raise ArgumentError(
                problem(
                    f"compare({m.name!r})",
                    f"{', '.join(given)} {'is' if len(given) == 1 else 'are'} for the zoo "
                    "transformer's pipelines; a "
                    "published architecture's 'pp' splits its stacked layers over the "
                    "'stage' axis (stages= sets its size) and runs no microbatch schedule",
                    "leave them out, or pipeline get_model('transformer', ...) with them",
                )
            )
    return out | {"schedule": schedule, "checkpoint": checkpoint}


def _global_batch(sizes: dict[str, Any], targets: list, mesh: Any) -> dict[str, Any]:
    """``sizes`` with ``batch_per_device`` turned into the global ``batch``: times the
    devices of the mesh, else of the topology compiled for, else of this machine."""
    per = whole_number("compare", "batch_per_device", sizes["batch_per_device"], example=4)
    if "batch" in sizes:
        raise ShardvizError(
            problem(
                "compare",
                f"both batch={sizes['batch']} and batch_per_device={per} were given",
                "give one: the global batch, or the batch per device",
            )
        )
    if mesh is not None:
        counts = {int(as_jax_mesh(mesh).devices.size)}
    else:
        counts = {len(t.devices) for t in targets if isinstance(t, Topology)}
        counts = counts or {len(jax.devices())}
    if len(counts) > 1:
        raise ShardvizError(
            problem(
                "compare",
                f"batch_per_device={per} gives a different global batch on each target "
                f"({', '.join(str(n) for n in sorted(counts))} devices)",
                "compare targets with the same number of devices, or give the global batch",
            )
        )
    out = {k: v for k, v in sizes.items() if k != "batch_per_device"}
    out["batch"] = per * counts.pop()
    return out


def _target_entry(t: Any) -> Any:
    """A topology for names like ``"v5e:4x4"`` (compiled for); anything else as given
    (estimated for). Names are checked now, so a bad one fails before any compile."""
    if isinstance(t, str) and ":" in t:
        return topology(t)
    if isinstance(t, str):
        hardware(t)
    return t


def _by_model(run: Callable[..., list], m: ModelDef, rule_sets: list, *args: Any) -> list:
    """``run(model, rule_sets, *args)`` for each model the strategies need, results in the
    strategies' order: pipeline strategies train the model pipelined with their stages and
    microbatches, the others the model as it is."""
    groups: dict[tuple, list[int]] = {}
    for i, rs in enumerate(rule_sets):
        key = tuple(rs.extra.get(k) for k in ("stages", "microbatches", "schedule", "checkpoint"))
        # A published architecture's pp splits its own layer stack: nothing to pipeline.
        pipelined = key[0] and "logical_rules" not in rs.extra
        groups.setdefault(key if pipelined else (None,) * 4, []).append(i)
    out: list = [None] * len(rule_sets)
    for (stages, microbatches, order, checkpoint), idx in groups.items():
        already = "stages" in m.info  # a model the caller pipelined (pipelined_model)
        wanted = (stages, microbatches, order, bool(checkpoint))
        if stages and already and _pipelined_as(m) != wanted:
            raise ShardvizError(
                problem(
                    f"strategy {rule_sets[idx[0]].name!r}",
                    f"it is for {_pipeline_words(*wanted)}, but the model is pipelined as "
                    f"{_pipeline_words(*_pipelined_as(m))}",
                    "build both with the same options (pipeline_rules(kind, stages=, "
                    "microbatches=, schedule=, checkpoint=)), or pass the plain model and let "
                    "compare pipeline it",
                )
            )
        pipeline = stages and not already
        model = (
            pipelined_model(
                m,
                stages=stages,
                microbatches=microbatches,
                schedule=order,
                checkpoint=bool(checkpoint),
            )  # fmt: skip
            if pipeline
            else m
        )
        for i, result in zip(idx, run(model, [rule_sets[i] for i in idx], *args), strict=True):
            out[i] = result
    return out


def _pipelined_as(m: ModelDef) -> tuple:
    info = m.info
    return (
        info["stages"],
        info["microbatches"],
        info.get("schedule"),
        bool(info.get("checkpoint")),
    )


def _pipeline_words(stages: int, microbatches: int, order: str | None, checkpoint: bool) -> str:
    form = f"{order} written with shard_map" if order else "GSPMD's form"
    return f"{stages} stages x {microbatches} microbatches ({form}" + (
        ", checkpointed)" if checkpoint else ")"
    )


def _run_here(
    m: ModelDef,
    rule_sets: list,
    mesh: Any,
    steps: int,
    seed: int,
    opt: Any,
    profile: bool,
    step: Callable[[str], None],
    tolerance: float | None = None,
) -> list:
    """Every strategy compiled, run and checked (and profiled, with ``profile``) on this
    machine's devices, each compile and each run a step of ``step``'s progress."""
    # The starting state, the unsharded reference step (the same for every strategy) and
    # the reading of each compiled program go to a second thread while this one compiles
    # every strategy from shapes (XLA compiles on one core with the GIL released, so on a
    # multi-core machine this hides most of them); then the strategies run one by one.
    pool = OwnedPool(1, "shardviz-compare")
    try:
        state_job = pool.submit(initial_state, m, opt, seed)
        reference_job = pool.submit(lambda: reference_outputs(m, opt, state_job.result()))
        finishes = []
        for rs in rule_sets:
            step(f"compiling {rs.name}")
            finishes.append(
                _compile_strategy(
                    m, rs, mesh, steps, seed, opt, pool, profile=profile, tolerance=tolerance
                )
            )
        out = []
        for rs, finish in zip(rule_sets, finishes, strict=True):
            step(f"running {rs.name} and checking it against one device")
            out.append(finish(state_job.result(), reference_job.result))
        return out
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def _compile_only(
    m: ModelDef,
    rule_sets: list,
    mesh: Any,
    steps: int,
    seed: int,
    opt: Any,
    devices: Any,
    step: Callable[[str], None],
    where: str,
) -> list:
    """Every strategy compiled for devices that are not here (``where``, a topology's):
    nothing runs, so there is no starting state and no reference step. Each strategy is a
    step of ``step``'s progress: compiled, then read, before the next."""

    def nothing() -> Any:
        raise AssertionError("a deviceless program asked for its reference")

    out = []
    for rs in rule_sets:
        step(f"compiling {rs.name} for {where}")
        out.append(_compile_strategy(m, rs, mesh, steps, seed, opt, None, devices)((), nothing))
    return out
