"""The report and comparison views on meshes over several hosts: an "across hosts" column and
totals, pinned by golden files tests/golden/hosts_<name>.txt, and no change at all on one host.

Rewrite the goldens after an intended change with ``SHARDVIZ_UPDATE_GOLDEN=1 pytest
tests/render`` and read the diff before committing.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from shardviz.model import Comparison, Report
from shardviz.render.compare.html import comparison_html
from shardviz.render.compare.text import comparison_text
from shardviz.render.report.html import HOSTS_STYLE, report_html
from shardviz.render.report.text import report_text
from shardviz.render.report.view import axes_groups

from .compare_fixtures import COMPARISONS
from .host_fixtures import (
    HOST_COMPARISONS,
    HOST_REPORTS,
    comparison_two_hosts,
    fsdp_two_hosts,
    megatron_four_hosts,
)
from .report_fixtures import REPORTS

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
UPDATE = os.environ.get("SHARDVIZ_UPDATE_GOLDEN") == "1"
KiB = 1024

VIEWS = {
    **{name: lambda make=make: report_text(make()) for name, make in HOST_REPORTS.items()},
    **{name: lambda make=make: comparison_text(make()) for name, make in HOST_COMPARISONS.items()},
}


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_golden_host_views(name: str) -> None:
    text = VIEWS[name]() + "\n"
    path = GOLDEN / f"hosts_{name}.txt"
    if UPDATE:
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"{path} is missing: run with SHARDVIZ_UPDATE_GOLDEN=1 to create it"
    assert text == path.read_text(encoding="utf-8")


def test_no_stale_host_golden_files() -> None:
    names = {p.stem.removeprefix("hosts_") for p in GOLDEN.glob("hosts_*.txt")}
    assert names <= set(VIEWS), f"host goldens without a fixture: {sorted(names - set(VIEWS))}"


# --- the figures, by hand ------------------------------------------------------------------


def test_megatron_on_four_hosts() -> None:
    """The all-reduce of 64 KiB over 'model' rows of 4 moves 2 * 64 * 3/4 = 96 KiB; each row
    is on 2 hosts of 2, so 2 of its 4 hops cross: 48 KiB, both rows."""
    (c,) = megatron_four_hosts().collectives
    assert (c.moved_bytes, c.cross_host_bytes, c.cross_host_groups) == (96 * KiB, 48 * KiB, (0, 1))
    (group,) = axes_groups(megatron_four_hosts())
    assert (
        group.summary == "1 collective · in 64 KiB · moved 96 KiB per device · 48 KiB across hosts"
    )


def test_fsdp_on_two_hosts() -> None:
    """Every collective is over all 8 devices, 4 per host: 2 of 8 hops cross."""
    r = fsdp_two_hosts()
    gather = r.collectives[0]  # 2 MiB gathered: moved 2 MiB * 7/8 = 1792 KiB
    assert gather.moved_bytes == 1792 * KiB and gather.cross_host_bytes == 448 * KiB
    scalar = r.collectives[2]  # all-reduce of 4 B: moved round(8 * 7/8) = 7, 7 * 2 // 8 = 1
    assert (scalar.moved_bytes, scalar.cross_host_bytes) == (7, 1)
    assert all(c.cross_host_groups == (0,) for c in r.collectives)


def test_text_ledger_has_the_column_and_the_groups() -> None:
    text = report_text(megatron_four_hosts())
    assert (
        "96 KiB moved per device per step (all bytes per device; moved: ring model) · 48 KiB across "
        in text
    )
    header = next(x for x in text.splitlines() if x.strip().startswith("#  kind"))
    assert header.split()[:7] == ["#", "kind", "operand", "in", "moved", "across", "hosts"]
    assert "across hosts: 2 of 2 groups span hosts, 48 KiB of 96 KiB moved per device" in text


def test_html_ledger_has_the_column() -> None:
    html = report_html(megatron_four_hosts())
    assert 'class="sv-ledger sv-hosts"' in html and HOSTS_STYLE in html
    assert html.count('data-cross-host="49152"') == 1
    assert ">across hosts</span>" in html and "48 KiB across hosts per device" not in html
    assert "across hosts: 2 of 2 groups span hosts" in html  # the row's facts


def test_compare_views_have_the_column() -> None:
    c = comparison_two_hosts()
    text = comparison_text(c)
    assert "Bytes across hosts per step, by mesh axes" in text
    run = text[text.index("Collectives per step") :].splitlines()
    assert run[1].split()[:4] == ["strategy", "collectives", "moved", "across"]
    tp1 = next(x for x in run if x.strip().startswith("tp1"))
    assert "—" in tp1  # on one host: nothing to cross
    html = comparison_html(c)
    dp = c.results[0]
    total = sum(s.cross_host_bytes for s in dp.collectives)
    # dp: all-reduces over all 8 devices, 4 per host: a quarter of what they move crosses.
    assert total == sum(s.moved_bytes * 2 // 8 for s in dp.report.collectives) > 0
    assert f'data-cross-host="{total}"' in html and ">across hosts</th>" in html


# --- one host: the views as they were --------------------------------------------------------


@pytest.mark.parametrize("name", sorted(REPORTS))
def test_one_host_reports_have_no_host_column(name: str) -> None:
    r = REPORTS[name]()
    assert r.mesh is None or r.mesh.num_processes == 1
    assert "across hosts" not in report_text(r)
    html = report_html(r)
    assert "sv-hosts" not in html and "data-cross-host" not in html


@pytest.mark.parametrize("name", sorted(COMPARISONS))
def test_one_host_comparisons_have_no_host_column(name: str) -> None:
    c: Comparison = COMPARISONS[name]()
    assert "across hosts" not in comparison_text(c) and "across hosts" not in comparison_html(c)


def test_json_round_trip_and_old_json() -> None:
    r = fsdp_two_hosts()
    assert Report.from_json(r.to_json()) == r
    data = json.loads(r.to_json())
    for c in data["collectives"]:  # JSON saved before the host split existed
        del c["cross_host_bytes"], c["cross_host_groups"]
    old = Report.from_json(json.dumps(data))
    assert all(c.cross_host_bytes == 0 and c.cross_host_groups == () for c in old.collectives)
