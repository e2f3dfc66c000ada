"""Train the zoo's smallest Llama for real on one GPU and hold shardviz's figures against it.

One command, under 10 minutes on an H100 or H200 (run it whenever a GPU is at hand; no test
depends on it). A Llama 3.1 8B with fewer layers (so that f32 master weights and Adam fit
one GPU) trains with ``sv.explain(..., steps=N, profile=True)``, and the script records:

- the measured step (median) and the MFU at it (model flops / (the GPU's peak x step));
- the estimate's lower bound: it must not exceed the measured step;
- the predicted step (the schedule's ops at their rooflines plus exposed transfers) and its
  error against the measured step;
- each device's live memory after the run (``memory_stats``) against the compiler's peak;
- the profile: the timeline's op durations are real on a GPU (``illustrative`` false),
  and the largest ops by time.

    python benchmarks/on_gpu.py [--layers 4] [--seq 2048] [--batch 4] [--steps 10] [--out F]
    python benchmarks/on_gpu.py --dry-run   # the same path on CPU at tiny sizes

Writes JSON to ``--out`` (default ``benchmarks/results/on_gpu.json``) and prints a Markdown
section for benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _args() -> argparse.Namespace:
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--remat", default="full")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "on_gpu.json"))
    ap.add_argument("--dry-run", action="store_true", help="CPU, tiny sizes: check the path")
    return ap.parse_args()


def main() -> None:
    a = _args()
    import shardviz as sv

    if a.dry_run:
        sv.use_cpu_devices(1)
    import jax

    from shardviz.strategies.zoo import get_model, init_train_state, make_train_step

    device = jax.devices()[0]
    if not a.dry_run and device.platform != "gpu":
        raise SystemExit(f"no GPU here (jax sees {device.platform}); use --dry-run on CPU")
    sizes: dict = {"layers": a.layers, "seq": a.seq, "batch": a.batch, "remat": a.remat}
    if a.dry_run:
        sizes.update(d_model=64, heads=4, kv_heads=2, head_dim=16, ffn=128, vocab=256, seq=64,
                     batch=2, attention_block=32, loss_chunk=32, layers=2)  # fmt: skip
    model = get_model("llama3.1-8b", **sizes)
    step = jax.jit(make_train_step(model), donate_argnums=(0, 1))
    state = jax.jit(lambda k: init_train_state(model, k))(jax.random.key(0))
    target = "h100" if "H100" in device.device_kind else None
    t0 = time.perf_counter()
    report = sv.explain(step, *state, steps=a.steps, profile=True, check=False,
                        target=target if not a.dry_run else "h100")  # fmt: skip
    wall = time.perf_counter() - t0
    e, cost, timing = report.estimate, report.cost, report.timing
    assert e is not None and cost is not None and timing is not None
    measured = timing.step_seconds
    live = [
        {"device": d.device_id, "in_use": d.bytes_in_use, "peak": d.peak_bytes_in_use}
        for d in report.memory.device_stats
    ]
    ops = sorted(report.profile or (), key=lambda o: -o.seconds * o.count)[:8]
    result = {
        "device": device.device_kind,
        "host": platform.node(),
        "sizes": sizes,
        "params": model.info["num_params"],
        "measured_step_s": measured,
        "step_samples_s": list(timing.step_samples),
        "mfu_at_measured": e.mfu_at(measured),
        "hfu_at_measured": e.hfu_at(measured),
        "bound_s": e.step_seconds,
        "bound_by": e.bound,
        "bound_parts_s": [e.compute_seconds, e.memory_seconds, e.collective_seconds],
        "bound_not_above_measured": e.step_seconds <= measured,
        "predicted_s": e.predicted_seconds,
        "predicted_error": None
        if e.predicted_seconds is None
        else e.predicted_seconds / measured - 1,
        "predicted_exposed": [list(x) for x in e.predicted_exposed],
        "model_flops": cost.model_flops_per_device,
        "hardware_flops": cost.flops_per_device,
        "compiler_peak_bytes": report.memory.peak_bytes,
        "live_memory": live,
        "timeline_real": bool(report.profile) and not any(o.illustrative for o in report.profile),
        "top_ops": [{"name": o.name, "seconds": o.seconds, "count": o.count} for o in ops],
        "explain_wall_s": wall,
    }
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    Path(a.out).write_text(json.dumps(result, indent=1), encoding="utf-8")
    print(json.dumps(result, indent=1))
    peak_live = max((x["peak"] for x in live), default=None)
    error = result["predicted_error"]
    predicted = (
        "n/a" if error is None else f"{(e.predicted_seconds or 0) * 1e3:.1f} ms ({error:+.0%})"
    )
    print(
        f"\n| device | params | measured step | MFU at it | bound (by) | bound <= step | "
        f"predicted (error) | live peak / compiler peak | timeline |\n"
        f"|---|---:|---:|---:|---:|---|---:|---:|---|\n"
        f"| {device.device_kind} | {result['params'] / 1e9:.2f} B | {measured * 1e3:.1f} ms | "
        f"{(result['mfu_at_measured'] or 0):.1%} | {e.step_seconds * 1e3:.1f} ms ({e.bound}) | "
        f"{'yes' if result['bound_not_above_measured'] else 'NO'} | {predicted} | "
        f"{'n/a' if peak_live is None else f'{peak_live / 2**30:.2f}'} / "
        f"{report.memory.peak_bytes / 2**30:.2f} GiB | "
        f"{'real' if result['timeline_real'] else 'illustrative'} |"
    )


if __name__ == "__main__":
    main()
