"""A Llama 3.1 8B training step as users write it, with jax's own splash-attention kernel,
explained deviceless on v6e-256 against the count by hand and MaxText's measured run.

The step (tests/fixtures/splash_llama.py at ``LLAMA31_8B``) is plain jax + optax: layers
scanned under ``jax.checkpoint``, Adam, FSDP over the 256 chips, per-device batch 4,
sequence 8192, causal GQA attention through
``jax.experimental.pallas.ops.tpu.splash_attention`` in ``shard_map`` with the fused
backward. Splash declares no cost estimate, so the compiler's cost model counts it as
nothing; shardviz counts each call from the kernel's body over its grid (the blocks the
causal mask computes). Set side by side with the same compiled program's figures counting the
kernels as the compiler does (the baseline: its kernel counts dropped, ``kernels=None``):

- hardware and model flops per device per step vs the hand count
  (``splash_llama.hand_flops``);
- the MFU at MaxText's measured step (tpu-recipes' Llama3.1-8B-MaxText v6e-256:
  4.546 s/step, 45.5% MFU) with the model flops, vs the published MFU;
- the estimate's lower bound and predicted step vs the measured step, and whether any
  kernel was left uncounted.

Full size: minutes on this 2-core machine; the tests run the same code at a small size.

    .venv/bin/python benchmarks/kernels.py [--layers N] [--write]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time

import _common as C

os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")
sys.path.insert(0, str(C.ROOT))

import jax  # noqa: E402
import numpy as np  # noqa: E402

import shardviz as sv  # noqa: E402
import shardviz.explainer.explain as explain_module  # noqa: E402
from shardviz.model import Cost  # noqa: E402
from shardviz.model.units import format_flops, format_percent, format_seconds  # noqa: E402
from tests.fixtures import splash_llama  # noqa: E402

#: tpu-recipes training/trillium/Llama3.1-8B-MaxText/v6e-256: the measured step and MFU.
MEASURED_STEP = 4.546
PUBLISHED_MFU = 0.455


def explain(cfg: splash_llama.Config) -> tuple[sv.Report, Cost, float]:
    """The step explained, and its cost with the kernels as the compiler's cost model
    counts them (the same compiled program, its kernel counts dropped)."""
    mesh = jax.sharding.Mesh(np.array(sv.topology("v6e:16x16").devices).reshape(-1), ("fsdp",))
    step, state, batch = splash_llama.make(cfg, mesh)
    kept: dict = {}
    real = explain_module.program_cost

    def keep(comp, *a):
        kept["comp"], kept["args"] = comp, a
        return real(comp, *a)

    explain_module.program_cost = keep
    try:
        t0 = time.perf_counter()
        report = sv.explain(step, state, batch, run=False)
        wall = time.perf_counter() - t0
    finally:
        explain_module.program_cost = real
    baseline = real(dataclasses.replace(kept["comp"], kernels=None), *kept["args"])
    assert baseline is not None
    return report, baseline, wall


def rows(report: sv.Report, baseline: Cost, hand: dict) -> list[dict]:
    cost, e = report.cost, report.estimate
    assert cost is not None and e is not None
    peak = e.peak_flops_per_second or 1.0
    out = []
    for name, c in (("as the compiler counts them", baseline), ("counted by shardviz", cost)):
        out.append({
            "name": name,
            "matmul": c.matmul_flops_per_device,
            "model": c.model_flops_per_device,
            "hand_hardware": hand["hardware"],
            "hand_model": hand["model"],
            "mfu_at": (c.model_flops_per_device or 0.0) / (peak * MEASURED_STEP),
            "uncounted": [k.describe() for k in c.uncounted_kernels],
            "kernels": [(k.name, k.calls, k.how, k.flops, k.model_flops) for k in c.kernels],
        })  # fmt: skip
    out[-1]["bound"], out[-1]["predicted"] = e.step_seconds, e.predicted_seconds
    return out


def section(rows: list[dict], cfg: splash_llama.Config, command: str) -> str:
    out = [
        f"Llama 3.1 8B shape ({cfg.n_layers} layers), splash attention (causal, GQA, "
        f"{cfg.block}-blocks, fused backward), FSDP on v6e:16x16, per-device batch "
        f"{cfg.batch_per_device}, sequence {cfg.seq}; explained with `run=False`. Measured "
        f"by MaxText: {format_seconds(MEASURED_STEP)}/step, {format_percent(PUBLISHED_MFU)} "
        "MFU.",
        "",
        "| kernels | hardware flops/device | vs hand | model flops/device | vs hand "
        "| MFU at measured step | lower bound | predicted | uncounted |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        out.append(
            f"| {r['name']} | {format_flops(r['matmul'])} | "
            f"{r['matmul'] / r['hand_hardware'] - 1:+.1%} | {format_flops(r['model'])} | "
            f"{r['model'] / r['hand_model'] - 1:+.1%} | "
            f"{format_percent(r['mfu_at'])} | "
            f"{format_seconds(r['bound']) if r.get('bound') else '—'} | "
            f"{format_seconds(r['predicted']) if r.get('predicted') else '—'} | "
            f"{len(r['uncounted'])} |"
        )
    counted = rows[-1]
    out += ["", "Kernels per device per step (counted):", ""]
    for name, calls, how, flops, model in counted["kernels"]:
        out.append(
            f"- `{name}`: {calls} calls, {how}, {format_flops(flops)} as run, "
            f"{format_flops(model)} model"
        )
    out += ["", f"Hand count: hardware {format_flops(counted['hand_hardware'])}, model "
            f"{format_flops(counted['hand_model'])} per device per step.", "",
            f"    {command}", "", C.machine_note()]  # fmt: skip
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=splash_llama.LLAMA31_8B.n_layers)
    parser.add_argument("--write", action="store_true", help="update benchmarks/README.md")
    args = parser.parse_args()
    cfg = dataclasses.replace(splash_llama.LLAMA31_8B, n_layers=args.layers)
    hand = splash_llama.hand_flops(cfg)
    report, baseline, wall = explain(cfg)
    table = rows(report, baseline, hand)
    for r in table:
        print({k: v for k, v in r.items() if k != "kernels"}, flush=True)
    print(f"explain: {wall:.0f} s", flush=True)
    command = "python benchmarks/kernels.py" + (
        f" --layers {args.layers}" if args.layers != splash_llama.LLAMA31_8B.n_layers else ""
    )
    text = section(table, cfg, command)
    print(text)
    if args.write:
        C.replace_section(C.README, "kernels", text)


if __name__ == "__main__":
    main()
