"""explain(run=False) against a bare jax compile of the same MLP train step, on 8 fake devices.

For each strategy (data parallel, FSDP, Megatron tensor parallel), and for issue 41's MoE
compiled deviceless for TPU v5p (libtpu), one round times, in rotating order:
``jax.jit(f).lower(*args).compile()`` and ``shardviz.explain(f, *args, run=False)``, each on
a fresh function object so neither jax's caches nor shardviz's are hit. A third unit times a
repeated ``explain`` served from its cache. Medians over rounds; the ratio is explain / bare.
``--full-moe`` adds the MoE at issue 41's own size (0.9B parameters on v5p:4x4x4), one round
of each: minutes per compile.

Targets (issue 3): explain <= 1.15x the bare compile (median ratio); a cached repeat <= 20 ms.

    .venv/bin/python benchmarks/explain.py [--rounds 9] [--no-moe] [--full-moe] [--write]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

import _common as C

sys.path.insert(0, str(C.ROOT))

import shardviz as sv  # noqa: E402

sv.use_cpu_devices(8)

import jax  # noqa: E402

from shardviz.strategies import mlp  # noqa: E402

B, D, H = 256, 512, 2048
STRATEGIES = {
    "data parallel": ((2, 4), {"w1": (), "b1": (), "w2": (), "b2": ()}),
    "FSDP (1-D mesh of 8)": (
        (8, 1),
        {"w1": ("data", None), "b1": ("data",), "w2": ("data", None), "b2": ("data",)},
    ),
    "Megatron TP": (
        (2, 4),
        {"w1": (None, "model"), "b1": ("model",), "w2": ("model", None), "b2": ()},
    ),
}


def _args(shape, specs):
    mesh = sv.Mesh(range(8), shape, ("data", "model"))
    params = mlp.init_params(jax.random.key(0), D, H)
    batch = mlp.make_batch(jax.random.key(1), B, D)
    params = {k: sv.mark_sharding(v, mesh, specs[k]) for k, v in params.items()}
    batch = {k: sv.mark_sharding(v, mesh, ("data", None)) for k, v in batch.items()}
    return params, batch


MOE = "MoE of issue 41, deviceless v5p:2x2x2"
FULL_MOE = "MoE of issue 41 at full size, deviceless v5p:4x4x4"


def _moe(full: bool = False) -> tuple:
    """The issue-41 MoE decoder (tests/fixtures/moe_models.py, GShard top-2), its train
    step and arguments as ``ShapeDtypeStruct``s on a deviceless TPU v5p slice: reduced, on
    8 chips with the fixture's mesh shape; or at the issue's size (``full``: 0.9B parameters,
    0.31B active, 16 layers of width 1024, GQA 16/4, top-2 of 8 experts of width 2048,
    vocabulary 32,000; 256 x 2048 tokens) on 64 chips, ('data', 'fsdp', 'tensor', 'expert')
    = (1, 16, 2, 2)."""
    import numpy as np
    from jax.sharding import Mesh

    from tests.fixtures import moe_models as M

    if full:
        cfg = dataclasses.replace(M.GSHARD, vocab=32_000, d_model=1024, n_layers=16,
                                  n_heads=16, n_kv_heads=4, head_dim=64, d_ff=2048,
                                  experts=8, seq=2048, batch=256)  # fmt: skip
        topology, shape = "v5p:4x4x4", (1, 16, 2, 2)
    else:
        cfg, topology, shape = M.GSHARD, "v5p:2x2x2", M.make_mesh().devices.shape
    chips = np.array(sv.topology(topology).devices).reshape(shape)
    step, args, _ = M.make_abstract(cfg, Mesh(chips, ("data", "fsdp", "tensor", "expert")))
    return step, args, {"donate_argnums": 0}


def _cases(moe: bool, full_moe: bool = False) -> dict:
    """Name -> (function, arguments, jit options) of each program timed."""
    cases = {
        name: (mlp.train_step, _args(shape, specs), {})
        for name, (shape, specs) in STRATEGIES.items()
    }
    if moe:
        cases[MOE] = _moe()
    if full_moe:
        cases[FULL_MOE] = _moe(full=True)
    return cases


def measure(rounds: int, moe: bool = False, full_moe: bool = False) -> list[dict]:
    rows = []
    for name, (f, args, opts) in _cases(moe, full_moe).items():

        def bare(f=f, args=args, opts=opts):
            jax.jit(C.fresh(f), **opts).lower(*args).compile()

        def explain(f=f, args=args, opts=opts):
            sv.explain(C.fresh(f), *args, run=False, **opts)

        # The full-size MoE compiles for minutes: one round each, no warm-up, no cached repeat.
        full = name == FULL_MOE
        units = {"bare": bare, "explain": explain}
        times = C.time_rounds(units, rounds=1 if full else rounds, warmup=0 if full else 1)
        cached = None
        if not full:
            sv.explain(f, *args, run=False, **opts)  # fill the cache
            cached = C.median(
                C.time_rounds(
                    {"cached": lambda f=f, a=args, o=opts: sv.explain(f, *a, run=False, **o)},
                    rounds=max(rounds, 15),
                )["cached"]
            )
        ratios = [e / b for e, b in zip(times["explain"], times["bare"], strict=True)]
        rows.append(
            {
                "strategy": name,
                "bare": C.median(times["bare"]),
                "explain": C.median(times["explain"]),
                "ratio": C.median(ratios),
                "cached": cached,
                "rounds": len(ratios),
            }
        )
    return rows


def markdown(rows: list[dict], rounds: int) -> str:
    worst = max(r["ratio"] for r in rows)
    slowest_cache = max(r["cached"] for r in rows if r["cached"] is not None)
    lines = [
        *C.preamble("benchmarks/explain.py --write"),
        f"MLP train step (batch {B}, {D} -> {H} -> {D}, float32, SGD) on 8 fake CPU devices"
        + (
            "; the MoE of issue 41 (tests/fixtures/moe_models.py, GShard top-2 of 4 experts, "
            "scanned layers under remat, AdamW) compiled for a deviceless TPU v5p:2x2x2"
            if any(r["strategy"] == MOE for r in rows)
            else ""
        )
        + (
            "; the same MoE at the issue's size (0.9B parameters, 256 x 2048 tokens) on a "
            "deviceless v5p:4x4x4, one round of each (minutes per compile)"
            if any(r["strategy"] == FULL_MOE for r in rows)
            else ""
        )
        + f"; {rounds} rounds, bare compile and explain alternating; ratio = median of "
        "per-round explain / bare.",
        "",
        "| strategy | bare lower+compile ms | explain(run=False) ms | ratio | cached repeat ms |",
        "|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['strategy']} | {C.fmt_ms(r['bare'])} | {C.fmt_ms(r['explain'])} | "
            f"{r['ratio']:.2f} | {C.fmt_ms(r['cached']) if r['cached'] is not None else '—'} |"
        )
    ok1 = worst <= 1.15
    ok2 = slowest_cache <= 0.020
    lines += [
        "",
        "Targets:",
        "",
        f"- {'PASS' if ok1 else 'MISS'}: explain <= 1.15x the bare compile: worst median ratio "
        f"{worst:.2f}.",
        f"- {'PASS' if ok2 else 'MISS'}: a cached repeat <= 20 ms: slowest "
        f"{C.fmt_ms(slowest_cache)} ms.",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--write", action="store_true", help="update benchmarks/README.md")
    ap.add_argument("--no-moe", action="store_true", help="leave out the deviceless TPU MoE")
    ap.add_argument("--full-moe", action="store_true",
                    help="also the MoE at the issue's full size (about 20 minutes)")  # fmt: skip
    a = ap.parse_args(argv)
    rows = measure(a.rounds, moe=not a.no_moe, full_moe=a.full_moe)
    text = markdown(rows, a.rounds)
    print(text)
    if a.write:
        C.replace_section(C.README, "explain", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
