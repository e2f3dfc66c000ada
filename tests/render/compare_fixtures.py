"""Hand-built :class:`~shardviz.model.Comparison` objects for the comparison views' tests.

Nothing here imports jax. The model is the two-layer MLP ``w1 (512, 1024)``, ``w2 (1024, 256)``
in float32 (786,432 parameters, 3 MiB) trained with Adam (two float32 moments and a step
count), batch ``x (64, 512)``, ``y (64, 256)``, on the 2x4 ``('data', 'model')`` mesh of
:func:`.fixtures.mesh_2x4`. Bytes are per device; collectives follow the ring model.

- ``dp``: everything replicated, the batch split 8 ways; gradients all-reduced over both axes.
- ``fsdp``: parameters and optimizer state split 8 ways over ``('data', 'model')``, gathered
  before use; one gradient reduce-scattered, the other all-reduced (the compiler's choice).
- ``tp``: Megatron MLP: ``w1`` split by columns and ``w2`` by rows over ``'model'``, the batch
  over ``'data'``; the row-parallel output all-reduced over ``'model'``.
"""

from __future__ import annotations

import dataclasses

from shardviz.model import (
    Check,
    CollectiveSummary,
    Comparison,
    Cost,
    LeafBytes,
    MemoryBreakdown,
    Report,
    StrategyResult,
    TreeLayout,
)

from .fixtures import make_layout, mesh_2x4
from .report_fixtures import ALL, DATA, MODEL, MiB, coll, f32, memory, timing

KiB = 1024
NUM_PARAMS = 512 * 1024 + 1024 * 256
CHECK_OK = Check(max_abs_diff=2.4e-07, max_rel_diff=1.1e-06, tolerance=1e-05, matches=True)
LOSS = 2.3025851


def summarise(report: Report) -> tuple[CollectiveSummary, ...]:
    """The report's ledger by (kind, axes), in order of first appearance."""
    acc: dict[tuple[str, tuple[str, ...]], list[int]] = {}
    for c in report.collectives:
        a = acc.setdefault((c.kind, c.axes), [0, 0, 0])
        a[0] += 1
        a[1] += c.in_bytes
        a[2] += c.moved_bytes
    return tuple(CollectiveSummary(k, axes, n, i, m) for (k, axes), (n, i, m) in acc.items())


def breakdown(report: Report, grads: int, compiler_arguments: int | None = None) -> MemoryBreakdown:
    """The breakdown the capture side computes from a report: leaves by role, temp split."""
    m = report.memory
    by_role: dict[str, int] = {}
    for leaf in m.by_leaf:
        by_role[leaf.role] = by_role.get(leaf.role, 0) + leaf.bytes
    leaves = sum(by_role.values())
    return MemoryBreakdown(
        params=by_role.get("param", 0),
        grads=grads,
        optimizer=by_role.get("optimizer", 0),
        batch=by_role.get("batch", 0),
        activations=max(0, m.temp_bytes - grads),
        arguments_from_leaves=leaves,
        arguments_from_compiler=m.argument_bytes
        if compiler_arguments is None
        else compiler_arguments,
        temp=m.temp_bytes,
        output=m.output_bytes,
        alias=m.alias_bytes,
        peak=m.peak_bytes,
    )


def _step_report(
    function: str,
    specs: dict[str, tuple],
    leaves: tuple[LeafBytes, ...],
    temp: int,
    collectives: tuple,
    step_s: float,
) -> Report:
    """A train step's report: donated params and optimizer state come back as outputs."""
    mesh = mesh_2x4()
    shapes = {"w1": (512, 1024), "w2": (1024, 256), "x": (64, 512), "y": (64, 256)}
    args = [make_layout(f"params.{n}", shapes[n], specs[n], mesh) for n in ("w1", "w2")] + [
        make_layout(f"batch.{n}", shapes[n], specs[n], mesh) for n in ("x", "y")
    ]
    state = sum(x.bytes for x in leaves if x.role in ("param", "optimizer"))
    return Report(
        function=function,
        platform="cpu",
        mesh=mesh,
        arguments=TreeLayout(tuple(args)),
        outputs=TreeLayout((make_layout("loss", (), (), mesh),)),
        collectives=collectives,
        intermediates=(),
        memory=memory(leaves, state + 4, state, temp),
        timing=timing(0.5, step_s),
        check=CHECK_OK,
        ran=True,
    )


def _leaves(div_params: int, div_batch: int) -> tuple[LeafBytes, ...]:
    w1, w2 = f32(512, 1024) // div_params, f32(1024, 256) // div_params
    return (
        LeafBytes("params.w1", "param", w1),
        LeafBytes("params.w2", "param", w2),
        LeafBytes("opt.mu.w1", "optimizer", w1),
        LeafBytes("opt.mu.w2", "optimizer", w2),
        LeafBytes("opt.nu.w1", "optimizer", w1),
        LeafBytes("opt.nu.w2", "optimizer", w2),
        LeafBytes("opt.count", "optimizer", 4),
        LeafBytes("batch.x", "batch", f32(64, 512) // div_batch),
        LeafBytes("batch.y", "batch", f32(64, 256) // div_batch),
    )


def dp_result() -> StrategyResult:
    dm = ("data", "model")
    grads = 3 * MiB
    report = _step_report(
        "dp_step",
        {"w1": (), "w2": (), "x": (dm, None), "y": (dm, None)},
        _leaves(1, 8),
        grads + 160 * KiB,
        (
            coll("all-reduce.1", "all-reduce", (), (), ALL, dm),
            coll("all-reduce.2", "all-reduce", (1024, 256), (1024, 256), ALL, dm),
            coll("all-reduce.3", "all-reduce", (512, 1024), (512, 1024), ALL, dm),
        ),
        0.00212,
    )
    return StrategyResult(
        strategy="dp",
        title="data parallel",
        description="parameters and optimizer state on every device; the batch split 8 ways; "
        "gradients all-reduced",
        mesh=report.mesh,
        report=report,
        memory=breakdown(report, grads),
        collectives=summarise(report),
        loss=LOSS,
        reference_loss=LOSS,
        loss_matches=True,
        step_seconds=0.00212,
    )


def fsdp_result() -> StrategyResult:
    dm = ("data", "model")
    grads = 3 * MiB // 8
    report = _step_report(
        "fsdp_step",
        {"w1": (dm, None), "w2": (dm, None), "x": (dm, None), "y": (dm, None)},
        _leaves(8, 8),
        grads + 3 * MiB + 160 * KiB,
        (
            coll("all-gather.1", "all-gather", (64, 1024), (512, 1024), ALL, dm, is_async=True),
            coll("all-gather.2", "all-gather", (128, 256), (1024, 256), ALL, dm, is_async=True),
            coll("all-reduce.1", "all-reduce", (), (), ALL, dm),
            coll("all-gather.3", "all-gather", (128, 256), (1024, 256), ALL, dm, is_async=True),
            coll("reduce-scatter.1", "reduce-scatter", (1024, 256), (128, 256), ALL, dm),
            coll("all-reduce.2", "all-reduce", (512, 1024), (512, 1024), ALL, dm),
        ),
        0.00347,
    )
    return StrategyResult(
        strategy="fsdp",
        title="fully sharded data parallel (ZeRO-3)",
        description="parameters, gradients and optimizer state split 8 ways; parameters "
        "gathered before use",
        mesh=report.mesh,
        report=report,
        memory=breakdown(report, grads),
        collectives=summarise(report),
        loss=LOSS,
        reference_loss=LOSS,
        loss_matches=True,
        step_seconds=0.00347,
        notes=(
            "the compiler chose all-reduce + dynamic-slice instead of reduce-scatter for the "
            "gradient of params.w1",
        ),
    )


def tp_result() -> StrategyResult:
    d, m = ("data",), ("model",)
    grads = 3 * MiB // 4
    report = _step_report(
        "tp_step",
        {"w1": (None, "model"), "w2": ("model", None), "x": ("data", None), "y": ("data", None)},
        _leaves(4, 2),
        grads + 96 * KiB,
        (
            coll("all-reduce.1", "all-reduce", (32, 256), (32, 256), MODEL, m),
            coll("all-reduce.2", "all-reduce", (), (), ALL, ("data", "model")),
            coll("all-reduce.3", "all-reduce", (256, 256), (256, 256), DATA, d),
            coll("all-reduce.4", "all-reduce", (512, 256), (512, 256), DATA, d),
        ),
        0.00281,
    )
    return StrategyResult(
        strategy="tp",
        title="tensor parallel (Megatron MLP)",
        description="w1 split by columns and w2 by rows over 'model'; the batch over 'data'",
        mesh=report.mesh,
        report=report,
        memory=breakdown(report, grads),
        collectives=summarise(report),
        loss=LOSS,
        reference_loss=LOSS,
        loss_matches=True,
        step_seconds=0.00281,
    )


def comparison() -> Comparison:
    """dp, fsdp and tp of the MLP on the 2x4 mesh: all reconciled, all losses matching."""
    return Comparison(
        model="mlp",
        num_params=NUM_PARAMS,
        param_dtype="float32",
        results=(dp_result(), fsdp_result(), tp_result()),
        notes=("every strategy trains the same parameters from the same seed",),
    )


def comparison_edges() -> Comparison:
    """What can go wrong or be missing: a loss mismatch, no reference loss, leaves that do not
    reconcile with the compiler, a step with no collectives and no timing."""
    dp, fsdp, tp = dp_result(), fsdp_result(), tp_result()
    bad = dataclasses.replace(
        fsdp,
        loss=2.41,
        loss_matches=False,
        memory=breakdown(fsdp.report, 3 * MiB // 8, fsdp.memory.arguments_from_compiler + 64),
    )
    unchecked = dataclasses.replace(tp, reference_loss=None, loss_matches=None)
    report = dataclasses.replace(dp.report, collectives=(), timing=None)
    quiet = dataclasses.replace(
        dp,
        strategy="single",
        title="single",
        description="",
        report=report,
        collectives=(),
        step_seconds=None,
        loss=None,
        reference_loss=None,
        loss_matches=None,
    )
    return Comparison("mlp", NUM_PARAMS, "float32", (quiet, bad, unchecked))


NASTY = "<script>alert(1)</script>"
QUOTES = "a\"b'c&d"


def comparison_nasty() -> Comparison:
    """Hostile strings wherever the model holds one."""
    dp = dp_result()
    evil = dataclasses.replace(
        dp,
        strategy=f"dp{QUOTES}{NASTY}",
        title=f"title {NASTY}",
        description=f"desc {NASTY} {QUOTES}",
        collectives=(CollectiveSummary(f"weird-{NASTY}", (NASTY, QUOTES), 1, 8, 8),),
        notes=(f"note {NASTY} {QUOTES}",),
    )
    return Comparison(f"model{NASTY}", 10, f"f32{QUOTES}", (evil,), notes=(f"top {NASTY}",))


# --------------------------------------------------------------------------------------------
# Estimated on targets (shardviz.analysis.estimate: no jax)


def on_target(r: StrategyResult, target) -> StrategyResult:
    """The result with its report estimated on ``target`` (what ``compare(target=...)`` gives),
    with a cost analysis: 6 flops per parameter and example, split over the 8 devices."""
    from shardviz.analysis.estimate.step import with_estimate

    flops = 6.0 * NUM_PARAMS * 64
    cost = Cost(flops / 8, 2.0 * r.memory.peak, flops, 16.0 * r.memory.peak)
    report = dataclasses.replace(r.report, cost=r.report.cost or cost)
    return dataclasses.replace(r, report=with_estimate(report, target))


def small_hbm():
    """A made-up accelerator with 8 MiB of HBM: dp (12.2 MiB) does not fit, the others do."""
    from shardviz.model.hardware_presets import hardware

    return dataclasses.replace(hardware("v5e"), name="Tiny TPU", hbm_bytes=8 * MiB, preset="")


def comparison_v5e() -> Comparison:
    """dp, fsdp and tp estimated on a TPU v5e 2x4 (compiled on CPU devices)."""
    c = comparison()
    return dataclasses.replace(c, results=tuple(on_target(r, "v5e") for r in c.results))


def comparison_targets() -> Comparison:
    """dp, fsdp and tp each on a TPU v5e 2x4 and on one host of 8 H100s, strategy by strategy
    (one result per strategy and target)."""
    c = comparison()
    results = tuple(on_target(r, t) for r in c.results for t in ("v5e", "h100"))
    return dataclasses.replace(c, results=results)


def comparison_small_hbm() -> Comparison:
    """The edge cases on an accelerator whose HBM one strategy overflows (the HBM line is on
    the memory chart's scale): ``single`` does not fit, ``fsdp`` fits, ``tp`` has no target."""
    c = comparison_edges()
    hw = small_hbm()
    single, fsdp, tp = c.results
    return dataclasses.replace(c, results=(on_target(single, hw), on_target(fsdp, hw), tp))


def on_target_with_kernels(
    r: StrategyResult,
    target,
    missing: str = "splash_mha_bwd",
    why: str = "its grid could not be read",
) -> StrategyResult:
    """:func:`on_target` with two attention kernels in the cost (:func:`.report_fixtures.kernel_uses`):
    one counted, ``missing`` not counted, so the estimate is no bound."""
    from .report_fixtures import kernel_uses

    flops = 6.0 * NUM_PARAMS * 64
    cost = Cost(flops / 8, 2.0 * r.memory.peak, flops, 16.0 * r.memory.peak,
                kernels=kernel_uses(missing, why))  # fmt: skip
    return on_target(
        dataclasses.replace(r, report=dataclasses.replace(r.report, cost=cost)), target
    )


def comparison_kernels() -> Comparison:
    """dp, fsdp and tp on a TPU v5e 2x4, fsdp's step with a kernel not counted: its estimate
    is no bound."""
    c = comparison()
    dp, fsdp, tp = c.results
    results = (on_target(dp, "v5e"), on_target_with_kernels(fsdp, "v5e"), on_target(tp, "v5e"))
    return dataclasses.replace(c, results=results)


def comparison_kernels_nasty() -> Comparison:
    """:func:`comparison_nasty` on v5e with a kernel not counted whose name and reason are
    hostile strings."""
    c = comparison_nasty()
    (evil,) = c.results
    bad = on_target_with_kernels(evil, "v5e", f"k{NASTY}{QUOTES}", f"why {NASTY} {QUOTES}")
    return dataclasses.replace(c, results=(bad,))


#: Golden fixtures by name (tests/golden/compare_<name>.txt).
COMPARISONS = {
    "mlp": comparison,
    "edges": comparison_edges,
    "v5e": comparison_v5e,
    "targets": comparison_targets,
    "small_hbm": comparison_small_hbm,
    "kernels": comparison_kernels,
}
