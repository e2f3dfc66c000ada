"""compare() against doing the same work directly with jax, for the transformer block.

One round times both sides on DP, ZeRO-3, TP and 2-D, in rotating order:
- shardviz: ``shardviz.compare("transformer", strategies, steps=S)``;
- bare jax: for each strategy, the same placement (the same rules, placed before timing),
  ``jax.jit(step, shardings).lower(...).compile()``, then 1 + S steps run directly (first run
  + timed steps), the same number compare runs.
Both start from fresh function objects each round, so neither hits jax's compile caches.

Target (issue 4): compare <= 1.3x the bare sum (median of per-round ratios).

    .venv/bin/python benchmarks/compare.py [--rounds 3] [--write]
"""

from __future__ import annotations

import argparse
import functools
import sys

import _common as C

sys.path.insert(0, str(C.ROOT))

import shardviz as sv  # noqa: E402

sv.use_cpu_devices(8)

import jax  # noqa: E402
import optax  # noqa: E402
from jax.sharding import NamedSharding, PartitionSpec  # noqa: E402

import shardviz.strategies.runner as cmp  # noqa: E402
import shardviz.strategies.step as placing  # noqa: E402
from shardviz.capture.mesh import Mesh  # noqa: E402
from shardviz.strategies.rules import default_mesh_shape  # noqa: E402
from shardviz.strategies.rules.named import get_rule_set  # noqa: E402
from shardviz.strategies.zoo import get_model  # noqa: E402

STRATEGIES = ("dp", "zero3", "tp", "2d")
STEPS = 3


def prepare_bare(model_sizes: dict) -> list:
    """Per strategy: the placed state and a function that compiles and runs the step.

    Placement happens here, outside the timed region: the baseline is what the issue names,
    bare compile + the same number of steps.
    """
    model = get_model("transformer", **model_sizes)
    opt = optax.adam(1e-3)
    state = cmp.initial_state(model, opt)
    jobs = []
    for name in STRATEGIES:
        rs = get_rule_set(name)
        jm = Mesh(range(8), default_mesh_shape(rs, 8), rs.axes).jax_mesh
        axes = dict(zip(jm.axis_names, jm.devices.shape, strict=True))
        p_shape, o_shape, b_shape = jax.eval_shape(lambda s: s, state)
        sh = functools.partial(placing._shardings, jm)
        p_sh = sh(placing.tree_specs(p_shape, rs.params, axes, "params", False))
        g_sh = sh(placing.tree_specs(p_shape, rs.rules_for("grads"), axes, "grads", False))
        o_sh = sh(
            placing._optimizer_specs(o_shape, p_shape, rs.rules_for("optimizer"), axes, False)
        )
        b_sh = sh(placing.tree_specs(b_shape, rs.batch, axes, "batch", False))
        placed = jax.device_put(state, (p_sh, o_sh, b_sh))
        out_sh = (p_sh, o_sh, NamedSharding(jm, PartitionSpec()))
        jobs.append((placed, (p_sh, o_sh, b_sh), out_sh, g_sh))
    return [model, opt, jobs]


def bare(prepared: list) -> None:
    """Compile each strategy's step with plain jax (a fresh function: no cache) and run it."""
    model, opt, jobs = prepared
    for placed, in_sh, out_sh, g_sh in jobs:

        def step(params, opt_state, batch, g_sh=g_sh):
            loss, grads = jax.value_and_grad(model.loss)(params, batch)
            grads = jax.lax.with_sharding_constraint(grads, g_sh)
            updates, opt_state = opt.update(grads, opt_state, params)
            return optax.apply_updates(params, updates), opt_state, loss

        jitted = jax.jit(step, in_shardings=in_sh, out_shardings=out_sh)
        compiled = jitted.lower(*placed).compile()
        for _ in range(1 + STEPS):
            jax.block_until_ready(compiled(*placed))


def shardviz_compare(model_sizes: dict) -> None:
    sv.compare("transformer", STRATEGIES, steps=STEPS, **model_sizes)


def measure(rounds: int, sizes: dict) -> dict:
    prepared = prepare_bare(sizes)
    times = C.time_rounds(
        {"bare": lambda: bare(prepared), "compare": lambda: shardviz_compare(sizes)},
        rounds=rounds,
    )
    ratios = [c / b for c, b in zip(times["compare"], times["bare"], strict=True)]
    return {"bare": C.median(times["bare"]), "compare": C.median(times["compare"]),
            "ratio": C.median(ratios), "ratios": ratios}  # fmt: skip


def markdown(row: dict, rounds: int, sizes: dict) -> str:
    ok = row["ratio"] <= 1.3
    return "\n".join(
        [
            *C.preamble("benchmarks/compare.py --write"),
            f"Transformer ({sizes or 'default sizes'}) under {', '.join(STRATEGIES)} on 8 fake "
            f"CPU devices, {STEPS} timed steps each; {rounds} rounds alternating; ratio = "
            "median of per-round compare / bare.",
            "",
            "| bare jax (compile + steps, all strategies) s | shardviz.compare s | ratio |",
            "|---:|---:|---:|",
            f"| {row['bare']:.2f} | {row['compare']:.2f} | {row['ratio']:.2f} |",
            "",
            f"- {'PASS' if ok else 'MISS'}: compare <= 1.3x the bare sum: median ratio "
            f"{row['ratio']:.2f} (rounds: {', '.join(f'{r:.2f}' for r in row['ratios'])}).",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--write", action="store_true")
    a = ap.parse_args(argv)
    sizes: dict = {}
    row = measure(a.rounds, sizes)
    text = markdown(row, a.rounds, sizes)
    print(text)
    if a.write:
        C.replace_section(C.README, "compare", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
