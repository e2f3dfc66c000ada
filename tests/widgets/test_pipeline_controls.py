"""The pipeline Explorer's controls: what they offer, what a change hands on, what they flag."""

from __future__ import annotations

import pytest

from shardviz.errors import ShardvizError
from shardviz.widgets.pipeline.checks import PipelineConfig
from shardviz.widgets.pipeline.controls import GSPMD, INVALID_COLOR, PipelineControls

START = PipelineConfig(2, 4)


def controls(initial=START, strategies=("pp", "pp+dp"), batch=16, layers=4):
    made = PipelineControls(initial, strategies=strategies, batch=batch, layers=layers, devices=8)
    changes: list[PipelineConfig] = []
    errors: list[dict] = []
    made.on_change(changes.append)
    made.on_errors(errors.append)
    return made, changes, errors


def values(widget) -> list:
    return [value for _, value in widget.options]


def test_the_slider_offers_the_divisors_of_the_batch():
    c, _, _ = controls()
    assert values(c.microbatches) == [1, 2, 4, 8, 16]
    assert c.microbatches.value == 4
    assert not c.microbatches.continuous_update  # one rerun when the slider is let go
    c24, _, _ = controls(batch=24, layers=6)
    assert values(c24.microbatches) == [1, 2, 3, 4, 6, 8, 12, 24]
    assert values(c24.stages) == [1, 2, 3, 6]


def test_stages_and_schedules_offered():
    c, _, _ = controls()
    assert values(c.stages) == [1, 2, 4]
    assert values(c.schedule) == [GSPMD, "gpipe", "1f1b"]
    assert c.picked == PipelineConfig(2, 4, None, False)


def test_a_change_hands_on_one_config_with_the_new_microbatches():
    c, changes, errors = controls()
    c.microbatches.value = 8
    assert changes == [PipelineConfig(2, 8, None, False)]
    assert errors == [] and c.message.value == ""
    c.stages.value = 4
    c.schedule.value = "1f1b"
    c.checkpoint.value = True
    assert changes[1:] == [
        PipelineConfig(4, 8, None),
        PipelineConfig(4, 8, "1f1b"),
        PipelineConfig(4, 8, "1f1b", True),
    ]


def test_an_invalid_combination_is_flagged_in_red_and_nothing_is_handed_on():
    c, changes, errors = controls()
    c.schedule.value = "1f1b"  # 2 stages, 4 microbatches: 4 rows over 4 data shards, fine
    assert changes == [PipelineConfig(2, 4, "1f1b")]
    c.microbatches.value = 8  # 2 rows per microbatch over 'data' of 4: cannot run
    assert changes == [PipelineConfig(2, 4, "1f1b")]
    assert c.config is None
    assert list(errors[-1]) == ["microbatches"]
    assert INVALID_COLOR in c.message.value
    assert "a microbatch of 2 rows cannot be split over the 'data' axis of 4" in c.message.value
    assert c.message.layout.display == ""
    c.stages.value = 4  # 'data' of 2 now: 2 rows split, so it runs
    assert changes[-1] == PipelineConfig(4, 8, "1f1b")
    assert errors[-1] == {}
    assert c.message.layout.display == "none"


def test_going_back_to_the_shown_config_reruns_nothing():
    c, changes, _ = controls()
    c.schedule.value = "1f1b"
    c.microbatches.value = 8  # invalid: nothing runs
    c.microbatches.value = 4  # what runs now again: nothing new to hand on
    assert changes == [PipelineConfig(2, 4, "1f1b")]


def test_an_impossible_start_raises_naming_the_control():
    with pytest.raises(ShardvizError, match=r"microbatches=3: a batch of 16 rows"):
        controls(PipelineConfig(2, 3))
    with pytest.raises(ShardvizError, match=r"'data' axis of 4 devices"):
        controls(PipelineConfig(2, 8, "gpipe"))


def test_status_line_says_what_runs_and_why_it_failed():
    c, _, _ = controls()
    c.show_status("compiling", "", PipelineConfig(4, 8, "gpipe"))
    assert "compiling 4 stages × 8 microbatches, GPipe · shard_map…" in c.status.value
    c.show_status("done", "")
    assert "showing 4 stages × 8 microbatches" in c.status.value
    c.show_status("error", "compare: it broke. Fix: do <this>.")
    assert INVALID_COLOR in c.status.value and "do &lt;this&gt;" in c.status.value


def test_a_broken_receiver_does_not_break_the_controls():
    c, changes, _ = controls()

    def broken(_config):
        raise RuntimeError("boom")

    c.on_change(broken)
    c.microbatches.value = 2
    assert changes == [PipelineConfig(2, 2)]
    assert "the change handler failed: RuntimeError: boom" in c.message.value
