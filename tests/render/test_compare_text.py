"""The comparison's text view, pinned by golden files tests/golden/compare_<name>.txt.

Rewrite the goldens after an intended change with ``SHARDVIZ_UPDATE_GOLDEN=1 pytest
tests/render`` and read the diff before committing.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from shardviz.model import Comparison
from shardviz.render.compare.text import comparison_text
from tests.without_jax import run_without_jax

from .compare_fixtures import COMPARISONS, comparison, comparison_edges, comparison_nasty

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
UPDATE = os.environ.get("SHARDVIZ_UPDATE_GOLDEN") == "1"
ROOT = Path(__file__).resolve().parent.parent.parent


@pytest.mark.parametrize("name", sorted(COMPARISONS))
def test_golden_comparison_text(name: str) -> None:
    text = comparison_text(COMPARISONS[name]()) + "\n"
    path = GOLDEN / f"compare_{name}.txt"
    if UPDATE:
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"{path} is missing: run with SHARDVIZ_UPDATE_GOLDEN=1 to create it"
    assert text == path.read_text(encoding="utf-8")


def test_no_stale_compare_golden_files() -> None:
    names = {p.stem.removeprefix("compare_") for p in GOLDEN.glob("compare_*.txt")}
    assert names <= set(COMPARISONS), (
        f"goldens without a fixture: {sorted(names - set(COMPARISONS))}"
    )


def test_text_is_deterministic_and_is_str() -> None:
    for make in COMPARISONS.values():
        c = make()
        assert comparison_text(c) == comparison_text(make()) == str(c)


def test_json_round_trip_renders_the_same() -> None:
    for make in COMPARISONS.values():
        c = make()
        back = Comparison.from_json(c.to_json())
        assert back == c
        assert comparison_text(back) == comparison_text(c)


def test_table_rows_and_columns() -> None:
    c = comparison()
    lines = comparison_text(c).splitlines()
    header = next(line for line in lines if line.strip().startswith("strategy  mesh"))
    for label in ("params", "grads", "optimizer", "batch", "temp beyond grads", "peak",
                  "compiler temp", "reconciled"):  # fmt: skip
        assert label in header
    assert "activations/temp" not in header  # it read as "no activations" when 0
    run_header = next(line for line in lines if "collectives" in line and "loss check" in line)
    assert "step" in run_header
    axes_at = lines.index("Bytes moved per step, by mesh axes (count, moved per device)")
    assert lines[axes_at + 1].split() == ["strategy", "data", "model", "data,model"]
    for r in c.results:
        rows = [line for line in lines if line.startswith(f"  {r.strategy} ")]
        assert len(rows) == 3, r.strategy  # one row in each table
        assert rows[1].rstrip().endswith("OK")
    tp = next(line for line in lines[axes_at:] if line.startswith("  tp "))
    assert tp.split()[1:] == ["×2", "768", "KiB", "×1", "48", "KiB", "×1", "7", "B"]
    dp = next(line for line in lines[axes_at:] if line.startswith("  dp "))
    assert dp.split()[1:] == ["—", "—", "×3", "5.3", "MiB"]


def test_a_temp_smaller_than_the_gradients_is_said_plainly() -> None:
    c = comparison()
    dp = c.result("dp")
    small = dataclasses.replace(dp.memory, temp=dp.memory.grads // 2, activations=0)
    c = dataclasses.replace(c, results=(dataclasses.replace(dp, memory=small), *c.results[1:]))
    text = comparison_text(c)
    assert (
        "temp 1.5 MiB (the compiler's scratch): gradients, activations and intermediates "
        "together; smaller than the gradients (3 MiB)" in text
    )
    assert "temp 3.5 MiB (the compiler's scratch): the gradients 384 KiB + 3.2 MiB of" in text


def test_edges_show_mismatch_na_and_both_argument_figures() -> None:
    c = comparison_edges()
    text = comparison_text(c)
    bad = c.result("fsdp").memory
    assert not bad.reconciled
    assert (
        f"leaves {bad.arguments_from_leaves:,} B ≠ compiler {bad.arguments_from_compiler:,} B"
        in text
    )
    assert "no: compiler +64 B" in text
    assert "MISMATCH" in text
    assert "n.a." in text
    assert "collectives: none" in text
    assert "step n/a" in text


def test_notes_listed_with_their_strategy() -> None:
    text = comparison_text(comparison())
    notes = text.split("\nNotes\n", 1)[1]
    assert "  every strategy trains the same parameters" in notes
    assert (
        "  fsdp: the compiler chose all-reduce + dynamic-slice instead of reduce-scatter" in notes
    )


def test_nasty_strings_pass_through_text_unchanged() -> None:
    text = comparison_text(comparison_nasty())
    assert "<script>alert(1)</script>" in text  # text is not HTML: nothing to escape


def test_comparison_views_work_with_jax_blocked() -> None:
    out = run_without_jax(
        """
        from shardviz.render.compare.html import comparison_html
        from shardviz.render.compare.text import comparison_text
        from shardviz.render.projection import projection_html, projection_text
        from types import SimpleNamespace
        from tests.render.compare_fixtures import comparison

        c = comparison()
        rows = [SimpleNamespace(num_params=7_500_000_000, devices=64, data_parallel=64,
                                tensor_parallel=1, zero_stage=s, params=1, grads=1, optimizer=1,
                                total=3, hbm_bytes=80 << 30, fits=True) for s in range(4)]
        for out in (comparison_text(c), comparison_html(c), str(c), c._repr_html_(),
                    projection_text(rows), projection_html(rows)):
            assert out
        assert not any(m == "jax" or m.startswith("jax.") for m in sys.modules), "jax imported"
        print("ok")
        """
    )
    assert out.strip() == "ok"


# --------------------------------------------------------------------------------------------
# Estimates on targets (goldens: compare_v5e, compare_targets, compare_small_hbm)


def test_results_on_several_targets_are_labelled_and_found_by_label_or_target() -> None:
    from .compare_fixtures import comparison_targets, comparison_v5e

    c = comparison_targets()
    assert c.targets == ("TPU v5e 2x4 (from CPU)", "NVIDIA H100 SXM 1x8 (from CPU)")
    assert c.by_target
    assert c.labels[:2] == ("dp @ TPU v5e 2x4 (from CPU)", "dp @ NVIDIA H100 SXM 1x8 (from CPU)")
    assert len(set(c.labels)) == len(c.results)
    assert c.result("fsdp @ NVIDIA H100 SXM 1x8 (from CPU)").report.target.name == "h100:1x8"
    assert c.result("fsdp", target="v5e").report.target.name == "v5e:2x4"
    assert c.result("fsdp", target="h100:1x8") is c.result("fsdp @ NVIDIA H100 SXM 1x8 (from CPU)")
    assert c.result("tp").report.target.name == "v5e:2x4"  # the first of that strategy
    with pytest.raises(KeyError):
        c.result("tp", target="a100")
    one = comparison_v5e()
    assert not one.by_target and one.labels == ("dp", "fsdp", "tp")  # one target: no suffix
    assert comparison().targets == () and comparison().labels == ("dp", "fsdp", "tp")


def test_estimate_table_groups_rows_by_target() -> None:
    from .compare_fixtures import comparison_targets

    c = comparison_targets()
    text = comparison_text(c)
    table = text[text.index("Estimated step per device") :]
    table = table[: table.index("\n\n")]
    assert "(a lower bound, not a measurement" in table
    v5e = table.index("  on TPU v5e 2x4 (8 chips, 2 hosts)")
    h100 = table.index("  on NVIDIA H100 SXM 1x8 (8 GPUs, 1 host)")
    assert v5e < h100
    assert table[v5e:h100].count("fits: ") == 3 == table[h100:].count("fits: ")
    for r in c.results:
        e = r.report.estimate
        assert e is not None
        assert f"estimated on {e.target}: step ≥ " in text
    assert "compiled on CPU devices: estimated as if each mesh were its target" in text


def test_does_not_fit_and_missing_estimates_are_said() -> None:
    from .compare_fixtures import comparison_small_hbm

    text = comparison_text(comparison_small_hbm())
    assert "does not fit: needs 12.2 MiB of 8 MiB" in text
    assert "no estimate (no target): tp" in text
    assert "every estimate on Tiny TPU 2x4 (8 chips, 2 hosts)" in text


def test_without_targets_nothing_about_estimates() -> None:
    for c in (comparison(), comparison_edges()):
        text = comparison_text(c)
        assert "estimate" not in text.lower() and " @ " not in text


def test_a_result_is_found_by_either_name_of_its_strategy() -> None:
    # compare(model, ["fsdp"]) names its result "zero3"; result("fsdp") must still find it.
    c = comparison()
    renamed = tuple(
        dataclasses.replace(r, strategy="zero3") if r.strategy == "fsdp" else r for r in c.results
    )
    c = dataclasses.replace(c, results=renamed)
    assert c.result("fsdp") is c.result("zero3") is renamed[1]
    with pytest.raises(KeyError):
        c.result("zero2")
