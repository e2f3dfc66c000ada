"""The findings' text view, pinned by golden files tests/golden/findings_<name>.txt, and the
compact Findings section of the report's text view.

Rewrite the goldens after an intended change with ``SHARDVIZ_UPDATE_GOLDEN=1 pytest
tests/render`` and read the diff before committing.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from shardviz.model import Findings, FixCheck, Outcome
from shardviz.model.findings import PROGRAM_FINDING_KINDS
from shardviz.render.findings.text import WIDTH, findings_section_lines, findings_text
from shardviz.render.report.text import report_text

from .findings_fixtures import (
    findings,
    idle_axis,
    loop_collective,
    megatron_with_findings,
    no_findings,
    over_hbm,
)
from .report_fixtures import REPORTS, megatron_report

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
UPDATE = os.environ.get("SHARDVIZ_UPDATE_GOLDEN") == "1"

CASES = {"three": findings, "none": no_findings}


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_findings_text(name: str) -> None:
    text = findings_text(CASES[name]()) + "\n"
    path = GOLDEN / f"findings_{name}.txt"
    if UPDATE:
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"{path} is missing: run with SHARDVIZ_UPDATE_GOLDEN=1 to create it"
    assert text == path.read_text(encoding="utf-8")


def test_no_stale_findings_golden_files() -> None:
    names = {p.stem.removeprefix("findings_") for p in GOLDEN.glob("findings_*.txt")}
    assert names <= set(CASES), f"findings goldens without a case: {sorted(names - set(CASES))}"


def test_str_is_the_text_view_and_deterministic() -> None:
    f = findings()
    assert str(f) == findings_text(f) == findings_text(findings())


def test_json_round_trip_renders_the_same() -> None:
    f = findings()
    assert findings_text(Findings.from_json(f.to_json())) == findings_text(f)


def test_header_counts_by_severity() -> None:
    assert findings_text(findings()).splitlines()[0] == (
        "Findings · mlp_block · 3 findings: 1 error, 1 warning, 1 info"
    )
    two = Findings("f", (loop_collective(), loop_collective()))
    assert findings_text(two).splitlines()[0] == "Findings · f · 2 findings: 2 warnings"


def test_no_findings_says_which_checks_ran() -> None:
    text = findings_text(no_findings())
    assert text.splitlines()[0] == "Findings · mlp_block · no findings"
    assert "checked for 13 kinds:" in text
    words = text.replace("\n", " ").replace(",", " ").split()
    for kind in PROGRAM_FINDING_KINDS:
        assert kind in words, kind
    assert "1." not in text and "Notes" not in text


def test_one_block_per_finding_in_order() -> None:
    blocks = findings_text(findings()).split("\n\n")[1:4]
    # a title wraps under its words (after "3. "), before the 4-space body
    heads = [" ".join(b.split("\n    ")[0].split("\n   ")) for b in blocks]
    assert heads == [
        "1. error · over-hbm · Peak memory 21 GiB per device is over the v5e's 16 GiB of HBM",
        "2. warning · loop-collective · w1 is all-gathered inside the scan: 12 times per step",
        "3. info · idle-axis · Nothing is split over mesh axis 'data' in the loss: its devices "
        "repeat the work",
    ]


def test_why_is_wrapped_at_96_columns_without_losing_a_word() -> None:
    f = loop_collective()
    lines = findings_text(Findings("f", (f,))).splitlines()
    start = lines.index("1. warning · loop-collective · " + f.title) + 1
    why = lines[start : start + 3]
    assert all(len(line) <= WIDTH and line.startswith("    ") for line in why)
    assert len(f.why) > WIDTH  # so the test wraps for real
    assert " ".join(line.strip() for line in why) == f.why
    assert lines[start + 3].startswith("    cost")


def test_cost_lines() -> None:
    text = findings_text(findings())
    # 21 GiB of memory; 6 MiB moved per step, est. 4.8e-4 s; 134,217,728 flops = 134 MFLOP
    assert "    cost         memory per device: 21 GiB\n" in text
    assert "    cost         moved per step: 6 MiB per device · est. 480 µs per step\n" in text
    assert "    cost         flops repeated: 134 MFLOP per device\n" in text


def test_where_lines() -> None:
    text = findings_text(Findings("f", (loop_collective(),)))
    assert "    line         /home/ada/shardviz-demo/train.py:44 · train_step > scan > mlp" in text
    assert "    code         h = jnp.tanh(x @ params['w1'])" in text
    assert "    leaf         params/w1 · P('data', None)" in text
    assert "    collectives  #2, #3" in text
    assert "    values       all-gather.7, dot.8" in text
    assert "    devices      d4-d7" in findings_text(Findings("f", (idle_axis(),)))


def _table(text: str, after: str) -> list[str]:
    """The before/after rows under the line containing ``after``."""
    lines = text.splitlines()
    i = next(j for j, line in enumerate(lines) if after in line)
    assert lines[i + 1].endswith("per device:") and "before" in lines[i + 2]
    rows = []
    for line in lines[i + 4 :]:
        if not line.startswith(" " * 17) or not line.strip():
            break
        rows.append(line.strip())
    return rows


def test_fix_and_its_check_as_a_before_after_table() -> None:
    f = loop_collective()
    text = findings_text(Findings("f", (f,)))
    assert f"    fix          {f.fix.description}\n                 {f.fix.code}\n" in text
    rows = _table(text, "    check        trade-off: moved 6.1 MiB -> 608 KiB")  # peak +25%
    assert [r.split("  ")[0] for r in rows] == [
        "collectives",
        "bytes moved",
        "peak memory",
        "flops per device",
        "remats",
        "est. time",
    ]
    assert rows[0].split() == ["collectives", "3", "2"]
    assert rows[1].split()[-4:] == ["6.1", "MiB", "608", "KiB"]  # 6 MiB + 96 KiB; 608 KiB
    assert rows[5].split()[-3:] == ["unknown", "51", "µs"]


def test_no_estimate_row_without_seconds() -> None:
    f = loop_collective()
    assert f.check is not None
    check = dataclasses.replace(
        f.check,
        before=dataclasses.replace(f.check.before, seconds=None),
        after=dataclasses.replace(f.check.after, seconds=None),
    )
    text = findings_text(Findings("f", (dataclasses.replace(f, check=check),)))
    rows = _table(text, "    check        trade-off")
    assert len(rows) == 5 and "est. time" not in text


def test_fix_without_check_and_a_check_that_does_not_help() -> None:
    f = over_hbm()
    text = findings_text(Findings("f", (dataclasses.replace(f, check=None),)))
    assert "    check        not tried" in text and "before" not in text
    worse = FixCheck(Outcome(1, 0, 10, None, 0), Outcome(2, 0, 10, None, 0), False, "")
    text = findings_text(Findings("f", (dataclasses.replace(f, check=worse),)))
    assert "    check        does not help\n" in text
    assert _table(text, "does not help")[3].split() == ["flops", "per", "device", "n/a", "n/a"]
    unfixed = idle_axis()
    assert "    fix          none offered: the change tried did not help" in findings_text(
        Findings("f", (unfixed,))
    )
    known = dataclasses.replace(unfixed, unfixed="")
    text = findings_text(Findings("f", (known,)))
    assert "    fix          none known: shardviz has no change to try for this" in text


def test_notes_are_listed_at_the_end() -> None:
    text = findings_text(findings())
    assert text.endswith(
        "Notes\n"
        "  - regather: the trip count of while.3 is unknown, so its collectives count once.\n"
        "  - uneven: not checked for values without a named spec."
    )


# --------------------------------------------------------------------------------------------
# The report's Findings section


def test_report_section_sits_after_the_notes_and_before_the_ledger() -> None:
    text = report_text(megatron_with_findings())
    head = text.index("ran: compiled, run, timed")
    section = text.index("Findings · 3 findings: 1 error, 1 warning, 1 info")
    assert head < section < text.index("Collectives · 1 in the compiled program")
    assert "\n".join(findings_section_lines(findings())) in text
    assert (
        "  2. warning · loop-collective · w1 is all-gathered inside the scan: 12 times per step "
        "(train.py:44 · #2, #3)\n"
        "     fix: gather w1 once before the loop: constrain it to P(None, 'model') "
        "(checked: moved 6.1 MiB -> 608 KiB per device per step)\n"
    ) in text
    # no fix, no place: the title alone
    assert (
        "  3. info · idle-axis · Nothing is split over mesh axis 'data' in the loss: its " in text
    )
    assert "fix: none" not in text


def test_report_section_fix_not_checked_or_not_helping() -> None:
    f = over_hbm()
    lines = findings_section_lines(Findings("f", (dataclasses.replace(f, check=None),)))
    assert lines[-1] == f"     fix: {f.fix.description} (not checked)"
    assert f.check is not None
    bad = dataclasses.replace(f.check, helps=False, verdict="peak unchanged")
    lines = findings_section_lines(Findings("f", (dataclasses.replace(f, check=bad),)))
    assert lines[-1].endswith("(checked: does not help: peak unchanged)")


@pytest.mark.parametrize("found", [None, Findings("mlp_block")], ids=["none", "empty"])
def test_no_section_without_findings(found: Findings | None) -> None:
    assert findings_section_lines(found) == []
    report = megatron_with_findings(found) if found is not None else megatron_report()
    assert report.findings == found
    assert report_text(report) == report_text(megatron_report())
    assert "Findings" not in report_text(report)


def test_report_fixtures_have_no_findings() -> None:
    """So the report goldens show no Findings section: they pin the report without one."""
    assert all(make().findings is None for make in REPORTS.values())
