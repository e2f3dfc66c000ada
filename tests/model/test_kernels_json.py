"""A report's kernels, and the estimate's kernels not counted, come back from JSON as they
went: a kernel not counted stays named after a save and a load."""

from __future__ import annotations

from shardviz.model import Estimate, KernelUse, Report
from tests.render.report_fixtures import kernels_v5e_report, nasty_kernels_report


def test_report_json_keeps_its_kernels() -> None:
    report = kernels_v5e_report()
    assert report.cost is not None and len(report.cost.kernels) == 2
    back = Report.from_json(report.to_json())
    assert back == report and back.to_json() == report.to_json()
    assert back.cost is not None
    assert back.cost.kernels == report.cost.kernels
    assert all(isinstance(k, KernelUse) for k in back.cost.kernels)
    assert [k.name for k in back.cost.uncounted_kernels] == ["splash_mha_bwd"]
    assert back.cost.kernels[0].source == report.cost.kernels[0].source
    assert back.cost.kernels[0].where == "train.py:27"


def test_estimate_json_keeps_the_kernels_not_counted() -> None:
    e = nasty_kernels_report().estimate
    assert e is not None and len(e.uncounted) == 1 and not e.bounded
    back = Estimate.from_json(e.to_json())
    assert back == e and back.to_json() == e.to_json()
    assert back.not_a_bound == e.not_a_bound and "<script>" in back.not_a_bound
