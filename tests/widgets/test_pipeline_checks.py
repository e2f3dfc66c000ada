"""What the pipeline Explorer's controls offer and flag: pure, no widgets and no runs."""

from __future__ import annotations

import pytest

from shardviz.errors import ShardvizError
from shardviz.model.schedule import gpipe, one_f_one_b, theory_bubble
from shardviz.strategies.rules import default_mesh_shape
from shardviz.strategies.rules.named import get_rule_set
from shardviz.widgets.pipeline.checks import (
    SCHEDULES,
    PipelineConfig,
    data_shards,
    divisors,
    microbatch_options,
    pipeline_errors,
    schedule_label,
    stage_options,
)

BOTH = ("pp", "pp+dp")


def errors(config: PipelineConfig, strategies=BOTH, batch=16, layers=4, devices=8):
    return pipeline_errors(config, strategies, batch=batch, layers=layers, devices=devices)


def test_divisors_by_hand():
    assert divisors(1) == (1,)
    assert divisors(12) == (1, 2, 3, 4, 6, 12)
    assert divisors(7) == (1, 7)
    with pytest.raises(ValueError):
        divisors(0)


def test_microbatch_options_are_the_divisors_of_the_batch():
    assert microbatch_options(16) == (1, 2, 4, 8, 16)
    assert microbatch_options(24) == (1, 2, 3, 4, 6, 8, 12, 24)


def test_stage_options_divide_the_layers_and_fit_the_devices():
    assert stage_options(4, 8) == (1, 2, 4)
    assert stage_options(8, 4) == (1, 2, 4)  # 8 stages need 8 devices
    assert stage_options(6, 8) == (1, 2, 3, 6)
    assert stage_options(12, 5) == (1, 2, 3, 4)


@pytest.mark.parametrize("stages", [1, 2, 4, 8])
@pytest.mark.parametrize("devices", [8, 4])
def test_data_shards_is_the_default_mesh_of_compare(stages, devices):
    if stages > devices:
        return
    for name in BOTH:
        shape = default_mesh_shape(get_rule_set(name, stages=stages), devices)
        expected = shape[1] if len(shape) == 2 else 1
        assert data_shards(name, stages, devices) == expected


def test_theory_bubble_is_the_schedules_own():
    assert theory_bubble(4, 8) == pytest.approx(3 / 11)
    assert theory_bubble(1, 8) == 0.0
    for s, m in [(2, 4), (4, 8), (3, 5)]:
        assert theory_bubble(s, m) == gpipe(s, m).theory_bubble_fraction
        assert theory_bubble(s, m) == one_f_one_b(s, m).theory_bubble_fraction


def test_schedule_labels_and_words():
    assert [v for _, v in SCHEDULES] == [None, "gpipe", "1f1b"]
    assert schedule_label(None) == "GSPMD"
    assert PipelineConfig(4, 8).words() == "4 stages × 8 microbatches, GSPMD"
    assert (
        PipelineConfig(1, 1, "1f1b", checkpoint=True).words()
        == "1 stage × 1 microbatch, 1F1B · shard_map, checkpointed"
    )


@pytest.mark.parametrize("schedule", [None, "gpipe", "1f1b"])
@pytest.mark.parametrize("stages", [1, 2, 4])
def test_every_offered_count_runs_for_pp(schedule, stages):
    for m in microbatch_options(16):
        assert errors(PipelineConfig(stages, m, schedule), strategies=("pp",)) == {}


def test_microbatches_that_do_not_divide_the_batch_name_the_fix():
    found = errors(PipelineConfig(2, 3))
    assert set(found) == {"microbatches"}
    assert found["microbatches"].startswith("microbatches=3: a batch of 16 rows cannot")
    assert "Fix: pick one of 1, 2, 4, 8, 16." in found["microbatches"]


def test_stages_that_do_not_divide_the_layers_or_exceed_the_devices():
    found = errors(PipelineConfig(3, 4))
    assert set(found) == {"stages"}
    assert "4 layers cannot be split evenly over 3 stages" in found["stages"]
    assert "pick one of 1, 2, 4" in found["stages"]
    found = errors(PipelineConfig(16, 4), layers=16)
    assert "16 stages need 16 devices, and there are 8" in found["stages"]
    assert "pick one of 1, 2, 4, 8" in found["stages"]


def test_pp_dp_by_shard_map_needs_each_microbatch_to_split_over_data():
    # 2 stages on 8 devices: 'data' has 4; 16 rows / 8 microbatches = 2 rows per microbatch.
    found = errors(PipelineConfig(2, 8, "1f1b"))
    assert set(found) == {"microbatches"}
    text = found["microbatches"]
    assert text.startswith("pp+dp with 1F1B · shard_map: a microbatch of 2 rows")
    assert "'data' axis of 4 devices" in text
    assert "pick microbatches from 1, 2, 4" in text
    # GSPMD pads the rows instead; 4 stages leave 2 data shards, so 8 microbatches fit.
    assert errors(PipelineConfig(2, 8, None)) == {}
    assert errors(PipelineConfig(4, 8, "gpipe")) == {}
    assert errors(PipelineConfig(2, 8, "1f1b"), strategies=("pp",)) == {}


def test_errors_are_in_the_projects_format():
    for text in errors(PipelineConfig(3, 3)).values():
        assert ". Fix: " in text and text.endswith(".")
        ShardvizError(text)  # the message a ShardvizError would carry
