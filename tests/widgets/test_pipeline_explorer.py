"""``Explorer.pipeline``: a small transformer's pipelines compared for real, rerun from controls.

One explorer for the module (2 stages, pp and pp+dp on 8 fake CPU devices); each test leaves
the controls where it found them or says so.
"""

from __future__ import annotations

import re

import pytest

import shardviz as sv
from shardviz.errors import ShardvizError
from shardviz.widgets.pipeline.checks import PipelineConfig
from shardviz.widgets.pipeline.session import PipelineConnection

SMALL = {"layers": 4, "batch": 16, "d_model": 32, "seq": 16, "d_ff": 64, "heads": 2, "vocab": 64}
WAIT = 300  # seconds: a ceiling against hangs, never a timing assertion


def slots(html: str) -> int:
    return len(re.findall(r'<rect[^>]*class="sv-slot sv-[FB]"', html))


@pytest.fixture(scope="module")
def explorer():
    return sv.Explorer.pipeline("transformer", ["pp", "pp+dp"], stages=2, microbatches=4, **SMALL)


def test_it_shows_the_comparison_with_controls_and_the_schedule(explorer):
    assert explorer.comparison is not None
    assert explorer.comparison.labels == ("pp", "pp+dp")
    for r in explorer.comparison.results:
        assert (r.schedule.stages, r.schedule.microbatches) == (2, 4)
        assert r.loss_matches
    assert explorer.selected_strategy == "pp"
    pane = explorer.schedule_pane.value
    assert slots(pane) == 2 * 2 * 4
    assert 'data-strategy="pp"' in pane
    bundle = explorer._repr_mimebundle_()
    data = bundle[0] if isinstance(bundle, tuple) else bundle
    assert data["application/vnd.jupyter.widget-view+json"]["model_id"] == explorer._box.model_id
    assert explorer._box.children == (explorer.controls, explorer.schedule_pane, explorer)
    assert 'class="sv-root sv-pipe"' in data["text/html"]  # the static view has the schedule


def test_the_pane_follows_the_strategy_shown(explorer):
    explorer.selected_strategy = "pp+dp"
    try:
        pane = explorer.schedule_pane.value
        assert 'data-strategy="pp+dp"' in pane
        assert 'data-devices="0 1 2 3"' in pane  # stage 0 of the 2 x 4 (stage, data) mesh
    finally:
        explorer.selected_strategy = "pp"


def test_the_slider_reruns_once_and_every_pane_shows_the_new_microbatches(explorer):
    session = explorer.connection.session
    calls, generation = session.calls, explorer.generation
    explorer.controls.microbatches.value = 8
    assert explorer.wait(WAIT)
    assert explorer.status == "done", explorer.error
    assert session.calls == calls + 1  # one rerun
    assert explorer.generation > generation  # the panes got a new report
    for r in explorer.comparison.results:
        assert r.schedule.microbatches == 8 and r.schedule.stages == 2
    pane = explorer.schedule_pane.value
    assert slots(pane) == 2 * 2 * 8
    assert 'data-microbatches="8"' in pane
    # Both counts have run: the sweep shows a measured step time for each.
    sweep = pane[pane.index('class="sv-pipe-sweep"') :]
    for m in (4, 8):
        cell = re.search(rf'<td class="sv-num" data-mb="{m}"[^>]*>([^<]*) ms</td>', sweep)
        assert cell is not None, m
    assert "showing 2 stages × 8 microbatches, GSPMD" in explorer.controls.status.value

    # Back to 4: kept from the first run, nothing compiles.
    explorer.controls.microbatches.value = 4
    assert explorer.wait(WAIT)
    assert session.calls == calls + 1
    assert explorer.comparison.results[0].schedule.microbatches == 4
    assert slots(explorer.schedule_pane.value) == 2 * 2 * 4


def test_an_invalid_combination_shows_inline_and_nothing_runs(explorer):
    session = explorer.connection.session
    calls, shown = session.calls, explorer.comparison
    controls = explorer.controls
    controls.microbatches.value = 8
    controls.schedule.value = "1f1b"  # pp+dp: 2 rows per microbatch over 'data' of 4
    try:
        assert explorer.wait(WAIT)
        assert session.calls == calls  # 8 microbatches GSPMD was kept; 1F1B did not run
        assert explorer.stale.startswith("fix microbatches: a microbatch of 2 rows")
        assert "'data' axis of 4 devices" in controls.message.value
        assert explorer.comparison.results[0].schedule.microbatches == 8  # the last valid
    finally:
        controls.schedule.value = "gspmd"
        controls.microbatches.value = 4
        assert explorer.wait(WAIT)
    assert explorer.stale == ""
    assert session.calls == calls
    assert explorer.comparison is shown


def test_a_failing_run_shows_its_error_inline_and_the_kernel_goes_on(explorer):
    connection = explorer.connection
    assert isinstance(connection, PipelineConnection)
    shown = explorer.comparison
    # Past the controls' checks: compare itself refuses (the rows do not split over 'data').
    connection.submit(PipelineConfig(2, 16, "gpipe"))
    assert explorer.wait(WAIT)
    assert explorer.status == "error"
    assert explorer.error.startswith("function 'train_step[transformer, pp+dp]'")
    assert "cannot be split into 16 microbatches over 4 data shards" in explorer.error
    assert "failed" in explorer.controls.status.value
    assert explorer.comparison is shown  # the panes keep what ran
    connection.submit(PipelineConfig(2, 4))  # kept: shows at once, and clears the error
    assert explorer.wait(WAIT)
    assert (explorer.status, explorer.error) == ("done", "")


def test_train_is_refused_with_a_reason(explorer):
    with pytest.raises(TypeError, match="pipeline explorer compares"):
        explorer.train(2)


def test_bad_starts_fail_before_any_run():
    with pytest.raises(ShardvizError, match="hold no pipeline"):
        sv.Explorer.pipeline("transformer", ["dp"], **SMALL)
    with pytest.raises(ShardvizError, match=r"stages=3: the model's 4 layers"):
        sv.Explorer.pipeline("transformer", ["pp"], stages=3, **SMALL)
    with pytest.raises(ShardvizError, match=r"microbatches=5"):
        sv.Explorer.pipeline("transformer", ["pp"], microbatches=5, **SMALL)
