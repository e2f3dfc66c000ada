"""What an estimate's inputs may get wrong, said on the estimate itself.

- A CPU compile estimated for a TPU or GPU target (``explain(..., target="v5e")`` on CPU
  devices, ``compare(..., target="v5e")``): the collectives, their dtypes and the memory are
  the CPU compiler's, and the target's compiler may choose otherwise. Measured on an MoE
  training step (issue 41): the CPU compile gathered FSDP weights in f32 where the TPU
  compile gathered them in bf16 after the cast (half the bytes), and kept an all-to-all the
  TPU compile replaced by all-gather + all-reduce. :func:`preview_notes` names the figures
  of this program that may differ and gives the deviceless compile that has the target's
  own compiler make them.
- A loop whose body the compiler's cost model refused (:attr:`~shardviz.model.Loop.costed`):
  the compiler's flops and bytes accessed hold its body once, so they and the HFU built on
  them are lower bounds (:func:`loop_notes`).

Model in, words out; no jax.
"""

from __future__ import annotations

from shardviz.model.collective import Collective
from shardviz.model.hardware import Target
from shardviz.model.program import Cost, Report
from shardviz.model.units import format_bytes, format_count, format_flops

__all__ = ["loop_notes", "preview_notes"]

#: Collectives a compiler may run in the program's narrower compute type (casting before
#: them, not after): measured on an FSDP step, f32 weights cast to bf16 for the matmul, the
#: CPU compile gathered and reduced in f32, the TPU compile both in bf16.
_CASTABLE = ("all-gather", "all-reduce", "reduce-scatter")
#: The narrow compute types.
_NARROW = ("bfloat16", "float16")


def _per_step(c: Collective) -> int:
    """Bytes ``c`` moves per step per device (its loop trips multiplied; unknown: once)."""
    return c.moved_bytes * (c.trips if c.trips is not None else 1)


def _kinds(cs: list[Collective]) -> str:
    """``3 all-gathers 1.5 MiB, 1 all-reduce 2 MiB a step``: by kind, in ledger order."""
    kinds = list(dict.fromkeys(c.kind for c in cs))
    parts = []
    for kind in kinds:
        of = [c for c in cs if c.kind == kind]
        n = len(of)
        moved = format_bytes(sum(map(_per_step, of)))
        parts.append(f"{format_count(n)} {kind}{'s' if n != 1 else ''} {moved}")
    return ", ".join(parts) + " a step"


def _narrow_type(report: Report) -> str | None:
    """The narrow float type the program computes in somewhere (its values or arguments)."""
    dtypes = {v.dtype for v in report.intermediates} | {a.dtype for a in report.arguments}
    return next((d for d in _NARROW if d in dtypes), None)


def _widened_matmuls(report: Report, target: Target, compiler: str) -> list[str]:
    """A note where the program casts to fp8 or int8, the target has a faster peak for
    that precision, and the CPU compile kept no such matmul (it widens their operands)."""
    dtypes = {v.dtype for v in report.intermediates} | {a.dtype for a in report.arguments}
    ops = report.cost.ops if report.cost is not None else ()
    kept = {p for op in ops for p, _ in op.narrow_flops}
    hw = target.hardware
    out = []
    for precision, prefixes in (("fp8", ("float8",)), ("int8", ("int8", "uint8", "int4"))):
        cast = sorted(d for d in dtypes if d.startswith(prefixes))
        faster = hw.peak_for(precision) > hw.peak_flops_bf16
        if cast and faster and precision not in kept:
            out.append(
                f"may differ on {compiler}: the program casts to {cast[0]}, and the CPU "
                f"compiler widens {precision} matmuls, so they are timed here at the bf16 peak; "
                f"on {hw.name} they may run at its {precision} peak "
                f"({format_flops(hw.peak_for(precision))}/s a chip against "
                f"{format_flops(hw.peak_flops_bf16)}/s)"
            )
    return out


def deviceless_call(report: Report, target: Target) -> str:
    """The calls that compile ``report``'s program for ``target`` deviceless, with the same
    mesh: what gives the target compiler's own collectives, dtypes and memory."""
    fn = report.function or "fn"
    mesh = report.mesh
    shape = tuple(mesh.axis_sizes) if mesh is not None else (target.devices,)
    axes = tuple(mesh.axis_names) if mesh is not None else ("data",)
    extra = "gpu" if target.kind == "gpu" else "tpu"
    n = mesh.size if mesh is not None else 1
    devices = "pod.devices" if n == target.devices else f"pod.devices[:{n}]"
    return (
        f'pod = sv.topology("{target.name}"); mesh = sv.Mesh({devices}, {shape}, {axes});'
        " the arguments as jax.ShapeDtypeStruct placed on it"
        f" (sv.mark_sharding(x, mesh, spec)); sv.explain({fn}, *args, run=False)"
        f" (needs shardviz[{extra}])"
    )


def preview_notes(report: Report, target: Target) -> list[str]:
    """The notes an estimate for ``target`` made from a CPU compile carries: which figures
    may differ on the target's compiler (gathered dtypes, collective kinds, memory, fusion)
    and the deviceless compile that gives its own; none for a compile made for the target
    (real or deviceless devices) or a CPU target."""
    if report.platform != "cpu" or target.kind not in ("tpu", "gpu"):
        return []
    compiler = "TPU" if target.kind == "tpu" else "GPU"
    notes = [
        f"compiled for CPU: collectives, their dtypes, memory and cost are the CPU compiler's;"
        f" the {compiler} compiler may choose otherwise"
    ]
    narrow = _narrow_type(report)
    wide = [c for c in report.collectives if c.kind in _CASTABLE and c.in_dtype == "float32"]
    if narrow and wide:
        notes.append(
            f"may differ on {compiler}: the CPU compile moves float32 in {_kinds(wide)}; the "
            f"program computes in {narrow}, and the {compiler} compiler may cast before these "
            f"collectives and move {narrow}, half the bytes"
        )
    notes += _widened_matmuls(report, target, compiler)
    to_all = [c for c in report.collectives if c.kind == "all-to-all"]
    if to_all:
        notes.append(
            f"may differ on {compiler}: the CPU compile keeps {_kinds(to_all)}; the "
            f"{compiler} compiler may replace them with all-gather + all-reduce (other kinds, "
            "other bytes)"
        )
    notes.append(
        f"the {compiler} compiler's own figures, deviceless: {deviceless_call(report, target)}"
    )
    return notes


def loop_notes(cost: Cost | None) -> list[str]:
    """One note per loop whose trips the flops and bytes accessed could not count (the
    compiler's cost model refused its body alone): what then is a lower bound."""
    if cost is None:
        return []
    out = []
    for lp in cost.uncosted_loops:
        runs = "an unknown number of" if lp.runs is None else format_count(lp.runs)
        out.append(
            f"loop at {lp.where} runs {runs} times a step, but the compiler's flops and bytes "
            "accessed count its body once (its cost model refused the body alone): they and "
            "what is built on them (HFU) are lower bounds; matmul, model flops and the "
            "per-op work count every trip"
        )
    return out
