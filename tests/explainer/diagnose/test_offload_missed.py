"""[offload-missed]: requests and transfers parsed from the saved offload compiles
(tests/fixtures/offload), put on a hand-built report, and a report with a hostile name."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from shardviz.analysis.detect.detect import candidates
from shardviz.analysis.detect.offload import missed_requests, offload_missed
from shardviz.capture.hlo.loops import computation_runs, loops_of
from shardviz.capture.hlo.offload import host_transfers, offload_requests
from shardviz.capture.hlo.text import parse_hlo_module
from shardviz.model.offload import OffloadRequest
from tests.render.report_fixtures import dp_report

OFFLOAD = Path(__file__).parents[2] / "fixtures" / "offload"


def _report(name: str, platform: str, requests_from: str | None = None):
    module = parse_hlo_module((OFFLOAD / f"{name}.txt").read_text())
    before = (OFFLOAD / f"{requests_from or name}.before_opt.txt").read_text()
    return dataclasses.replace(
        dp_report(),
        platform=platform,
        host_transfers=host_transfers(module, computation_runs(module, loops_of(module))),
        offload_requests=offload_requests(parse_hlo_module(before)),
    )


def test_an_offload_the_compiler_did_is_not_a_finding():
    assert offload_missed(_report("v5e_offload", "tpu")) == []
    assert offload_missed(_report("h100_offload", "gpu")) == []


def test_an_offload_asked_for_but_kept_in_hbm_names_the_value_and_the_reason():
    # The request of the offloading program against the compile that offloaded nothing.
    (c,) = offload_missed(_report("v5e_no_tag", "tpu", requests_from="v5e_offload"))
    f = c.finding
    assert (f.kind, f.severity) == ("offload-missed", "warning")
    assert f.title == (
        "f32[256,512] at make_fixtures.py:64 was asked to live in pinned_host memory but "
        "stays in HBM"
    )
    assert "the compiler kept it in HBM" in f.why
    assert f.cost.bytes == 256 * 512 * 4 and f.where.line.endswith("make_fixtures.py:64")


def test_host_outputs_are_not_offloads():
    assert missed_requests(_report("v5e_no_tag", "tpu")) == []


def test_on_cpu_the_finding_says_nothing_can_move():
    (c,) = offload_missed(_report("cpu_offload", "cpu", requests_from="v5e_offload"))
    assert c.finding.severity == "info" and "keeps host and device memory as one" in c.finding.why


def test_a_request_capture_knew_was_missed_keeps_its_reason_and_runs_with_the_others():
    odd = OffloadRequest(
        "<script>", "act", "pinned_host", happened=False, reason="the policy names 'act'"
    )
    report = dataclasses.replace(dp_report(), offload_requests=(odd,))
    (c,) = [c for c in candidates(report) if c.finding.kind == "offload-missed"]
    assert "the policy names 'act'" in c.finding.why
    html = dataclasses.replace(report, findings=None)._repr_html_()
    assert "<script>" not in html
