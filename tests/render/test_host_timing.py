"""Per-host step times in the report's timing section (text and HTML)."""

from __future__ import annotations

import dataclasses
import re

from shardviz.model import HostFigures, Report, Timing
from shardviz.render.report.html import report_html
from shardviz.render.report.text import report_text

from .host_fixtures import fsdp_two_hosts


def _timed(hosts: tuple[HostFigures, ...]) -> Report:
    return dataclasses.replace(
        fsdp_two_hosts(),
        ran=True,
        timing=Timing(compile_seconds=1.0, first_run_seconds=0.1, step_seconds=0.01, steps=3),
        hosts=hosts,
    )


HOSTS = (
    HostFigures(0, (0, 1, 2, 3), 0.010, None),
    HostFigures(1, (4, 5, 6, 7), 0.0125, 2 * 1024 * 1024),
)


def test_text_lists_each_host_and_the_spread():
    text = report_text(_timed(HOSTS))
    assert "per host (each process timed its own step) · slowest host 1.25x the fastest" in text
    assert "process 0  4 devices  step 10 ms  live peak —" in text
    assert "process 1  4 devices  step 12.5 ms  live peak 2 MiB" in text


def test_html_has_one_row_per_host_and_single_process_reports_have_none():
    html = report_html(_timed(HOSTS))
    assert len(re.findall(r'<tr data-process="\d+">', html)) == 2
    assert "slowest host 1.25x the fastest" in html
    assert "sv-hosts-timing" not in report_html(_timed(()))
    assert "per host" not in report_text(_timed(()))


def test_hosts_survive_json():
    r = _timed(HOSTS)
    assert Report.from_json(r.to_json()).hosts == HOSTS
