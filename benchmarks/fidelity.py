"""shardviz's figures for published training runs, against what those runs measured.

MaxText's tiering table (AI-Hypercomputer/maxtext, docs/reference/models/tiering.md; configs
in benchmarks/maxtext_trillium_model_configs.py) publishes, per model and slice, the MFU and
tokens/s/device of a measured step. For each run the zoo's model (same dims, sequence and
per-device batch, remat as MaxText ran it) is planned compile-only for the same slice with
``sv.compare(..., target=<topology>)`` and set against it:

- parameters vs the published count;
- model flops per device per step (shardviz's count of the compiled program's matmuls,
  recomputation once) vs MaxText's own formula (``training_flops``: 6 x weights x tokens +
  attention in full, x3);
- the MFU at MaxText's measured step (tokens per device per step / published tokens/s)
  vs the published MFU;
- the estimated lower bound and the predicted step vs the measured step;
- the compiler's HBM peak vs the chip's HBM;
- the plan's wall time vs a bare compile of the same lowered program.

Full-size compiles: minutes each on this 2-core machine, never run by the tests (which
compile the same code at reduced sizes).

    .venv/bin/python benchmarks/fidelity.py [--runs 8b,70b,mixtral] [--jobs N] [--fresh] [--write]

Each finished plan is kept on disk (``benchmarks/_plan_cache.py``: keyed by the run, shardviz's
code and the compiler's versions), so a rerun of unchanged runs reads them back; plans to
make run in worker processes, one per two cores unless ``--jobs`` says otherwise.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from dataclasses import dataclass

import _common as C
import _plan_cache as PC

os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")
sys.path.insert(0, str(C.ROOT))

import shardviz as sv  # noqa: E402

sv.use_cpu_devices(8)

import shardviz.explainer.explain as explain_module  # noqa: E402
from shardviz.model.units import format_percent  # noqa: E402
from shardviz.strategies.models.configs import get_config, param_count  # noqa: E402
from shardviz.strategies.models.flops import training_flops  # noqa: E402


@dataclass(frozen=True)
class Run:
    """A published run: model, slice, sequence, per-device batch, remat, and what it measured."""

    key: str
    model: str
    topology: str
    seq: int
    batch_per_device: int
    remat: str
    strategy: str
    mfu: float
    tokens_per_second: float
    note: str = ""
    capacity_factor: float | None = None
    #: The layers' weight matmuls in fp8 (the recipe's ``quantization: fp8_full``).
    quantization: str = ""

    @property
    def step_seconds(self) -> float:
        return self.batch_per_device * self.seq / self.tokens_per_second


#: The recipes' remat, tensor by tensor (tpu-recipes, training/trillium/Llama3.1-8B-MaxText/
#: v6e-256/README.md and Llama3.1-70B-MaxText/v6e-256/README.md, "Workload Details").
RECIPE_8B = sv.custom_remat(
    decoder_layer_input="offload", query_proj="offload", key_proj="offload",
    value_proj="offload", out_proj="offload",
)  # fmt: skip
RECIPE_70B = sv.custom_remat(
    decoder_layer_input="offload", query_proj="offload", key_proj="offload",
    value_proj="offload",
)  # fmt: skip

RECIPE_70B_7X = sv.custom_remat(
    decoder_layer_input="device", context="device", query_proj="device", key_proj="device",
    value_proj="device",
)  # fmt: skip

RUNS: tuple[Run, ...] = (
    Run("8b", "llama3.1-8b", "v6e:16x16", 8192, 4, RECIPE_8B, "fsdp", 0.4546, 7207,
        "the recipe's custom remat: layer input and q, k, v and output projections offloaded"),
    Run("70b", "llama3.1-70b", "v6e:16x16", 8192, 5, RECIPE_70B, "fsdp", 0.5033, 960,
        "the recipe's custom remat: layer input and q, k, v projections offloaded"),
    Run("mixtral", "mixtral-8x7b", "v5p:8x4x4", 4096, 8, "full", "fsdp", 0.5256, 2909,
        "per-device batch assumed 8 (the table gives MFU and tokens/s; the MFU at the "
        "measured step does not depend on it); capacity factor 1: each expert computes "
        "exactly its share of the top-2 picks, as MaxText's dropless kernel does",
        capacity_factor=1.0),
    # Ironwood (tpu-recipes, training/ironwood/README.md's table; the recipes' scripts under
    # training/ironwood/llama3.1-70b/): 64 chips (4x4x4), 128 jax devices, per-device batch 2,
    # SL 8192. The table gives TFLOP/s and tokens/s per chip: per device, half; the MFU in
    # the recipes' terms is TFLOP/s per chip over the chip's bf16 peak (2,307), for the fp8
    # run too.
    Run("70b-7x", "llama3.1-70b", "tpu7x:4x4x4", 8192, 2, RECIPE_70B_7X, "fsdp",
        1207.05 / 2307, 2686.98 / 2, "bf16; the recipe keeps the layer input and q, k, v "
        "and attention context on the device"),
    Run("70b-7x-fp8", "llama3.1-70b", "tpu7x:4x4x4", 8192, 2, RECIPE_70B_7X, "fsdp",
        1854.19 / 2307, 4127.56 / 2, "fp8_full: the weight matmuls in fp8 at the fp8 peak",
        quantization="fp8"),
)  # fmt: skip


RUN_BY_KEY = {r.key: r for r in RUNS}


def plan(run: Run) -> dict:
    """Compile the run's step for its slice; the compiled program is kept for a bare
    recompile of the same lowered module (the baseline of the plan's wall time)."""
    kept: dict = {}
    real = explain_module.program_cost

    def keep(comp, *a):
        kept["comp"] = comp
        return real(comp, *a)

    explain_module.program_cost = keep
    try:
        t0 = time.perf_counter()
        extra = {} if run.capacity_factor is None else {"capacity_factor": run.capacity_factor}
        if run.quantization:
            extra["quantization"] = run.quantization
        c = sv.compare(
            run.model, [run.strategy], target=run.topology, batch_per_device=run.batch_per_device,
            seq=run.seq, remat=run.remat, **extra,
        )  # fmt: skip
        wall = time.perf_counter() - t0
    finally:
        explain_module.program_cost = real
    t0 = time.perf_counter()
    kept["comp"].lowered.compile()
    bare = time.perf_counter() - t0
    return {"comparison": c, "wall": wall, "bare": bare}


def measure(key: str) -> dict:
    """The run's figures, JSON-ready (a worker process's result, cached on disk)."""
    run = RUN_BY_KEY[key]
    p = plan(run)
    r = p["comparison"].results[0].report
    e, cost = r.estimate, r.cost
    assert e is not None and cost is not None
    config = get_config(run.model)
    tokens = run.batch_per_device * run.seq
    formula = training_flops(config, tokens=tokens, seq=run.seq).total
    hbm = e.hbm_bytes
    return {
        "run": run.key,
        "params": param_count(config),
        "published_params": config.published_params,
        "model_flops": cost.model_flops_per_device,
        "hardware_flops": cost.flops_per_device,
        "formula": formula,
        # In the recipes' terms: model flops over the chip's bf16 peak, whatever the matmuls'
        # precision (the same as e.mfu_at for a program without fp8 matmuls).
        "mfu_at": (cost.model_flops_per_device or 0.0)
        / (r.target.hardware.peak_flops_bf16 / r.target.devices_per_chip * run.step_seconds),
        "mfu_own_peak_at": e.mfu_at(run.step_seconds),
        "formula_mfu_at": formula
        / (r.target.hardware.peak_flops_bf16 / r.target.devices_per_chip * run.step_seconds),
        "bound": e.step_seconds,
        "bound_by": e.bound,
        "parts": (e.compute_seconds, e.memory_seconds, e.collective_seconds),
        "peak": r.memory.peak_bytes,
        "hbm": hbm,
        "wall": p["wall"],
        "bare": p["bare"],
        "lower_bound": e.lower_bound,
        "predicted": e.predicted_seconds,
        "exposed": e.predicted_exposed_seconds,
        "exposed_top": e.predicted_exposed[:3],
        "hbm_ops_bytes": sum(o.hbm_bytes * o.runs for o in cost.ops if not o.transfer),
        "transfer_bytes": sum(
            (o.hbm_bytes + o.host_bytes) * o.runs for o in cost.ops if o.transfer
        ),
        "xla_bytes": cost.bytes_accessed_per_device,
        "loops": len(cost.loops),
    }


def halves_causal_attention(run: Run) -> bool:
    """Whether the run's published TFLOP/s count causal attention's matmuls at half: the
    Ironwood table's MaxText does (1,207.05 TFLOP/s a chip x 12.2 s is 7.36 PFLOP a device
    for the 70B, its formula with attention halved; in full, 7.89), the Trillium and v5p
    recipes' earlier MaxText counts them in full."""
    return run.topology.startswith("tpu7x")


def recipe_mfu(run: Run, m: dict) -> float:
    """The MFU at the measured step in the recipe's terms: shardviz's model flops (attention
    in full), less the half its formula leaves out where the recipe halves causal
    attention, over the bf16 peak."""
    if not halves_causal_attention(run):
        return m["mfu_at"]
    config = get_config(run.model)
    tokens = run.batch_per_device * run.seq
    half = training_flops(config, tokens=tokens, seq=run.seq, causal_half=True).total
    peak_seconds = m["model_flops"] / m["mfu_at"]
    return (m["model_flops"] - (m["formula"] - half)) / peak_seconds


def section(results: list[dict], command: str) -> str:
    lines = C.preamble(command, ("jax", "libtpu"))
    lines += [
        "| run | params (published) | model flops / device / step (MaxText formula) | "
        "MFU at the measured step (published) | bound (measured step) | predicted step (error) | "
        "HBM peak / per device | plan / bare compile |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    checks = []
    for m in results:
        run = RUN_BY_KEY[m["run"]]
        params = f"{m['params'] / 1e9:.2f} B ({m['published_params'] / 1e9:.2f} B)"
        flops = (
            f"{m['model_flops']:.3g} ({m['formula']:.3g}, x{m['model_flops'] / m['formula']:.3f})"
        )
        m = {**m, "mfu_at": recipe_mfu(run, m)}
        mfu = f"{format_percent(m['mfu_at'])} ({format_percent(run.mfu)})"
        bound = f"{m['bound']:.3g} s {m['bound_by']} ({run.step_seconds:.3g} s)"
        hbm = f"{m['peak'] / 2**30:.1f} / {m['hbm'] / 2**30:.0f} GiB"
        error = m["predicted"] / run.step_seconds - 1 if m["predicted"] else None
        predicted = f"{m['predicted']:.3g} s ({error:+.0%})" if error is not None else "unknown"
        ratio = f"{m['wall']:.0f} s / {m['bare']:.0f} s = {m['wall'] / m['bare']:.2f}"
        lines.append(
            f"| {run.model} on {run.topology}, SL {run.seq}, batch {run.batch_per_device}/device,"
            f" remat {run.remat}{', ' + run.quantization if run.quantization else ''} |"
            f" {params} | {flops} | {mfu} | {bound} | {predicted} | {hbm} |"
            f" {ratio} |"
        )
        c, mem, comm = m["parts"]
        checks += [
            (abs(m["params"] / m["published_params"] - 1) <= 0.005,
             f"{run.key}: parameters within 0.5% of published "
             f"({m['params'] / m['published_params'] - 1:+.3%})"),
            (abs(m["mfu_at"] / run.mfu - 1) <= 0.05,
             f"{run.key}: MFU at the measured step within 5% of the published "
             f"({format_percent(m['mfu_at'])} vs {format_percent(run.mfu)}; with MaxText's "
             f"formula {format_percent(m['formula_mfu_at'])})"),
            (m["bound"] <= run.step_seconds,
             f"{run.key}: the bound not above the measured step ({m['bound']:.3g} s, "
             f"{m['bound_by']}-bound: compute {c:.3g} s, memory {mem:.3g} s, communication "
             f"{comm:.3g} s; measured {run.step_seconds:.3g} s)"),
            (error is not None and abs(error) <= 0.25,
             f"{run.key}: predicted step within 25% of the measured ({predicted}; measured "
             f"{run.step_seconds:.3g} s; ops {m['predicted'] - m['exposed']:.3g} s, exposed "
             f"transfers {m['exposed']:.3g} s, largest "
             + ", ".join(f"{n} {t:.3g} s" for n, t in m["exposed_top"])
             + f"; HBM bytes of the ops {m['hbm_ops_bytes']:.3g}, of async copies "
             f"{m['transfer_bytes']:.3g}, XLA's count {m['xla_bytes']:.3g})"),
            (m["peak"] <= m["hbm"],
             f"{run.key}: fits ({m['peak'] / 2**30:.1f} GiB of {m['hbm'] / 2**30:.0f} GiB)"),
            (m["wall"] <= 1.15 * m["bare"] and m["wall"] <= 180,
             f"{run.key}: plan within 1.15x of its bare compile and under 3 minutes "
             f"({m['wall']:.0f} s vs {m['bare']:.0f} s)"),
        ]  # fmt: skip
    lines += ["", "Targets:", ""]
    lines += [f"- {'PASS' if ok else 'FAIL'}: {text}" for ok, text in checks]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", default=",".join(r.key for r in RUNS))
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--jobs", type=int, default=None,
                    help="plans at once (default: one per two cores)")  # fmt: skip
    ap.add_argument("--fresh", action="store_true", help="plan again, ignoring the disk cache")
    a = ap.parse_args()
    keys = a.runs.split(",")
    chosen = [r for r in RUNS if r.key in keys]
    t0 = time.perf_counter()
    items = ((r.key, dataclasses.asdict(r)) for r in chosen)
    done = PC.run_all(items, measure, a.jobs, fresh=a.fresh)
    wall = time.perf_counter() - t0
    results = [done[r.key][0] for r in chosen]
    cached = sum(1 for r in chosen if done[r.key][1])
    body = section(results, f"benchmarks/fidelity.py --runs {a.runs} --write")
    body += (
        f"\n\nThis table: {len(chosen) - cached} plan(s) compiled, {cached} read from the disk "
        f"cache (keyed by the run, shardviz's code and the compiler's versions), "
        f"{PC.workers(a.jobs)} worker(s); wall time {wall:.1f} s."
    )
    print(body)
    if a.write:
        C.replace_section(C.README, "fidelity", body)


if __name__ == "__main__":
    main()
