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

``--case llama`` searches a published decoder, Llama 3.1's architecture at reduced size
(``get_model("llama3.1-8b", **LLAMA)``: 4 layers, d_model 256, 8 heads of 32, ffn 1024,
vocabulary 4096, seq 256, batch 16), on the same mesh, under a memory cap that rules out pure
data and pure tensor parallelism: 0.9 x the lower of the compiled peaks of ``dp`` (parameters
replicated, the batch over all 8 devices) and ``tp`` (the architecture's logical Megatron over
'model', the batch whole). The built-ins are the architecture's logical axis rules (``fsdp``,
``fsdp+tp``, ``tp``, ``dp+fsdp``, ``sp``) and ``dp``, each compiled once, compile-only, by
the search's own runner (so their figures are counted as the search counts its plans') with
the reading that keeps their axes' meaning on data x model (:data:`LLAMA_READINGS`); the best
that fits the cap, by the search's rule, is the bar. Each round runs ``suggest(model,
mesh=mesh, memory_limit=cap, budget_s=B)`` from a fresh start. Reported: medians of plans
compiled, seconds to the best plan and to the first plan ranked at least as well as the best
fitting built-in, and the best plan against it (bytes moved, peak, work per device); and the
best plan's how, remat policy and layer specs (its section is ``suggest-llama``)::

    .venv/bin/python benchmarks/suggest.py --case llama [--rounds 1] [--budget 120] [--write]
"""

from __future__ import annotations

import argparse
import sys
import time
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
from shardviz.strategies.candidates import Space, mapping_words  # noqa: E402
from shardviz.strategies.rules.logical import logical_rule_set  # noqa: E402
from shardviz.strategies.rules.plans import jax_entries  # noqa: E402
from shardviz.strategies.runner import compare  # noqa: E402
from shardviz.strategies.search.inputs import search_inputs  # noqa: E402
from shardviz.strategies.search.progress import Quiet  # noqa: E402
from shardviz.strategies.search.rank import bests, rank_key, ranked  # noqa: E402
from shardviz.strategies.search.suggestions import _Runner, _with_weights, suggest  # noqa: E402
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


def seconds_to_match(search, builtin: Plan, builtins: list[Plan]) -> float:
    """Seconds until the search first had a plan ranked at least as well as ``builtin``,
    ranked among its plans and ``builtins`` (NaN: never)."""
    figures = bests(list(search.plans) + builtins)
    bar = rank_key(builtin, figures, False)
    return min(
        (p.found_seconds for p in search.plans if rank_key(p, figures, False) <= bar),
        default=float("nan"),
    )


def one_round(model, mesh, budget: float, best_builtin: Plan, builtins: dict) -> dict:
    search = suggest(model, mesh=mesh, budget_s=budget, progress=False)
    best = search.best
    assert best is not None, "no plan fits (there is no limit here)"
    caught_up = seconds_to_match(search, best_builtin, list(builtins.values()))
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


#: Llama 3.1's architecture (GQA, SwiGLU, RMSNorm, a scanned layer stack) at reduced size:
#: one plan compiles in about 8 s on this machine.
LLAMA = dict(
    layers=4, d_model=256, heads=8, kv_heads=8, head_dim=32, ffn=1024, vocab=4096, seq=256,
    batch=16,
)  # fmt: skip

#: Each built-in's reading on the data x model mesh, keeping its axes' meaning (``None``: pure
#: data parallelism, parameters replicated and the batch over every device).
LLAMA_READINGS: dict[str, dict[str, tuple[str, ...]] | None] = {
    "dp": None,
    "fsdp": {"fsdp": ("data", "model")},
    "fsdp+tp": {"fsdp": ("data",), "tensor": ("model",)},
    "tp": {"tensor": ("model",)},
    "dp+fsdp": {"data": ("data",), "fsdp": ("model",)},
    "sp": {"fsdp": ("data",), "sequence": ("model",)},
}


def llama_builtins(model, mesh) -> dict[str, Plan]:
    """The built-ins compiled once each, compile-only, by the search's runner (as the search
    compiles its plans), on the reading of :data:`LLAMA_READINGS`; no memory limit."""
    inputs = search_inputs(model, (), mesh, None, None, 0)
    structure = inputs.structure()
    assert structure is not None
    leaves = _with_weights(inputs.leaves(), structure.weights)
    links = [(k.dims, k.reduced, k.stacked) for k in structure.links]
    space = Space(leaves, dict(mesh.jax_mesh.shape), links)
    runner = _Runner(space, inputs, None, 1e9, Quiet())
    plans: dict[str, Plan] = {}
    for name, reading in LLAMA_READINGS.items():
        if reading is None:
            choice = space.replicated(tuple(mesh.axis_names))
        else:
            choice = space.from_rule_set(logical_rule_set(name, model), reading, any_batch=True)
        assert choice is not None, f"{name} does not fit the mesh"
        began = time.monotonic()
        plan = runner.try_choice(choice, f"built-in {name}")
        assert plan is not None
        plans[name] = replace(plan, label=name, found_seconds=time.monotonic() - began)
    return plans


def llama_round(model, mesh, cap: int, budget: float, builtins: dict[str, Plan]) -> dict:
    """One search under ``cap`` from a fresh start, against the best built-in that fits."""
    clear_cache()
    capped = [replace(p, fits=p.compiled and p.peak_bytes <= cap) for p in builtins.values()]
    bar_plan = ranked(capped, with_target=False)[0]
    assert bar_plan.fits, "no built-in fits the cap"
    search = suggest(model, mesh=mesh, memory_limit=cap, budget_s=budget, progress=False)
    best = search.best
    assert best is not None and best.fits, "no plan fits the cap"
    caught_up = seconds_to_match(search, bar_plan, capped)
    return {
        "search": search,
        "best": best,
        "builtin": bar_plan,
        "tried": search.tried,
        "stopped": search.stopped,
        "elapsed": search.elapsed_seconds,
        "to_best": best.found_seconds,
        "to_builtin": caught_up,
        "moved": best.moved_bytes,
        "peak": best.peak_bytes,
        "moved_ratio": best.moved_bytes / bar_plan.moved_bytes,
        "peak_ratio": best.peak_bytes / bar_plan.peak_bytes,
        "work_ratio": (best.work_ratio or 0) / (bar_plan.work_ratio or 1),
        "best_ranks_first": ranked([best, bar_plan], False)[0] is best,
        "first_of_all": ranked([*search.plans, *capped], False)[0] is best,
    }


def _layer_specs(plan: Plan) -> str:
    """The plan's specs of the layer weights (and the batch), in jax's spelling."""
    specs = [
        f"{k.removeprefix('params/')} P{jax_entries(v)}"
        for k, v in plan.specs.items()
        if k.startswith("params/layers/")
    ]
    batch = next((v for k, v in plan.specs.items() if k.startswith("batch/")), None)
    if batch is not None:
        specs.append(f"batch P{jax_entries(batch)}")
    return ", ".join(specs)


def main_llama(a: argparse.Namespace) -> int:
    model = get_model("llama3.1-8b", **LLAMA)
    mesh = Mesh(jax.devices(), (2, 4), ("data", "model"))
    builtins = llama_builtins(model, mesh)
    peaks = {n: builtins[n].peak_bytes for n in ("dp", "tp")}
    cap = int(0.9 * min(peaks.values()))
    rows = [llama_round(model, mesh, cap, a.budget, builtins) for _ in range(a.rounds)]
    med = {k: C.median([r[k] for r in rows]) for k in
           ("tried", "elapsed", "to_best", "to_builtin", "moved", "peak", "moved_ratio",
            "peak_ratio", "work_ratio")}  # fmt: skip
    last = rows[-1]
    best, b = last["best"], last["builtin"]
    shapes = jax.eval_shape(model.init_params, jax.random.key(0))
    n_params = sum(x.size for x in jax.tree.leaves(shapes))

    def fig(p: Plan) -> str:
        fits = "fits" if p.peak_bytes <= cap else "over"
        reading = LLAMA_READINGS[p.label]
        how = mapping_words(reading) if reading else "replicated, batch over both axes"
        return (
            f"{p.label} ({how}): {C.fmt_bytes(p.moved_bytes)} moved, peak "
            f"{C.fmt_bytes(p.peak_bytes)} ({fits}), work {p.work_ratio:.2f}x"
        )

    remat = "the model's own ('full')" if best.remat is None else repr(best.remat)
    lines = [
        *C.preamble(
            f"benchmarks/suggest.py --case llama --rounds {a.rounds} --budget {a.budget:g}"
            + (" --write" if a.write else "")
        ),
        f"`get_model('llama3.1-8b', {', '.join(f'{k}={v}' for k, v in LLAMA.items())})` "
        f"(Llama 3.1's architecture at reduced size; {n_params / 1e6:.2f} M f32 parameters; "
        "its train step with Adam) on a 2 x 4 "
        f"mesh (data x model) of 8 fake CPU devices; no target; budget {a.budget:g} s; "
        f"{a.rounds} rounds, medians. Memory cap {C.fmt_bytes(cap)} per device: 0.9 x the "
        f"lower of the compiled peaks of pure data parallelism (dp, "
        f"{C.fmt_bytes(peaks['dp'])}) and pure tensor parallelism (tp: Megatron over 'model', "
        f"the batch whole, {C.fmt_bytes(peaks['tp'])}), so both are over it.",
        "",
        "Built-ins, each compiled once, compile-only, by the search's runner (work: "
        "per-device flops over an even split of the whole program's):",
        "",
        *[f"- {fig(p)}" for p in builtins.values()],
        "",
        f"Best built-in that fits, by the search's rule: {b.label}.",
        "",
        "| plans compiled | stopped | search s | s to best plan | s to match best built-in "
        "| best moved | best peak | best/built-in moved | best/built-in peak "
        "| best/built-in work | best ranks first |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
        f"| {med['tried']:.0f} | {', '.join(sorted({r['stopped'] for r in rows}))} | "
        f"{med['elapsed']:.1f} | {med['to_best']:.1f} | {med['to_builtin']:.1f} | "
        f"{C.fmt_bytes(int(med['moved']))} | {C.fmt_bytes(int(med['peak']))} | "
        f"{med['moved_ratio']:.2f} | {med['peak_ratio']:.2f} | {med['work_ratio']:.2f} | "
        f"{sum(r['best_ranks_first'] for r in rows)}/{len(rows)} |",
        "",
        "Rounds: "
        + "; ".join(
            f"{r['tried']} plans ({r['stopped']}), best {r['best'].label} after "
            f"{r['to_best']:.1f} s ({C.fmt_bytes(r['moved'])} moved, peak "
            f"{C.fmt_bytes(r['peak'])}, remat {r['best'].remat or 'own'}"
            + ("" if r["best"].how == best.how else f"; {r['best'].how}")
            + f"), matched {r['builtin'].label} after {r['to_builtin']:.1f} s"
            for r in rows
        )
        + ".",
        f"Best plan ranks first among all the search's plans and the built-ins in "
        f"{sum(r['first_of_all'] for r in rows)}/{len(rows)} rounds.",
        f"Best plan (last round, {best.label}): {best.how}; remat {remat}"
        f"{'; optimizer state on host' if best.on_host else ''}; work "
        f"{best.work_ratio:.2f}x. Specs: {_layer_specs(best)}.",
    ]
    print("\n".join(lines))
    if a.write:
        C.replace_section(C.README, "suggest-llama", "\n".join(lines))
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--budget", type=float, default=None, help="seconds (default 60; llama 120)")
    ap.add_argument("--case", choices=("transformer", "mlp", "llama"), default="transformer")
    ap.add_argument("--write", action="store_true", help="update benchmarks/README.md")
    a = ap.parse_args(argv)
    if a.budget is None:
        a.budget = 120.0 if a.case == "llama" else 60.0
    if a.case == "llama":
        return main_llama(a)
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
