"""The words and figures both findings views print, checked against hand-computed values."""

from __future__ import annotations

from shardviz.model import FindingCost, Findings, FixCheck, Outcome, Where
from shardviz.model.findings import PROGRAM_FINDING_KINDS
from shardviz.render.findings.view import (
    check_rows,
    check_word,
    checks_str,
    cost_str,
    count_str,
    devices_str,
    fix_summary,
    ledger_refs,
    severity_counts,
    short_line,
    where_rows,
)

from .findings_fixtures import KiB, MiB, findings, idle_axis, loop_collective, over_hbm


def test_counts_by_severity() -> None:
    f = findings()
    assert severity_counts(f) == [("error", 1), ("warning", 1), ("info", 1)]
    assert count_str(f) == "3 findings: 1 error, 1 warning, 1 info"
    one = Findings("f", (idle_axis(),))
    assert severity_counts(one) == [("info", 1)] and count_str(one) == "1 finding: 1 info"
    assert count_str(Findings("f")) == "no findings"


def test_checks_name_all_ten_kinds() -> None:
    text = checks_str()
    assert text.startswith("checked for 13 kinds: ")
    assert text.removeprefix(f"checked for {len(PROGRAM_FINDING_KINDS)} kinds: ").split(
        ", "
    ) == list(PROGRAM_FINDING_KINDS)


def test_cost_words_by_kind() -> None:
    assert cost_str(FindingCost("moved", 3 * MiB // 2)) == "moved per step: 1.5 MiB per device"
    assert cost_str(FindingCost("memory", 512 * KiB, 2.5e-3)) == (
        "memory per device: 512 KiB · est. 2.5 ms per step"
    )
    # work is counted in flops, not bytes: 2e9 flops = 2 GFLOP
    assert cost_str(FindingCost("work", 0, flops=2e9)) == "flops repeated: 2 GFLOP per device"
    assert "not counted" in cost_str(FindingCost("work", 0))


def test_refs_devices_and_lines() -> None:
    assert ledger_refs((3, 4)) == "#3, #4" and ledger_refs(()) == ""
    assert devices_str((7, 0, 1, 2, 3)) == "d0-d3, d7"
    assert short_line("/home/ada/train.py:42") == "train.py:42" and short_line("") == ""


def test_where_rows_leave_out_what_is_empty() -> None:
    assert where_rows(Where()) == []
    rows = where_rows(loop_collective().where)
    assert [r.label for r in rows] == ["line", "code", "leaf", "collectives", "values"]
    assert rows[2].text == "params/w1 · P('data', None)"
    # a spec of a value with no leaf name still shows
    assert [(r.label, r.text) for r in where_rows(Where(spec=(("model",),)))] == [
        ("leaf", "P('model',)")
    ]


def test_check_rows_before_and_after() -> None:
    check = loop_collective().check
    assert check is not None
    rows = {r.key: (r.label, r.before, r.after) for r in check_rows(check)}
    assert rows == {
        "collectives": ("collectives", "3", "2"),
        "moved": ("bytes moved", "6.1 MiB", "608 KiB"),  # 6 MiB + 96 KiB = 6.09 MiB
        "peak": ("peak memory", "2 MiB", "2.5 MiB"),
        "flops": ("flops per device", "16.9 MFLOP", "16.9 MFLOP"),
        "remats": ("remats", "0", "0"),
        "seconds": ("est. time", "unknown", "51 µs"),
    }
    plain = FixCheck(Outcome(0, 0, 0, None, 1), Outcome(0, 0, 0, None, 0), True, "")
    assert [r.key for r in check_rows(plain)] == ["collectives", "moved", "peak", "flops", "remats"]
    assert check_word(plain) == "helps"


def test_fix_summary() -> None:
    f = over_hbm()
    assert fix_summary(f) == (
        "fix: place params/w1 split over 'model' on its output dim "
        "(checked: peak 21 GiB -> 9 GiB per device, under the 16 GiB of HBM)"
    )
    assert fix_summary(idle_axis()) == ""
