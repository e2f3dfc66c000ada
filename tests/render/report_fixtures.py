"""Hand-built :class:`~shardviz.model.Report` objects for the report renderers' tests.

Nothing here imports jax. Every report uses the 2x4 ``('data', 'model')`` mesh of
:func:`.fixtures.mesh_2x4` (device ``(i, j)`` is ``d{4*i + j}``), so a collective over
``'data'`` groups ``{d0,d4} {d1,d5} {d2,d6} {d3,d7}`` and one over ``'model'`` groups
``{d0-d3} {d4-d7}``. Bytes are per device and follow the ring model in
:class:`~shardviz.model.Collective`'s docstring.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

from shardviz.model import (
    Check,
    Collective,
    Cost,
    Frame,
    KernelUse,
    LeafBytes,
    MemoryReport,
    OpEvent,
    OpTiming,
    Report,
    ShardingOf,
    Source,
    Timing,
    TreeLayout,
)

from .fixtures import make_layout, make_mesh, mesh_2x4

KiB = 1024
MiB = 1024 * KiB

DATA = ((0, 4), (1, 5), (2, 6), (3, 7))
MODEL = ((0, 1, 2, 3), (4, 5, 6, 7))
ALL = ((0, 1, 2, 3, 4, 5, 6, 7),)

TRAIN = "/home/ada/shardviz-demo/train.py"


def src(file: str, *frames: tuple[int, str]) -> Source:
    """A call chain in one file, outermost first: ``src(f, (44, 'train_step'), (23, 'mlp'))``."""
    return Source(tuple(Frame(file, line, fn) for line, fn in frames))


def f32(*shape: int) -> int:
    return 4 * math.prod(shape)


def coll(
    name: str,
    kind: str,
    in_shape: Sequence[int],
    out_shape: Sequence[int],
    groups: tuple[tuple[int, ...], ...],
    axes: tuple[str, ...],
    source: Source | None = None,
    dtype: str = "float32",
    itemsize: int = 4,
    **kw,
) -> Collective:
    """A collective with bytes and group size filled in by the ring model."""
    in_b = itemsize * math.prod(in_shape)
    out_b = itemsize * math.prod(out_shape)
    pairs = kw.get("pairs", ())
    n = len(groups[0]) if groups else 2
    frac = (n - 1) / n
    moved = {
        "all-gather": out_b * frac,
        "reduce-scatter": in_b * frac,
        "all-reduce": 2 * in_b * frac,
        "all-to-all": in_b * frac,
        "collective-permute": in_b,
    }.get(kind, in_b)
    return Collective(
        name=name,
        kind=kind,
        in_dtype=dtype,
        in_shape=tuple(in_shape),
        out_dtype=dtype,
        out_shape=tuple(out_shape),
        in_bytes=in_b,
        out_bytes=out_b,
        moved_bytes=round(moved),
        group_size=kw.pop("group_size", n if groups else 2 if pairs else 1),
        groups=groups,
        axes=axes,
        source=source,
        op_name=kw.pop("op_name", f"jit(step)/{name.split('.')[0]}"),
        **kw,
    )


def value(
    name: str,
    op: str,
    shape: Sequence[int],
    spec: tuple[tuple[str, ...], ...] | None,
    source: Source | None = None,
    reshard: bool = False,
    operands: tuple[str, ...] = (),
    dtype: str = "float32",
    hlo: str = "",
) -> ShardingOf:
    if not hlo:
        hlo = "{replicated}" if spec is not None and not any(spec) else "{devices=[2,4]<=[8]}"
    return ShardingOf(
        name=name,
        op=op,
        dtype=dtype,
        shape=tuple(shape),
        spec=spec,
        hlo_sharding=hlo,
        source=source,
        operands=operands,
        reshard=reshard,
    )


def memory(
    leaves: Sequence[LeafBytes],
    output: int,
    alias: int,
    temp: int,
    code: int = 24 * KiB,
    cpu: bool = True,
) -> MemoryReport:
    arg = sum(x.bytes for x in leaves)
    peak = arg + output - alias + temp
    return MemoryReport(
        argument_bytes=arg,
        output_bytes=output,
        alias_bytes=alias,
        temp_bytes=temp,
        code_bytes=code,
        peak_bytes=peak,
        compiler_peak_bytes=arg + output - alias if cpu else None,
        by_leaf=tuple(leaves),
    )


_JITTER = (0.987, 0.979, 1.0, 1.073, 1.017, 0.996, 1.009, 1.026)


def timing(compile_s: float, step_s: float) -> Timing:
    """Compile and step seconds, with eight samples scattered around the median."""
    return Timing(
        compile_seconds=compile_s,
        first_run_seconds=compile_s / 10 + step_s,
        step_seconds=step_s,
        steps=20,
        step_samples=tuple(round(step_s * j, 9) for j in _JITTER),
    )


TIMING = timing(0.412, 0.00234)

OK = Check(max_abs_diff=2.384e-07, max_rel_diff=1.1e-06, tolerance=1e-05, matches=True)

# --------------------------------------------------------------------------------------------
# Data parallel: replicated parameters, batch split over 'data', gradients all-reduced


def dp_report() -> Report:
    mesh = mesh_2x4()
    args = TreeLayout(
        (
            make_layout("params.w1", (512, 1024), (), mesh),
            make_layout("params.w2", (1024, 256), (), mesh),
            make_layout("batch.x", (64, 512), ("data", None), mesh),
            make_layout("batch.y", (64, 256), ("data", None), mesh),
        )
    )
    outs = TreeLayout(
        (
            make_layout("params.w1", (512, 1024), (), mesh),
            make_layout("params.w2", (1024, 256), (), mesh),
            make_layout("loss", (), (), mesh),
        )
    )
    fwd1 = src(TRAIN, (44, "train_step"), (31, "loss_fn"), (23, "mlp"))
    fwd2 = src(TRAIN, (44, "train_step"), (31, "loss_fn"), (24, "mlp"))
    loss = src(TRAIN, (44, "train_step"), (32, "loss_fn"))
    upd = src(TRAIN, (46, "train_step"), (38, "sgd"))
    d = ("data",)
    rep: tuple[tuple[str, ...], ...] = ((), ())
    collectives = (
        coll("all-reduce.1", "all-reduce", (), (), DATA, d, loss, reshard="reduce.5"),
        coll(
            "all-reduce.2", "all-reduce", (1024, 256), (1024, 256), DATA, d, fwd2, reshard="dot.7"
        ),
        coll(
            "all-reduce.3", "all-reduce", (512, 1024), (512, 1024), DATA, d, fwd1, reshard="dot.9"
        ),
    )
    intermediates = (
        value("dot.1", "dot", (64, 1024), (d, ()), fwd1, operands=("x", "w1")),
        value("tanh.2", "tanh", (64, 1024), (d, ()), fwd1, operands=("dot.1",)),
        value("dot.3", "dot", (64, 256), (d, ()), fwd2, operands=("tanh.2", "w2")),
        value("subtract.4", "subtract", (64, 256), (d, ()), loss, operands=("dot.3", "y")),
        value("reduce.5", "reduce", (), (), loss, reshard=True, operands=("subtract.4",)),
        value("dot.6", "dot", (64, 1024), (d, ()), fwd2, operands=("subtract.4", "w2")),
        value("dot.7", "dot", (1024, 256), rep, fwd2, reshard=True, operands=("tanh.2",)),
        value("multiply.8", "multiply", (64, 1024), (d, ()), fwd1, operands=("dot.6",)),
        value("dot.9", "dot", (512, 1024), rep, fwd1, reshard=True, operands=("x", "multiply.8")),
        value("subtract.10", "subtract", (512, 1024), rep, upd, operands=("w1", "dot.9")),
        value("subtract.11", "subtract", (1024, 256), rep, upd, operands=("w2", "dot.7")),
    )
    leaves = (
        LeafBytes("params.w1", "param", f32(512, 1024)),
        LeafBytes("params.w2", "param", f32(1024, 256)),
        LeafBytes("batch.x", "batch", f32(32, 512)),
        LeafBytes("batch.y", "batch", f32(32, 256)),
    )
    return Report(
        function="train_step",
        platform="cpu",
        mesh=mesh,
        arguments=args,
        outputs=outs,
        collectives=collectives,
        intermediates=intermediates,
        memory=memory(leaves, f32(512, 1024) + f32(1024, 256) + 4, 3 * MiB, 3 * MiB + 256 * KiB),
        cost=Cost(150_994_944.0, 13_762_560.0, 1_207_959_552.0, 110_100_480.0),
        timing=TIMING,
        check=OK,
        ran=True,
    )


# --------------------------------------------------------------------------------------------
# FSDP: parameters and batch split over both axes; all-gather before use, reduce-scatter grads


def fsdp_report() -> Report:
    mesh = mesh_2x4()
    dm = ("data", "model")
    args = TreeLayout(
        (
            make_layout("params.w1", (512, 1024), (dm, None), mesh),
            make_layout("params.w2", (1024, 256), (dm, None), mesh),
            make_layout("batch.x", (64, 512), (dm, None), mesh),
        )
    )
    outs = TreeLayout(
        (
            make_layout("params.w1", (512, 1024), (dm, None), mesh),
            make_layout("params.w2", (1024, 256), (dm, None), mesh),
            make_layout("loss", (), (), mesh),
        )
    )
    f = "/home/ada/shardviz-demo/fsdp.py"
    l1 = src(f, (60, "fsdp_step"), (41, "loss_fn"), (22, "mlp"))
    l2 = src(f, (60, "fsdp_step"), (41, "loss_fn"), (23, "mlp"))
    ls = src(f, (60, "fsdp_step"), (42, "loss_fn"))
    rep: tuple[tuple[str, ...], ...] = ((), ())
    sh = (dm, ())
    collectives = (
        coll("all-gather.1", "all-gather", (64, 1024), (512, 1024), ALL, dm, l1,
             is_async=True, dimension=0, reshard="copy.1"),
        coll("all-gather.2", "all-gather", (128, 256), (1024, 256), ALL, dm, l2,
             is_async=True, dimension=0, reshard="copy.3"),
        coll("all-reduce.1", "all-reduce", (), (), ALL, dm, ls, reshard="reduce.6"),
        coll("all-gather.3", "all-gather", (128, 256), (1024, 256), ALL, dm, l2,
             is_async=True, dimension=0, reshard="copy.7"),
        coll("reduce-scatter.1", "reduce-scatter", (1024, 256), (128, 256), ALL, dm, l2,
             dimension=0, reshard="dot.9"),
        coll("reduce-scatter.2", "reduce-scatter", (512, 1024), (64, 1024), ALL, dm, l1,
             dimension=0, reshard="dot.11"),
    )  # fmt: skip
    intermediates = (
        value("copy.1", "copy", (512, 1024), rep, l1, reshard=True, operands=("w1",)),
        value("dot.2", "dot", (64, 1024), sh, l1, operands=("x", "copy.1")),
        value("copy.3", "copy", (1024, 256), rep, l2, reshard=True, operands=("w2",)),
        value("dot.4", "dot", (64, 256), sh, l2, operands=("dot.2", "copy.3")),
        value("subtract.5", "subtract", (64, 256), sh, ls, operands=("dot.4",)),
        value("reduce.6", "reduce", (), (), ls, reshard=True, operands=("subtract.5",)),
        value("copy.7", "copy", (1024, 256), rep, l2, reshard=True, operands=("w2",)),
        value("dot.8", "dot", (64, 1024), sh, l2, operands=("subtract.5", "copy.7")),
        value("dot.9", "dot", (1024, 256), sh, l2, reshard=True, operands=("dot.2",)),
        value("multiply.10", "multiply", (64, 1024), sh, l1, operands=("dot.8",)),
        value("dot.11", "dot", (512, 1024), sh, l1, reshard=True, operands=("x", "multiply.10")),
    )
    leaves = (
        LeafBytes("params.w1", "param", f32(64, 1024)),
        LeafBytes("params.w2", "param", f32(128, 256)),
        LeafBytes("batch.x", "batch", f32(8, 512)),
    )
    out = f32(64, 1024) + f32(128, 256) + 4
    return Report(
        function="fsdp_step",
        platform="cpu",
        mesh=mesh,
        arguments=args,
        outputs=outs,
        collectives=collectives,
        intermediates=intermediates,
        memory=memory(leaves, out, out - 4, 5 * MiB + 512 * KiB),
        cost=Cost(18_874_368.0, 9_961_472.0, 150_994_944.0, 79_691_776.0),
        timing=timing(0.655, 0.00311),
        check=OK,
        ran=True,
    )


# --------------------------------------------------------------------------------------------
# Megatron MLP: column- then row-parallel; one all-reduce over 'model'


def megatron_report() -> Report:
    mesh = mesh_2x4()
    args = TreeLayout(
        (
            make_layout("x", (64, 512), ("data", None), mesh),
            make_layout("w1", (512, 1024), (None, "model"), mesh),
            make_layout("w2", (1024, 512), ("model", None), mesh),
        )
    )
    outs = TreeLayout((make_layout("y", (64, 512), ("data", None), mesh),))
    f = "/home/ada/shardviz-demo/megatron.py"
    s1 = src(f, (30, "mlp_block"), (18, "column_parallel"))
    s2 = src(f, (30, "mlp_block"), (19, "column_parallel"))
    s3 = src(f, (31, "mlp_block"), (25, "row_parallel"))
    s4 = src(f, (32, "mlp_block"))
    d, m = ("data",), ("model",)
    collectives = (
        coll("all-reduce.1", "all-reduce", (32, 512), (32, 512), MODEL, m, s3, reshard="dot.3"),
    )
    intermediates = (
        value("dot.1", "dot", (64, 1024), (d, m), s1, operands=("x", "w1")),
        value("tanh.2", "tanh", (64, 1024), (d, m), s2, operands=("dot.1",)),
        value("dot.3", "dot", (64, 512), (d, ()), s3, reshard=True, operands=("tanh.2", "w2")),
        value("add.4", "add", (64, 512), (d, ()), s4, operands=("dot.3", "x")),
    )
    leaves = (
        LeafBytes("x", "input", f32(32, 512)),
        LeafBytes("w1", "param", f32(512, 256)),
        LeafBytes("w2", "param", f32(256, 512)),
    )
    return Report(
        function="mlp_block",
        platform="cpu",
        mesh=mesh,
        arguments=args,
        outputs=outs,
        collectives=collectives,
        intermediates=intermediates,
        memory=memory(leaves, f32(32, 512), 0, f32(32, 256) * 2 + f32(32, 512)),
        cost=Cost(16_908_288.0, 1_441_792.0, 134_217_728.0, 5_767_168.0),
        timing=timing(0.198, 0.000412),
        check=OK,
        ran=True,
    )


# --------------------------------------------------------------------------------------------
# shard_map: user-written psum, ppermute (a ring per 'model' row) and all_to_all


def shard_map_report() -> Report:
    mesh = mesh_2x4()
    args = TreeLayout((make_layout("x", (64, 512), ("data", "model"), mesh),))
    outs = TreeLayout((make_layout("y", (64, 512), (), mesh),))
    f = "/home/ada/shardviz-demo/ring.py"
    body = src(f, (52, "ring_step"), (40, "shmap_body"))
    m = ("model",)
    ring = ((0, 1), (1, 2), (2, 3), (3, 0), (4, 5), (5, 6), (6, 7), (7, 4))
    collectives = (
        coll("all-reduce.1", "all-reduce", (32, 128), (32, 128), MODEL, m,
             src(f, (52, "ring_step"), (40, "shmap_body"), (12, "psum_block")), user_written=True),
        coll("collective-permute.1", "collective-permute", (32, 128), (32, 128), (), m,
             src(f, (52, "ring_step"), (40, "shmap_body"), (17, "rotate")), user_written=True,
             pairs=ring, group_size=4),
        coll("all-to-all.1", "all-to-all", (32, 128), (128, 32), MODEL, m,
             src(f, (52, "ring_step"), (40, "shmap_body"), (21, "transpose_blocks")),
             user_written=True, dimension=1),
        coll("all-gather.1", "all-gather", (32, 512), (64, 512), DATA, ("data",),
             src(f, (53, "ring_step")), is_async=True, dimension=0, reshard="copy.5"),
    )  # fmt: skip
    intermediates = (
        value("custom-call.1", "custom-call", (64, 512), None, body, operands=("x",),
              hlo="{manual}"),
        value("add.2", "add", (64, 512), None, body, operands=("custom-call.1",),
              hlo="{manual}"),
        value("custom-call.3", "custom-call", (64, 512), (("data",), ()), body,
              reshard=True, operands=("add.2",)),
        value("copy.5", "copy", (64, 512), ((), ()), src(f, (53, "ring_step")),
              reshard=True, operands=("custom-call.3",)),
    )  # fmt: skip
    leaves = (LeafBytes("x", "input", f32(32, 128)),)
    return Report(
        function="ring_step",
        platform="cpu",
        mesh=mesh,
        arguments=args,
        outputs=outs,
        collectives=collectives,
        intermediates=intermediates,
        memory=memory(leaves, f32(64, 512), 0, 3 * f32(32, 128)),
        cost=Cost(1_048_576.0, 327_680.0, None, None),
        timing=timing(0.301, 0.000188),
        check=Check(max_abs_diff=3.75, max_rel_diff=1.0, tolerance=1e-05, matches=False),
        ran=True,
    )


# --------------------------------------------------------------------------------------------
# Compile-only: a TPU-sized program analysed without running it


def compile_only_report() -> Report:
    mesh = make_mesh(("data", "model"), (2, 4), platform="tpu", kind="TPU v5 lite")
    f = "/home/ada/shardviz-demo/big.py"
    attn = src(f, (80, "big_step"), (61, "attention"))
    ffn = src(f, (80, "big_step"), (70, "ffn"))
    d, m = ("data",), ("model",)
    args = TreeLayout(
        (
            make_layout("params.wqkv", (4096, 12288), (None, "model"), mesh, "bfloat16", 2),
            make_layout("params.wo", (4096, 4096), ("model", None), mesh, "bfloat16", 2),
            make_layout("tokens", (16, 2048), ("data", None), mesh, "int32", 4),
        )
    )
    outs = TreeLayout((make_layout("logits", (16, 2048, 4096), ("data",), mesh, "bfloat16", 2),))
    collectives = (
        coll("all-gather.1", "all-gather", (8, 2048, 1024), (8, 2048, 4096), MODEL, m, attn,
             dtype="bfloat16", itemsize=2, is_async=True, dimension=2, reshard="copy.2"),
        coll("reduce-scatter.1", "reduce-scatter", (8, 2048, 4096), (8, 512, 4096), MODEL, m,
             ffn, dtype="bfloat16", itemsize=2, dimension=1),
        coll("all-reduce.1", "all-reduce", (4096,), (4096,), DATA, d, ffn, combined=(1, 2)),
        coll("all-reduce.1#2", "all-reduce", (), (), DATA, d, ffn, combined=(2, 2)),
    )  # fmt: skip
    intermediates = (
        value("dot.1", "dot", (16, 2048, 12288), (d, (), m), attn, dtype="bfloat16"),
        value("copy.2", "copy", (16, 2048, 4096), (d, (), ()), attn, reshard=True,
              dtype="bfloat16"),
        value("dot.3", "dot", (16, 2048, 4096), (d, (), ()), ffn, dtype="bfloat16"),
    )  # fmt: skip
    leaves = (
        LeafBytes("params.wqkv", "param", 2 * 4096 * 3072),
        LeafBytes("params.wo", "param", 2 * 1024 * 4096),
        LeafBytes("tokens", "batch", 4 * 8 * 2048),
    )
    return Report(
        function="big_step",
        platform="tpu",
        mesh=mesh,
        arguments=args,
        outputs=outs,
        collectives=collectives,
        intermediates=intermediates,
        memory=memory(leaves, 2 * 8 * 2048 * 4096, 0, 512 * MiB, code=2 * MiB, cpu=False),
        cost=Cost(1.65e12, 9.8e8, 1.32e13, None),
        timing=None,
        check=None,
        ran=False,
        notes=(
            "compile-only: the mesh asks for 8 tpu devices and this host has none, so the "
            "program was compiled for a TPU v5 lite topology and not run",
            "memory and collectives come from the compiler; there is no timing and no check",
        ),
    )


# --------------------------------------------------------------------------------------------
# Profiled: the Megatron block with measured op durations (illustrative on CPU)


def profile_report() -> Report:
    ops = (
        OpTiming("dot.1", 0.000121, 1, True),
        OpTiming("tanh.2", 0.0000352, 1, True),
        OpTiming("dot.3", 0.000118, 1, True),
        OpTiming("all-reduce.1", 0.0000871, 1, True),
        OpTiming("add.4", 0.0000093, 1, True),
        OpTiming("copy.5", 0.0000041, 2, True),
    )
    return dataclasses.replace(megatron_report(), profile=ops)


# --------------------------------------------------------------------------------------------
# Profiled with a timeline: every op of one step on each device (issue 12)


#: One step per device: a matmul, an all-reduce, an add (:func:`timeline_report`).
STEP = (("dot.1", 0.0, 100e-6), ("all-reduce.1", 100e-6, 80e-6), ("add.4", 180e-6, 10e-6))


def timeline_report(platform: str | None = None, devices: int = 4) -> Report:
    """The profiled Megatron report with a timeline of one step."""
    late = {"all-reduce.1": (0.0, 20e-6), "add.4": (20e-6, 0.0)}  # device 3 waits 20 µs more
    events = tuple(
        OpEvent(
            d,
            name,
            start + (late.get(name, (0.0, 0.0))[0] if d == 3 else 0.0),
            seconds + (late.get(name, (0.0, 0.0))[1] if d == 3 else 0.0),
        )
        for d in range(devices)
        for name, start, seconds in STEP
    )
    r = dataclasses.replace(profile_report(), timeline=events)
    return dataclasses.replace(r, platform=platform) if platform else r


# --------------------------------------------------------------------------------------------
# Adversarial strings and a large ledger


NASTY = "<script>alert(1)</script>"
QUOTES = "a\"b'c&d"


def nasty_report() -> Report:
    """Every model string an attacker (or an odd file name) could control."""
    mesh = make_mesh((NASTY, QUOTES), (2, 4), platform="<b>cpu</b>", kind="k&<i>")
    f = f"/tmp/{NASTY}/x&y\"z'.py"
    s = Source((Frame(f, 1, NASTY), Frame(f, 2, QUOTES)))
    g = ((0, 4), (1, 5), (2, 6), (3, 7))
    collectives = (
        Collective(
            name=f"all-reduce.{NASTY}",
            kind="all-reduce",
            in_dtype="<f4&",
            in_shape=(4,),
            out_dtype="<f4&",
            out_shape=(4,),
            in_bytes=16,
            out_bytes=16,
            moved_bytes=16,
            group_size=2,
            groups=g,
            axes=(NASTY,),
            op_name=f"jit({NASTY})/{QUOTES}",
            source=s,
            reshard=f"v{NASTY}",
        ),
        Collective(
            name=QUOTES,
            kind=f"weird-{NASTY}",
            in_dtype="f32",
            in_shape=(2,),
            out_dtype="f32",
            out_shape=(2,),
            in_bytes=8,
            out_bytes=8,
            moved_bytes=8,
            group_size=2,
            groups=(),
            axes=(NASTY, QUOTES),
            source=s,
            pairs=((0, 1), (1, 0)),
        ),
    )
    intermediates = (
        ShardingOf(
            name=f"v{NASTY}",
            op=QUOTES,
            dtype="<f4&",
            shape=(4,),
            spec=((NASTY,),),
            hlo_sharding=f"{{{NASTY}}}",
            source=s,
            reshard=True,
        ),
        ShardingOf(
            name=QUOTES,
            op=NASTY,
            dtype="f32",
            shape=(4,),
            spec=None,
            hlo_sharding=f"{{{QUOTES}}}",
            source=None,
        ),
    )
    leaf = make_layout(f"params['{NASTY}']", (8, 8), (NASTY, None), mesh)
    mem = MemoryReport(
        argument_bytes=64,
        output_bytes=16,
        alias_bytes=0,
        temp_bytes=16,
        code_bytes=8,
        peak_bytes=96,
        peak_definition=f'{NASTY} & "more"',
        by_leaf=(LeafBytes(f"params['{NASTY}']", f"role{NASTY}&{QUOTES}", 64),),
    )
    return Report(
        function=f"{NASTY}{QUOTES}",
        platform="<b>cpu</b>",
        mesh=mesh,
        arguments=TreeLayout((leaf,)),
        outputs=TreeLayout((leaf,)),
        collectives=collectives,
        intermediates=intermediates,
        memory=mem,
        cost=Cost(1.0, 2.0, None, None),
        timing=TIMING,
        check=Check(0.5, 0.5, 1e-5, False, reference=f"{NASTY} & one device"),
        profile=(OpTiming(f"op{NASTY}&{QUOTES}", 0.001, 1, True),),
        ran=True,
        notes=(f"note {NASTY} {QUOTES}",),
    )


def large_report(n_collectives: int = 200, sizes: tuple[int, int] = (8, 64)) -> Report:
    """``n_collectives`` collectives over a ``sizes`` mesh (512 devices by default)."""
    mesh = make_mesh(("data", "model"), sizes)
    nd, nm = sizes
    data = tuple(tuple(i * nm + j for i in range(nd)) for j in range(nm))
    model = tuple(tuple(i * nm + j for j in range(nm)) for i in range(nd))
    everything = (tuple(range(nd * nm)),)
    patterns = [
        ("all-reduce", data, ("data",)),
        ("all-gather", model, ("model",)),
        ("reduce-scatter", model, ("model",)),
        ("all-reduce", everything, ("data", "model")),
        ("all-to-all", model, ("model",)),
        ("collective-permute", (), ("model",)),
    ]
    ring = tuple((i * nm + j, i * nm + (j + 1) % nm) for i in range(nd) for j in range(nm))
    collectives = []
    intermediates = []
    f = "/home/ada/shardviz-demo/big_model/layers/transformer_block.py"
    for k in range(n_collectives):
        kind, groups, axes = patterns[k % len(patterns)]
        s = src(f, (100, "train_step"), (200 + k % 7, f"layer_{k % 24}"), (300 + k, "block"))
        extra = {"pairs": ring, "group_size": nm} if kind == "collective-permute" else {}
        out = (
            (128, 1024)
            if kind == "all-gather"
            else (128, 16)
            if kind == "reduce-scatter"
            else (128, 256)
        )
        collectives.append(
            coll(f"{kind}.{k}", kind, (128, 256), out, groups, axes, s,
                 reshard=f"copy.{k}" if k % 3 == 0 else None, **extra)
        )  # fmt: skip
        intermediates.append(
            value(f"copy.{k}", "copy", (1024, 256), (("data",), ()), s, k % 3 == 0)
        )
        intermediates.append(value(f"dot.{k}", "dot", (1024, 256), (("data",), ()), s))
    return Report(
        function="train_step",
        platform="cpu",
        mesh=mesh,
        arguments=TreeLayout(()),
        outputs=TreeLayout(()),
        collectives=tuple(collectives),
        intermediates=tuple(intermediates),
        memory=memory((LeafBytes("params", "param", 64 * MiB),), 64 * MiB, 64 * MiB, 8 * MiB),
        ran=False,
        notes=("compile-only: large",),
    )


# --------------------------------------------------------------------------------------------
# Estimated on a target (shardviz.analysis.estimate: no jax)


def dp_v5e_report() -> Report:
    """The data-parallel step compiled on CPU devices, estimated as if on a TPU v5e 2x4."""
    from shardviz.analysis.estimate.step import with_estimate

    return with_estimate(dp_report(), "v5e")


def fsdp_h100_report() -> Report:
    """The FSDP step compiled on CPU devices, estimated as if on one host of 8 H100s."""
    from shardviz.analysis.estimate.step import with_estimate

    return with_estimate(fsdp_report(), "h100")


def deviceless_v5e_report() -> Report:
    """The big TPU program compiled for a deviceless TPU v5e 2x4 topology: nothing ran."""
    from shardviz.analysis.estimate.step import with_estimate

    return with_estimate(dataclasses.replace(compile_only_report(), deviceless=True), "v5e")


def nasty_estimate_report() -> Report:
    """Hostile strings on the estimate's side too: the target's hardware name, its placement
    note, the estimate's notes and each collective's formula."""
    from shardviz.analysis.estimate.step import with_estimate
    from shardviz.model.hardware_presets import hardware

    hw = dataclasses.replace(hardware("v5e"), name=f"TPU {NASTY}", preset="")
    report = with_estimate(dataclasses.replace(nasty_report(), platform="cpu"), hw)
    assert report.estimate is not None and report.target is not None
    return dataclasses.replace(
        report,
        target=report.target.with_placement(f"placed {NASTY} {QUOTES}"),
        estimate=dataclasses.replace(report.estimate, notes=(f"note {NASTY} {QUOTES}",)),
        collectives=tuple(
            dataclasses.replace(c, estimated_seconds=1e-6, estimate_formula=f"f {NASTY} {QUOTES}")
            for c in report.collectives
        ),
    )


# --------------------------------------------------------------------------------------------
# Kernels: one counted from its body, one shardviz could not count


ATTENTION = src(TRAIN, (44, "train_step"), (31, "loss_fn"), (27, "attention"))


def kernel_uses(
    missing: str = "splash_mha_bwd", why: str = "its grid could not be read"
) -> tuple[KernelUse, ...]:
    """``splash_mha_fwd`` (2 calls a step) counted from its body, and ``missing`` (3 calls a
    step) not counted."""
    return (
        KernelUse(
            name="splash_mha_fwd",
            target="tpu_custom_call",
            calls=2,
            flops=33_554_432.0,
            model_flops=67_108_864.0,
            how="counted",
            why="blocks its mask computes",
            added=33_554_432.0,
            hbm_bytes=4.0 * MiB,
            source=ATTENTION,
        ),
        KernelUse(
            name=missing,
            target="tpu_custom_call",
            calls=3,
            flops=None,
            model_flops=None,
            how="not counted",
            why=why,
            hbm_bytes=6.0 * MiB,
            source=ATTENTION,
        ),
    )


def kernels_report(
    missing: str = "splash_mha_bwd", why: str = "its grid could not be read"
) -> Report:
    """The data-parallel step with two attention kernels (:func:`kernel_uses`): one counted
    (its flops in the cost), one not."""
    r = dp_report()
    assert r.cost is not None
    cost = dataclasses.replace(
        r.cost,
        flops_per_device=(r.cost.flops_per_device or 0.0) + 33_554_432.0,
        kernels=kernel_uses(missing, why),
    )
    return dataclasses.replace(r, cost=cost)


def kernels_v5e_report() -> Report:
    """:func:`kernels_report` estimated as if on a TPU v5e 2x4: not a bound."""
    from shardviz.analysis.estimate.step import with_estimate

    return with_estimate(kernels_report(), "v5e")


def nasty_kernels_report() -> Report:
    """A kernel not counted whose name and reason are hostile strings, estimated on v5e."""
    from shardviz.analysis.estimate.step import with_estimate

    return with_estimate(kernels_report(f"k{NASTY}{QUOTES}", f"why {NASTY} {QUOTES}"), "v5e")


#: Every golden fixture by name (tests/golden/report_<name>.txt).
REPORTS = {
    "dp": dp_report,
    "fsdp": fsdp_report,
    "megatron": megatron_report,
    "shard_map": shard_map_report,
    "compile_only": compile_only_report,
    "profile": profile_report,
    "dp_v5e": dp_v5e_report,
    "fsdp_h100": fsdp_h100_report,
    "deviceless_v5e": deviceless_v5e_report,
    "timeline": timeline_report,
    "kernels_v5e": kernels_v5e_report,
}

#: The fixtures above with an estimate.
ESTIMATED = ("dp_v5e", "fsdp_h100", "deviceless_v5e", "kernels_v5e")
