"""The report's host transfers section on a hand-built report: totals each way, the rows in
text and HTML from one view, every string escaped, nothing shown without transfers."""

from __future__ import annotations

import dataclasses

from shardviz.model.offload import HostTransfer
from shardviz.render.report.transfers import transfers_section
from tests.render.report_fixtures import dp_report

HOSTILE = '<img src=x onerror="alert(1)">'


def _report():
    ts = (
        HostTransfer("dus-start", "dynamic-update-slice-start", "to host", 1024, runs=3,
                     value=HOSTILE, lower_bound=True),
        HostTransfer("copy-start", "copy-start", "to device", 4096, role="argument",
                     op_name="opt"),
    )  # fmt: skip
    return dataclasses.replace(dp_report(), host_transfers=ts)


def test_totals_each_way_are_bytes_per_step():
    v = transfers_section(_report())
    assert (v.to_host_bytes, v.to_device_bytes) == (3 * 1024, 4096)
    assert [r.runs for r in v.rows] == ["3+", "1"]
    assert "a lower bound" in v.note


def test_text_and_html_show_the_same_rows_escaped():
    r = _report()
    text, html = str(r), r._repr_html_()
    assert "Host transfers per device · 3 KiB to host · 4 KiB to device per step" in text
    assert HOSTILE in text and HOSTILE not in html
    assert "&lt;img src=x" in html
    assert 'data-role="argument" data-direction="to device" data-bytes="4096"' in html


def test_no_section_without_transfers():
    r = dp_report()
    assert transfers_section(r) is None
    assert "Host transfers" not in str(r) and "sv-transfers" not in r._repr_html_()
