"""benchmarks/fidelity.py's runs and table: each run cites its source and its recipe's flags,
the table's error summary is the issue's (mean absolute and worst), a run that could not be
planned says why (no compile here: synthetic figures)."""

from __future__ import annotations

import sys
from pathlib import Path

import jax.numpy as jnp
import pytest

from shardviz.strategies.rules.logical import logical_rule_set
from shardviz.strategies.zoo import get_model

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import fidelity as F  # noqa: E402


def test_every_run_cites_its_source_and_its_step_is_its_tokens_over_its_rate() -> None:
    assert len(F.RUNS) >= 20 and len(F.RUN_BY_KEY) == len(F.RUNS)
    for run in F.RUNS:
        assert run.source, run.key
        assert 0 < run.mfu < 1, run.key
        assert run.step_seconds == pytest.approx(
            run.batch_per_device * run.seq / run.tokens_per_second
        )
    # The step each recipe prints beside its tokens/s ("completed step: .., seconds: ..";
    # the Ironwood table's step column): batch x sequence / tokens/s must give it back, or a
    # batch, sequence or rate was copied wrong (the Llama 2 70B config says batch 3; its
    # log line's tokens/s and total_weights say 2).
    published = {
        "8b": 4.546, "70b": 42.656, "70b-7x": 12.2, "70b-7x-fp8": 7.93, "8b-8": 3.443,
        "8b-16": 3.393, "8b-32": 3.495, "8b-64": 5.652, "8b-128": 4.602, "70b-32": 17.79,
        "70b-64": 18.688, "70b-128": 34.786, "mistral-7b": 6.32, "mixtral-v6e": 13.484,
        "llama2-70b": 9.052, "405b-v5p": 131.474, "70b-7x-256": 12.27, "70b-7x-256-fp8": 7.95,
        "405b-7x": 98.34, "405b-7x-fp8": 64.37, "maverick-v5p": 24.792, "scout-v5p": 31.652,
        "deepseek-v5p": 90.668, "deepseek-7x": 27.02, "gemma3-12b": 7.318,
        "gemma3-12b-2x": 7.793, "gemma3-12b-4x": 8.390, "405b-v6e": 54.803,
        "mixtral-8x22b": 24.706, "qwen3-7x": 30.87, "qwen3-7x-fp8": 27.67,
        "deepseek-7x-fp8": 22.47,
    }  # fmt: skip
    for key, seconds in published.items():
        assert F.RUN_BY_KEY[key].step_seconds == pytest.approx(seconds, rel=5e-3), key


def test_each_run_counts_attention_as_its_maxtext_did() -> None:
    """A run whose published TFLOP/s over its tokens/s is the formula with causal attention
    halved says so (``causal_half``), and the rest are the formula in full: the Ironwood
    table, the later v5p logs (Scout, DeepSeek-V3) and Gemma 3 halve; Maverick's v0.1.3 and
    the Trillium Llamas count in full; so does the 405B on v5p (its MFU, 68.5%, is the halved
    formula's at its step). Every run: the wrong choice is off by 3.4% (Mixtral 8x22B) to
    22% (DeepSeek-V3 on v5p), far past the tolerance."""
    from shardviz.strategies.models.configs import get_config
    from shardviz.strategies.models.flops import training_flops

    for run in F.RUNS:
        key = run.key
        tokens = run.batch_per_device * run.seq
        flops = training_flops(get_config(run.model), tokens, run.seq, run.causal_half).total
        hw = F.sv.hardware(F.chip_of(run))
        published = run.mfu * hw.peak_flops_bf16 / hw.devices_per_chip * run.step_seconds
        assert flops / published == pytest.approx(1.0, rel=3e-3), key


def test_recipe_flags_belong_to_runs_and_are_part_of_the_plans_key() -> None:
    assert set(F.RECIPE_FLAGS) <= set(F.RUN_BY_KEY)
    assert all(f.startswith("--") and "=" in f for fs in F.RECIPE_FLAGS.values() for f in fs)
    fields = F.plan_fields(F.RUN_BY_KEY["8b"])
    assert fields["xla_flags"] == F.RECIPE_FLAGS["8b"] and "note" not in fields


def _figures(key: str, predicted: float) -> dict:
    run = F.RUN_BY_KEY[key]
    return {
        "run": key, "params": 8.03e9, "published_params": 8.03e9, "model_flops": 1.0e15,
        "formula": 1.0e15, "mfu_at": run.mfu, "formula_mfu_at": run.mfu, "bound": 1.0,
        "bound_by": "compute", "parts": (1.0, 0.5, 0.2), "peak": 2**30, "hbm": 32 * 2**30,
        "wall": 100.0, "bare": 100.0, "predicted": predicted, "exposed": 0.0,
        "exposed_top": [], "hbm_ops_bytes": 1.0, "transfer_bytes": 0.0, "xla_bytes": 1.0,
        "flags_applied": 28, "flags_unknown": ["xla_sc_disjoint_spmem"],
    }  # fmt: skip


def test_the_summary_is_the_mean_and_worst_error_and_a_failed_plan_says_why() -> None:
    a, b = F.RUN_BY_KEY["8b"], F.RUN_BY_KEY["70b"]
    results = [
        _figures("8b", a.step_seconds * 1.04),
        _figures("70b", b.step_seconds * 0.90),
        {"run": "405b-v5p", "error": "MemoryError: out of host memory"},
    ]
    text = F.section(results, "benchmarks/fidelity.py")
    assert "mean absolute error 7.0% (goal 5%), worst 10% (70b; goal 10%)" in text
    assert "- FAIL: predicted step over 2 runs" in text
    assert "held out" not in text  # both are runs the efficiency is fitted on
    held = F.section([*results[:2], _figures("8b-32", F.RUN_BY_KEY["8b-32"].step_seconds * 1.2)],
                     "benchmarks/fidelity.py")  # fmt: skip
    assert (
        "- FAIL: held out (runs the matmul efficiency was not fitted on: 1): mean "
        "absolute error 20.0%, worst 20% (8b-32)" in held
    )
    assert "not planned here: MemoryError: out of host memory" in text
    assert "- FAIL: not planned here: 405b-v5p" in text
    assert "28 of 30 applied; not known here: xla_sc_disjoint_spmem" in text
    assert text.count("| tpu-recipes training/trillium/Llama3.1-8B-MaxText/v6e-256") == 1


def test_a_plan_without_its_bare_recompile_says_so_and_has_no_ratio_check() -> None:
    timed, untimed = _figures("8b", 5.0), _figures("70b", 40.0) | {"bare": None}
    text = F.section([timed, untimed], "benchmarks/fidelity.py --no-baseline")
    assert "| 100 s / 100 s = 1.00 |" in text and "| 100 s / not timed |" in text
    assert "8b: plan within 1.1x of its bare compile" in text
    assert "70b: plan within 1.1x" not in text


def test_the_cold_time_is_the_sum_of_the_plans_own_wall_times() -> None:
    results = [_figures("8b", 5.0), _figures("70b", 40.0) | {"wall": 300.0},
               _figures("8b-8", 3.0) | {"wall": 500.0}, {"run": "405b-v5p", "error": "x"}]  # fmt: skip
    assert F.cold_time(results) == (
        " Cold, its 3 plans took 15 min to make, one after another on one worker (each "
        "plan's own wall time, recorded when it was made: 100 s to 500 s, median 300 s)."
    )
    assert F.cold_time(results[3:]) == ""


def test_a_float32_run_keeps_its_plans_key_and_a_bf16_one_passes_its_dtype() -> None:
    """weight_dtype came after plans were kept: a float32 run's key leaves it out (so its
    kept plans still match), a bf16 run's key has it."""
    assert "weight_dtype" not in F.plan_fields(F.RUN_BY_KEY["70b-64"])
    assert F.plan_fields(F.RUN_BY_KEY["70b-32"])["weight_dtype"] == "bfloat16"


def test_a_kept_report_is_estimated_again_by_todays_code() -> None:
    """A plan made at other code keeps its compiled program's report; the table's figures
    come from that report estimated now, on the chip's figures as they are now, and say
    which commit compiled it."""
    import dataclasses

    import shardviz as sv

    c = sv.compare(
        "llama3.1-8b", ["fsdp"], target="v6e:2x4", batch_per_device=1, seq=256,
        layers=2, d_model=256, ffn=512, heads=4, kv_heads=2, head_dim=64, vocab=1024,
    )  # fmt: skip
    report = c.results[0].report
    run = F.RUN_BY_KEY["8b"]
    # Kept with no estimate and older chip figures (half the peak): both come from today.
    hw = report.target.hardware
    old = dataclasses.replace(hw, peak_flops_bf16=hw.peak_flops_bf16 / 2, host_bandwidth=1.0)
    kept = dataclasses.replace(
        report, estimate=None, target=dataclasses.replace(report.target, hardware=old)
    )
    entry = {
        "report": kept.to_json(),
        "commit": "abc1234", "version": "old", "wall": 1.0, "bare": None,
    }  # fmt: skip
    again = F.current(run, entry, "new")
    assert "report" not in again and again["estimated_again"]
    assert again["predicted"] == report.estimate.predicted_seconds > 0
    assert again["bound"] == report.estimate.step_seconds
    assert {k: again[k] for k in F.figures(run, report)} == F.figures(run, report)
    assert F._planned_at(again) == "abc1234, estimated again"
    same = F.current(run, entry | {"version": "new"}, "new")  # this code's own figures
    assert "report" not in same and "estimated_again" not in same


def test_the_efficiency_fit_is_on_three_named_runs_and_finds_what_they_measured() -> None:
    """The fit's runs are at most three, named, of one chip; on runs whose measured steps
    are their matmuls at half the peak it finds 0.5."""
    import dataclasses

    from shardviz.analysis.estimate import with_estimate
    from shardviz.model import Cost, Device, MemoryReport, MeshLayout, OpWork, Report, TreeLayout

    assert 1 <= len(F.FIT_RUNS) <= 3 and set(F.FIT_RUNS) <= set(F.RUN_BY_KEY)
    assert {F.chip_of(F.RUN_BY_KEY[k]) for k in F.FIT_RUNS} == {"v6e"}
    mesh = MeshLayout(("d",), (8,), tuple(Device(i) for i in range(8)))
    pairs = []
    for flops in (1e12, 3e12):
        ops = (OpWork("mm", flops, 1e6), OpWork("add", 0, 1e9))
        report = with_estimate(
            Report(
                function="step", platform="cpu", mesh=mesh, arguments=TreeLayout(()),
                outputs=TreeLayout(()), collectives=(), intermediates=(),
                memory=MemoryReport(0, 0, 0, 0, 0, 0), cost=Cost(flops, 1e9, None, None, ops=ops),
            ),
            "v6e:2x4",
        )  # fmt: skip
        step = flops / (0.5 * 9.2e14) + 1e9 / 1.6e12  # the matmul at half the peak, the add
        run = F.RUN_BY_KEY["8b"]
        run = dataclasses.replace(run, tokens_per_second=run.batch_per_device * run.seq / step)
        assert F.predicted_at(report, 1.0) < step
        pairs.append((run, report))
    assert F.fit_efficiency(pairs) == pytest.approx(0.5)
    assert F.fit_efficiency(pairs[:1]) == pytest.approx(0.5)


def test_v6e_carries_the_fitted_efficiency_and_its_source_names_the_fits_runs() -> None:
    from shardviz.model.hardware_presets import hardware

    v6e = hardware("v6e")
    assert v6e.matmul_efficiency is not None and 0.5 < v6e.matmul_efficiency < 1.0
    source = v6e.source("matmul_efficiency")
    assert f"runs {', '.join(F.FIT_RUNS)}" in source and "fidelity.py --fit" in source
    others = [hardware(n) for n in ("v5e", "v5p", "tpu7x", "h100")]
    assert all(hw.matmul_efficiency is None for hw in others)  # no measured runs fitted


def test_the_ironwood_recipes_keep_adams_mu_in_bf16_in_their_plans_and_keys() -> None:
    """mu_dtype=bfloat16 in the Llama 3.1 and DeepSeek-V3 Ironwood recipes (not Qwen3's, no
    other): their plans' optimizer keeps Adam's first moment in bf16, the second in f32;
    the key has it, a float32 run's key leaves it out (its kept plans still match)."""
    narrow = {r.key for r in F.RUNS if r.mu_dtype == "bfloat16"}
    ironwood = {r.key for r in F.RUNS if F.chip_of(r) == "tpu7x" and "qwen3" not in r.key}
    assert narrow == ironwood and len(narrow) == 8
    assert F.plan_fields(F.RUN_BY_KEY["deepseek-7x"])["mu_dtype"] == "bfloat16"
    assert "mu_dtype" not in F.plan_fields(F.RUN_BY_KEY["qwen3-7x"])
    state = F.plan_options(F.RUN_BY_KEY["70b-7x"])["optimizer"].init({"w": jnp.ones(4)})
    assert state[0].mu["w"].dtype == jnp.bfloat16 and state[0].nu["w"].dtype == jnp.float32
    assert "optimizer" not in F.plan_options(F.RUN_BY_KEY["8b"])


def test_deepseek_on_ironwood_splits_its_experts_on_their_own_dim_over_fsdp() -> None:
    """The recipe's fsdp_shard_on_exp: each routed expert's three weights split over 'fsdp'
    on the expert dim (256 experts, one a device), their width whole; every other weight
    and every activation as the built-in fsdp splits them."""
    run = F.RUN_BY_KEY["deepseek-7x"]
    assert run.strategy == F.RUN_BY_KEY["deepseek-7x-fp8"].strategy == F.EXPERTS_ON_FSDP
    model = get_model(run.model)
    ours, fsdp = F._strategy(run), logical_rule_set("fsdp", model)
    sizes = {"fsdp": 256}

    def specs(rule_set, shapes):
        table = dict(rule_set.params)
        return {path: table[f"^{path}$"](shape, sizes) for path, shape in shapes.items()}

    experts = {f"layers/moe/{w}": (58, 256, 7168, 2048) for w in ("w_gate", "w_up")}
    experts["layers/moe/w_down"] = (58, 256, 2048, 7168)
    assert set(specs(ours, experts).values()) == {(None, "fsdp", None, None)}
    others = {"layers/attn/wq_a": (58, 7168, 1536), "layers/moe/router": (58, 7168, 256)}
    assert specs(ours, others) == specs(fsdp, others)
    assert ours.extra["logical_rules"].activations == fsdp.extra["logical_rules"].activations


def _kept(key: str, predicted: float, **more: object) -> dict:
    """A run's entry as git keeps it: its figures, the run it is of, where it was made."""
    run_key = F.PC.run_key(F.plan_fields(F.RUN_BY_KEY[key]))
    return _figures(key, predicted) | {"run_key": run_key, "commit": "abc1234"} | more


def test_figures_kept_in_git_stand_in_for_a_run_this_disk_knows_nothing_of(
    tmp_path: Path,
) -> None:
    """A table written on a machine without a run's plan takes the run's figures from git,
    as they were estimated, and says which commits planned and estimated them; never for a
    run defined otherwise since, nor where this disk has a plan or a failure of the run."""
    kept = {
        "8b": _kept("8b", 4.6, estimated_at="def5678"),
        "70b": _kept("70b", 40.0) | {"run_key": "a run defined otherwise"},
        "8b-8": _kept("8b-8", 3.4, estimated_at="abc1234"),
    }
    chosen = [F.RUN_BY_KEY[k] for k in ("8b", "70b", "8b-8")]
    got = F.from_git(chosen, kept, tmp_path)
    assert set(got) == {"8b", "8b-8"} and got["8b"]["kept_in_git"]
    text = F.section([got["8b"], got["8b-8"]], "benchmarks/fidelity.py --reuse")
    assert "| abc1234, estimated again at def5678 |" in text and "| abc1234 |" in text
    assert "4.6 s (+1%)" in text
    fields = F.plan_fields(F.RUN_BY_KEY["8b-8"])
    (tmp_path / f"{F.PC.run_key(fields)}.failed").write_text('{"error": "x"}')
    assert set(F.from_git(chosen, kept, tmp_path)) == {"8b"}


def test_each_invocation_keeps_the_figures_it_worked_out_here_and_no_others() -> None:
    """A run planned or read from this disk replaces its entry (without its report; a
    figure estimated again says the commit that did it); a run with nothing here, or whose
    figures came from git, keeps its entry; a failure is kept with its reason."""
    old = {"8b": _kept("8b", 9.0), "70b": _kept("70b", 9.0), "8b-8": _kept("8b-8", 9.0)}
    chosen = [F.RUN_BY_KEY[k] for k in ("8b", "70b", "8b-8", "8b-16", "405b-v5p")]
    results = [
        _figures("8b", 4.6) | {"report": "{...}", "commit": "abc1234", "version": "v",
                               "estimated_again": True},
        _kept("70b", 9.0) | {"kept_in_git": True},
        {"run": "8b-8", "error": F.PC.NOT_PLANNED},
        _figures("8b-16", 3.4) | {"commit": "fff0000", "version": "v"},
        {"run": "405b-v5p", "error": "SIGSEGV (at fff0000)"},
    ]  # fmt: skip
    new = F.updated_figures(old, chosen, results, "head123")
    assert list(new) == sorted(new)
    assert new["8b"]["predicted"] == 4.6 and new["8b"]["estimated_at"] == "head123"
    assert not {"report", "version", "estimated_again"} & set(new["8b"])
    assert new["8b"]["run_key"] == F.PC.run_key(F.plan_fields(F.RUN_BY_KEY["8b"]))
    assert new["70b"] == old["70b"] and new["8b-8"] == old["8b-8"]
    assert new["8b-16"]["estimated_at"] == "fff0000"
    assert new["405b-v5p"]["error"] == "SIGSEGV (at fff0000)"


def test_the_readme_table_shows_what_git_keeps_for_each_run_planned_at_the_same_commit() -> None:
    """Where the README's row of a run and the figures kept in git were planned at one
    commit, the row is those figures (the cell saying which commit estimated them aside):
    the table and the file it can be written from never disagree. A row changed by hand,
    or figures kept since without writing the table again, are caught."""
    readme = F.C.README.read_text(encoding="utf-8")
    assert F.disagreeing(readme, F.read_figures()) == []
    kept = {"8b": _kept("8b", 4.6, estimated_at="def5678")}
    table = F.section([{**kept["8b"], "kept_in_git": True}], "x")
    written = f"<!-- fidelity:begin -->\n{table}\n<!-- fidelity:end -->"
    assert F.disagreeing(written, kept) == []
    assert F.disagreeing(written.replace("4.6 s (+1%)", "4.5 s (-1%)"), kept) == ["8b"]
    assert F.disagreeing(written, {"8b": kept["8b"] | {"predicted": 4.0}}) == ["8b"]
    elsewhere = {"8b": kept["8b"] | {"commit": "0000000", "predicted": 4.0}}
    assert F.disagreeing(written, elsewhere) == []  # planned at other code: not comparable


def test_every_run_git_keeps_is_a_run_of_the_table_with_the_figures_a_row_needs() -> None:
    needs = {"predicted", "bound", "peak", "hbm", "commit", "estimated_at", "run_key"}
    for key, entry in F.read_figures().items():
        assert key in F.RUN_BY_KEY, key
        assert "error" in entry or needs <= set(entry), key


def test_a_run_this_compiler_cannot_plan_takes_the_newer_compilers_figures(tmp_path: Path) -> None:
    """Qwen3 on Ironwood crashes this libtpu: its figures, planned by the current-jax leg's
    compiler and kept in git, go into the table with that compiler named, even beside this
    compiler's recorded failure; any other run's figures from another compiler do not."""
    newer = {"jax": "0.12.0.1", "jaxlib": "0.12.0.1", "libtpu": "0.0.50.1"}

    def kept_by(key: str) -> dict:
        fields = F.plan_fields(F.RUN_BY_KEY[key])
        run_key = F.PC.run_key(fields, newer)
        return _figures(key, 37.4) | {"run_key": run_key, "commit": "8227979", "versions": newer}

    kept = {"qwen3-7x": kept_by("qwen3-7x"), "8b": kept_by("8b")}
    chosen = [F.RUN_BY_KEY["qwen3-7x"], F.RUN_BY_KEY["8b"]]
    failed = F.PC.run_key(F.plan_fields(F.RUN_BY_KEY["qwen3-7x"]))
    (tmp_path / f"{failed}.failed").write_text('{"error": "SIGSEGV"}')
    got = F.from_git(chosen, kept, tmp_path)
    assert list(got) == ["qwen3-7x"] and "qwen3-7x" in F.OTHER_COMPILER
    assert F._planned_at(got["qwen3-7x"]) == "8227979, with jax 0.12.0.1 and libtpu 0.0.50.1"
    stale = {"qwen3-7x": kept["qwen3-7x"] | {"run_key": "defined otherwise"}}
    assert F.from_git(chosen, stale, tmp_path) == {}


def test_a_plan_is_held_to_the_compile_it_makes_and_shows_the_bare_recompile_beside() -> None:
    """The plan's wall time against the compiler's time inside it: the difference is all
    shardviz adds, whatever the compiler's own variance between two compiles."""
    timed = _figures("8b", 5.0) | {"wall": 200.0, "compile": 190.0, "bare": 150.0}
    slow = _figures("70b", 40.0) | {"wall": 300.0, "compile": 200.0, "bare": None}
    text = F.section([timed, slow], "benchmarks/fidelity.py")
    assert "| 200 s / 190 s compiling = 1.05; bare recompile 150 s |" in text
    assert "| 300 s / 200 s compiling = 1.50 |" in text
    assert "- PASS: 8b: plan within 1.1x of the compile it makes (200 s vs 190 s)" in text
    assert "- FAIL: 70b: plan within 1.1x of the compile it makes (300 s vs 200 s)" in text
    assert "plan within 1.1x of its bare compile" not in text
