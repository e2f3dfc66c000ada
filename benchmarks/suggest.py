"""sv.suggest on the zoo transformer, 8 fake CPU devices: how soon it has its best plan, and
how that plan compares with the best built-in strategy from sv.compare on the same mesh.

Each round runs ``suggest("transformer", mesh=(2, 4) data x model, budget_s=B)`` from a
fresh start (every plan compiles again: the search builds a new step function per plan, so
explain's cache never serves it). Once, ``compare`` runs the built-in strategies dp, zero3,
tp and 2d on the same mesh, and the best of them is picked by the search's own ranking rule
(no target: work split first, then bytes moved). Then ``compare`` runs the search's best plan
(``search.best.rules``) and that strategy side by side, for measured step times (fake CPU
devices: illustrative) and the loss check.

Reported: medians over rounds of the seconds until the search's final best plan was compiled,
the seconds until it first had a plan ranked at least as well as the best built-in, and the
best plan's bytes moved, peak and per-device work against the best built-in's.

    .venv/bin/python benchmarks/suggest.py [--rounds 3] [--budget 60] [--write]

``--case mlp`` measures issue 29's MLP forward instead (``jnp.tanh(x @ w1) @ w2``, x (64, 128)
placed P('data', None), w1 (128, 512) and w2 (512, 128) unplaced): plans compiled, why the
search stopped, seconds to its best plan, and that plan against the best built-in strategy
among the search's own seeds (its section is ``suggest-mlp``).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace

import _common as C

sys.path.insert(0, str(C.ROOT))

import shardviz as sv  # noqa: E402

sv.use_cpu_devices(8)

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.sharding import NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

from shardviz.capture.mesh import Mesh  # noqa: E402
from shardviz.explainer.cache import clear_cache  # noqa: E402
from shardviz.model.search import Plan  # noqa: E402
from shardviz.strategies.runner import compare  # noqa: E402
from shardviz.strategies.search.rank import bests, rank_key, ranked  # noqa: E402
from shardviz.strategies.search.rules import jax_entries  # noqa: E402
from shardviz.strategies.search.suggestions import suggest  # noqa: E402
from shardviz.strategies.zoo import get_model  # noqa: E402

BUILTINS = ("dp", "zero3", "tp", "2d")


def _plan(label: str, report) -> Plan:
    """A compare result's report as a plan, to rank it by the search's rule."""
    cost = report.cost
    return Plan(
        label=label, how=label, specs={}, report=report, peak_bytes=report.memory.peak_bytes,
        moved_bytes=sum(c.moved_bytes * (c.trips or 1) for c in report.collectives),
        flops_per_device=cost.flops_per_device if cost else None,
        flops_global=cost.flops_global if cost else None,
    )  # fmt: skip


def builtin_best(model, mesh) -> tuple[Plan, dict[str, Plan]]:
    """The built-in strategies compared on ``mesh``, and the best by the search's rule."""
    comparison = compare(model, list(BUILTINS), mesh=mesh, steps=1)
    plans = {r.strategy: _plan(r.strategy, r.report) for r in comparison.results}
    return ranked(list(plans.values()), with_target=False)[0], plans


def one_round(model, mesh, budget: float, best_builtin: Plan, builtins: dict) -> dict:
    search = suggest(model, mesh=mesh, budget_s=budget, progress=False)
    best = search.best
    assert best is not None, "no plan fits (there is no limit here)"
    everything = list(search.plans) + list(builtins.values())
    figures = bests(everything)
    bar = rank_key(best_builtin, figures, False)
    caught_up = min(
        (p.found_seconds for p in search.plans if rank_key(p, figures, False) <= bar),
        default=float("nan"),
    )
    return {
        "search": search,
        "to_best": best.found_seconds,
        "to_builtin": caught_up,
        "elapsed": search.elapsed_seconds,
        "tried": search.tried,
        "ran_out": search.budget_ran_out,
        "moved_ratio": best.moved_bytes / best_builtin.moved_bytes,
        "peak_ratio": best.peak_bytes / best_builtin.peak_bytes,
        "work_ratio": (best.work_ratio or 0) / (best_builtin.work_ratio or 1),
        "best_ranks_first": ranked([best, best_builtin], False)[0] is best,
    }


def run_side_by_side(model, mesh, search, builtin_name: str) -> dict:
    """The search's best plan and the best built-in, run for real by compare."""
    rules = replace(search.best.rules, name="suggested")
    comparison = compare(model, [rules, builtin_name], mesh=mesh, steps=5)
    r_best, r_builtin = comparison.results
    return {
        "best_step": r_best.step_seconds,
        "builtin_step": r_builtin.step_seconds,
        "loss_ok": bool(r_best.loss_matches),
    }


def mlp(x, w1, w2):
    return jnp.tanh(x @ w1) @ w2


def mlp_round(mesh, budget: float) -> dict:
    """One search of the MLP forward from a fresh start (explain's cache cleared: the same
    function and shapes would be served from it); its best plan against the best built-in."""
    clear_cache()
    x = jax.ShapeDtypeStruct(
        (64, 128), jnp.float32, sharding=NamedSharding(mesh.jax_mesh, P("data", None))
    )
    w1 = jax.ShapeDtypeStruct((128, 512), jnp.float32)
    w2 = jax.ShapeDtypeStruct((512, 128), jnp.float32)
    search = suggest(mlp, x, w1, w2, mesh=mesh, budget_s=budget, progress=False)
    best = search.best
    assert best is not None
    plans = list(search.plans)
    builtin = ranked(
        [p for p in plans if p.how.startswith("strategy") or "(as strategy" in p.how], False
    )[0]
    return {
        "search": search,
        "tried": search.tried,
        "stopped": search.stopped,
        "elapsed": search.elapsed_seconds,
        "to_best": best.found_seconds,
        "best": best,
        "builtin": builtin,
    }


def main_mlp(a: argparse.Namespace) -> int:
    mesh = Mesh(jax.devices(), (2, 4), ("data", "model"))
    rows = [mlp_round(mesh, a.budget) for _ in range(a.rounds)]
    med = {k: C.median([r[k] for r in rows]) for k in ("tried", "elapsed", "to_best")}
    best, builtin = rows[-1]["best"], rows[-1]["builtin"]
    specs = ", ".join(f"{k} P{jax_entries(v)}" for k, v in best.specs.items())
    lines = [
        *C.preamble(
            f"benchmarks/suggest.py --case mlp --rounds {a.rounds} --budget {a.budget:g}"
            + (" --write" if a.write else "")
        ),
        "Issue 29's MLP forward (`jnp.tanh(x @ w1) @ w2`; x (64, 128) placed P('data', None), "
        "w1 (128, 512), w2 (512, 128) unplaced) on a 2 x 4 mesh (data x model) of 8 fake CPU "
        f"devices; no target, no memory limit; budget {a.budget:g} s; {a.rounds} rounds, "
        "medians. Before the structure seeds the search compiled 4 plans and stopped, "
        "converged, at w1, w2 and x all P('data', None): 248 KiB moved, peak 480 KiB.",
        "",
        "| plans compiled | stopped | search s | s to best plan | best moved | best peak "
        "| best built-in | built-in moved | built-in peak |",
        "|---:|---|---:|---:|---:|---:|---|---:|---:|",
        f"| {med['tried']:.0f} | {rows[-1]['stopped']} | {med['elapsed']:.1f} | "
        f"{med['to_best']:.2f} | {C.fmt_bytes(best.moved_bytes)} | "
        f"{C.fmt_bytes(best.peak_bytes)} | {builtin.label} | "
        f"{C.fmt_bytes(builtin.moved_bytes)} | {C.fmt_bytes(builtin.peak_bytes)} |",
        "",
        f"Best plan: {specs} ({best.how}).",
        f"Best built-in seed: {builtin.how}.",
    ]
    print("\n".join(lines))
    if a.write:
        C.replace_section(C.README, "suggest-mlp", "\n".join(lines))
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--budget", type=float, default=60.0)
    ap.add_argument("--case", choices=("transformer", "mlp"), default="transformer")
    ap.add_argument("--write", action="store_true", help="update benchmarks/README.md")
    a = ap.parse_args(argv)
    if a.case == "mlp":
        return main_mlp(a)
    model = get_model("transformer")
    mesh = Mesh(jax.devices(), (2, 4), ("data", "model"))
    best_builtin, builtins = builtin_best(model, mesh)
    rows = [one_round(model, mesh, a.budget, best_builtin, builtins) for _ in range(a.rounds)]
    ran = run_side_by_side(model, mesh, rows[-1]["search"], best_builtin.label)
    med = {k: C.median([r[k] for r in rows]) for k in
           ("to_best", "to_builtin", "elapsed", "tried", "moved_ratio", "peak_ratio",
            "work_ratio")}  # fmt: skip
    b = best_builtin
    lines = [
        *C.preamble(
            f"benchmarks/suggest.py --rounds {a.rounds} --budget {a.budget:g}"
            + (" --write" if a.write else "")
        ),
        f"Zoo transformer (default sizes) on a 2 x 4 mesh (data x model) of 8 fake CPU devices; "
        f"no target, no memory limit; budget {a.budget:g} s; {a.rounds} rounds, medians.",
        f"Best built-in by the search's rule: {b.label} ({C.fmt_bytes(b.moved_bytes)} moved, "
        f"peak {C.fmt_bytes(b.peak_bytes)}, work {b.work_ratio:.2f}x an even split).",
        "",
        "| plans tried | search s | s to best plan | s to match best built-in | best/built-in "
        "moved | best/built-in peak | best/built-in work | budget ran out |",
        "|---:|---:|---:|---:|---:|---:|---:|---|",
        f"| {med['tried']:.0f} | {med['elapsed']:.1f} | {med['to_best']:.1f} | "
        f"{med['to_builtin']:.1f} | {med['moved_ratio']:.2f} | {med['peak_ratio']:.2f} | "
        f"{med['work_ratio']:.2f} | {sum(r['ran_out'] for r in rows)}/{len(rows)} |",
        "",
        "Rounds: "
        + "; ".join(
            f"{r['tried']} plans, best after {r['to_best']:.1f} s, moved x{r['moved_ratio']:.2f}"
            for r in rows
        ),
        f"Best plan ranks above the best built-in in {sum(r['best_ranks_first'] for r in rows)}"
        f"/{len(rows)} rounds.",
        f"Run by compare (5 steps, fake CPU devices, illustrative): best plan "
        f"{C.fmt_ms(ran['best_step'])} ms/step vs {b.label} {C.fmt_ms(ran['builtin_step'])} "
        f"ms/step (ratio {ran['best_step'] / ran['builtin_step']:.2f}); loss matches the "
        f"unsharded reference: {ran['loss_ok']}.",
    ]
    print("\n".join(lines))
    if a.write:
        C.replace_section(C.README, "suggest", "\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
