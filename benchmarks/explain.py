"""explain(run=False) against a bare jax compile of the same MLP train step, on 8 fake devices.

For each strategy (data parallel, FSDP, Megatron tensor parallel), one round times, in
rotating order: ``jax.jit(f).lower(*args).compile()`` and ``shardviz.explain(f, *args,
run=False)``, each on a fresh function object so neither jax's caches nor shardviz's are hit. A third unit times a repeated
``explain`` served from its cache. Medians over rounds; the ratio is explain / bare.

Targets (issue 3): explain <= 1.15x the bare compile (median ratio); a cached repeat <= 20 ms.

    .venv/bin/python benchmarks/explain.py [--rounds 9] [--write]
"""

from __future__ import annotations

import argparse
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


def measure(rounds: int) -> list[dict]:
    rows = []
    for name, (shape, specs) in STRATEGIES.items():
        args = _args(shape, specs)
        f = mlp.train_step

        def bare(f=f, args=args):
            jax.jit(C.fresh(f)).lower(*args).compile()

        def explain(f=f, args=args):
            sv.explain(C.fresh(f), *args, run=False)

        times = C.time_rounds({"bare": bare, "explain": explain}, rounds=rounds)
        sv.explain(f, *args, run=False)  # fill the cache
        cached = C.time_rounds({"cached": lambda f=f, args=args: sv.explain(f, *args, run=False)},
                               rounds=max(rounds, 15))  # fmt: skip
        ratios = [e / b for e, b in zip(times["explain"], times["bare"], strict=True)]
        rows.append(
            {
                "strategy": name,
                "bare": C.median(times["bare"]),
                "explain": C.median(times["explain"]),
                "ratio": C.median(ratios),
                "cached": C.median(cached["cached"]),
            }
        )
    return rows


def markdown(rows: list[dict], rounds: int) -> str:
    worst = max(r["ratio"] for r in rows)
    slowest_cache = max(r["cached"] for r in rows)
    lines = [
        *C.preamble("benchmarks/explain.py --write"),
        f"MLP train step (batch {B}, {D} -> {H} -> {D}, float32, SGD) on 8 fake CPU devices; "
        f"{rounds} rounds, bare compile and explain alternating; ratio = median of per-round "
        "explain / bare.",
        "",
        "| strategy | bare lower+compile ms | explain(run=False) ms | ratio | cached repeat ms |",
        "|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['strategy']} | {C.fmt_ms(r['bare'])} | {C.fmt_ms(r['explain'])} | "
            f"{r['ratio']:.2f} | {C.fmt_ms(r['cached'])} |"
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
    a = ap.parse_args(argv)
    rows = measure(a.rounds)
    text = markdown(rows, a.rounds)
    print(text)
    if a.write:
        C.replace_section(C.README, "explain", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
