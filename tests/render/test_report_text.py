"""The report's text view, pinned exactly by golden files tests/golden/report_<name>.txt.

Rewrite them after an intended change with ``SHARDVIZ_UPDATE_GOLDEN=1 pytest tests/render``
and read the diff before committing.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from shardviz.model import Report
from shardviz.model.units import format_seconds
from shardviz.render.report.text import report_text

from .report_fixtures import REPORTS, large_report, nasty_report, shard_map_report

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
UPDATE = os.environ.get("SHARDVIZ_UPDATE_GOLDEN") == "1"


@pytest.mark.parametrize("name", sorted(REPORTS))
def test_golden_report_text(name: str) -> None:
    text = report_text(REPORTS[name]()) + "\n"
    path = GOLDEN / f"report_{name}.txt"
    if UPDATE:
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"{path} is missing: run with SHARDVIZ_UPDATE_GOLDEN=1 to create it"
    assert text == path.read_text(encoding="utf-8")


def test_no_stale_report_golden_files() -> None:
    names = {p.stem.removeprefix("report_") for p in GOLDEN.glob("report_*.txt")}
    assert names <= set(REPORTS), (
        f"report goldens without a fixture: {sorted(names - set(REPORTS))}"
    )


def test_report_text_is_deterministic_and_is_str() -> None:
    for make in REPORTS.values():
        report = make()
        assert report_text(report) == report_text(make()) == str(report)


def test_json_round_trip_renders_the_same() -> None:
    for make in REPORTS.values():
        report = make()
        assert report_text(Report.from_json(report.to_json())) == report_text(report)


def test_ledger_is_grouped_by_axes_with_totals() -> None:
    text = report_text(REPORTS["shard_map"]())
    model = text.index("over ('model',) · 3 collectives")
    data = text.index("over ('data',) · 1 collective")
    assert model < data
    # rows keep their ledger numbers under their group
    assert model < text.index("  1  all-reduce") < text.index("  3  all-to-all") < data
    assert data < text.index("  4  all-gather")
    assert "8 pairs: d0→d1 d1→d2 d2→d3 d3→d0" in text
    assert "collective-permute  × 1 · in 16 KiB · moved 16 KiB per device · 1 user-written" in text


def test_dp_groups_and_reshard_links() -> None:
    text = report_text(REPORTS["dp"]())
    assert "4 groups of 2: {d0,d4} {d1,d5} {d2,d6} {d3,d7}" in text
    assert "reshards dot.9" in text
    lines = [line for line in text.splitlines() if line.startswith("  *")]
    assert len(lines) == 3
    assert any("dot.9" in line and line.endswith("#3 all-reduce") for line in lines)


def test_compile_only_says_so() -> None:
    text = report_text(REPORTS["compile_only"]())
    assert "compile-only: compiled and analysed, not run" in text
    assert "note: memory and collectives come from the compiler" in text
    assert "Timing · not measured (compile-only)" in text
    assert "Check · not run (compile-only)" in text
    assert "Profile" not in text


def test_check_and_profile_words() -> None:
    assert "Check vs one device, no sharding: MISMATCH" in report_text(shard_map_report())
    text = report_text(REPORTS["profile"]())
    assert "Check vs one device, no sharding: OK" in text
    assert "ILLUSTRATIVE: measured on CPU" in text


def test_large_report_folds_intermediates() -> None:
    text = report_text(large_report())
    assert "Collectives · 200 in the compiled program" in text
    assert "… 5 more without a reshard" in text
    assert "64 groups of 8: {d0,d64,d128,d192,d256,d320,d384,d448}" in text
    assert len(text.encode()) < 200_000


HINT = "  tiles of a value with a spec: print(report.intermediate_layout(name))"


def test_intermediates_say_once_how_to_draw_their_tiles() -> None:
    for make in (*REPORTS.values(), large_report):
        text = report_text(make())
        section = text[text.index("Intermediates ·") : text.index("Memory per device")]
        assert text.count("intermediate_layout") == 1
        assert section.rstrip("\n").splitlines()[-1] == HINT  # under the table
    dp = REPORTS["dp"]()
    assert "intermediate_layout" not in report_text(dataclasses.replace(dp, mesh=None))
    assert "intermediate_layout" not in report_text(dataclasses.replace(dp, intermediates=()))


def test_text_keeps_strings_verbatim() -> None:
    text = report_text(nasty_report())
    assert "<script>alert(1)</script>" in text  # text is not HTML: no escaping here


# --------------------------------------------------------------------------------------------
# Estimates on a target (goldens: report_dp_v5e, report_fsdp_h100, report_deviceless_v5e)


def test_estimate_section_is_labelled_and_gives_every_figure() -> None:
    from .report_fixtures import dp_v5e_report

    report = dp_v5e_report()
    text = report_text(report)
    e = report.estimate
    assert e is not None and report.target is not None
    assert f"Estimate on {report.target.label} (a lower bound, not a measurement)" in text
    section = text[text.index("Estimate on") : text.index("Timing")]
    for name in ("step", "compute", "memory", "collectives", "MFU", "HBM"):
        assert f"\n  {name} " in section
    assert f"≥ {format_seconds(e.step_seconds)}" in section
    assert f"{e.bound}-bound" in section
    assert e.fit_text in section
    assert f"placement: {report.target.placement}" in section
    assert section.count(report.target.placement) == 1  # said once, not again as a note
    assert f"estimated as if this mesh were {report.target.label}" in text


def test_ledger_gets_an_estimated_column_and_the_formula() -> None:
    from .report_fixtures import fsdp_h100_report

    report = fsdp_h100_report()
    text = report_text(report)
    header = next(line for line in text.splitlines() if line.strip().startswith("#  kind"))
    assert "  est.  " in header and header.index("moved") < header.index("est.")
    for c in report.collectives:
        assert c.estimated_seconds is not None
        assert f"est. {c.estimate_formula}" in text
    assert "NVIDIA H100" in text


def test_deviceless_names_the_target_and_says_it_did_not_run() -> None:
    from .report_fixtures import deviceless_v5e_report

    text = report_text(deviceless_v5e_report())
    assert "compiled for TPU v5e 2x4 (8 chips, 2 hosts), not run" in text
    assert "estimated as if" not in text  # compiled for the target itself, not CPU devices


def test_without_a_target_there_is_no_estimate_anywhere() -> None:
    for name in ("dp", "fsdp", "megatron", "shard_map", "compile_only", "profile"):
        text = report_text(REPORTS[name]())
        assert "Estimate on" not in text and "est." not in text and "estimated" not in text
