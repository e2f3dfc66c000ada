"""The GSPMD pipeline as a strategy: compare() runs it for real, and its loss is the
unpipelined model's."""

from __future__ import annotations

import optax
import pytest

import shardviz as sv
from shardviz.errors import ShardvizError
from shardviz.strategies.pipeline.gspmd import pipelined_model
from shardviz.strategies.rules.pipeline import pipeline_rules
from shardviz.strategies.runner import initial_state, reference_outputs
from shardviz.strategies.zoo import get_model

S, M = 4, 4


@pytest.fixture(scope="module")
def plain():
    return get_model("transformer", layers=4, batch=16)


@pytest.fixture(scope="module")
def unpipelined_loss(plain) -> float:
    opt = optax.adam(1e-3)
    return float(reference_outputs(plain, opt, initial_state(plain, opt))[2])


@pytest.mark.parametrize(
    ("kind", "shape", "axes"), [("pp", (S,), ("stage",)), ("pp+dp", (S, 2), ("stage", "data"))]
)
def test_pipeline_strategies_run_and_match_the_unpipelined_step(
    plain, unpipelined_loss, kind, shape, axes
):
    model = pipelined_model(plain, stages=S, microbatches=M)
    n = 1
    for k in shape:
        n *= k
    rules = pipeline_rules(kind, stages=S, microbatches=M)
    c = sv.compare(model, [rules], mesh=sv.Mesh(range(n), shape, axes), steps=1)
    (r,) = c.results
    assert r.loss_matches and r.report.check.matches
    assert r.loss == pytest.approx(unpipelined_loss, rel=1e-5)
    # Every device sends to the next stage's device (the ring, per data row), once per step
    # of the loop.
    permutes = r.report.collectives_of("collective-permute")
    ring = [x for x in permutes if len(x.pairs) == n]
    assert ring and all(x.axes == ("stage",) and x.trips == M + S - 1 for x in ring)


def test_only_models_with_a_list_of_layers_can_be_pipelined(plain):
    with pytest.raises(ShardvizError, match="no 'layers' list"):
        pipelined_model(get_model("mlp"), stages=2, microbatches=2)
    with pytest.raises(ShardvizError, match="cannot be split evenly over 3 stages"):
        pipelined_model(plain, stages=3, microbatches=2)
    with pytest.raises(ValueError, match="unknown pipeline rule set"):
        pipeline_rules("pp+tp")
    model = pipelined_model(plain, stages=2, microbatches=2)
    with pytest.raises(ShardvizError, match="pipelined as 2 stages x 2 microbatches"):
        sv.compare(model, [pipeline_rules("pp", stages=4, microbatches=2)])


def test_compare_by_name_with_stages_and_microbatches(unpipelined_loss):
    c = sv.compare("transformer", ["pp", "dp", "pp+dp"], stages=S, microbatches=M, steps=1,
                   layers=4, batch=16)  # fmt: skip
    assert [r.strategy for r in c.results] == ["pp", "dp", "pp+dp"]
    pp, dp, ppdp = c.results
    assert [len(r.mesh.devices) for r in c.results] == [S, 8, 8]
    assert ppdp.mesh.axis_names == ("stage", "data") and ppdp.mesh.axis_sizes == (S, 2)
    for r in (pp, dp, ppdp):
        assert r.loss_matches and r.loss == pytest.approx(unpipelined_loss, rel=1e-5)
    assert dp.schedule is None
    for r in (pp, ppdp):
        s = r.schedule
        assert (s.kind, s.stages, s.microbatches) == ("gpipe", S, M)
        assert s.theory_bubble_fraction == pytest.approx((S - 1) / (M + S - 1))


def test_the_comparison_text_says_the_schedule_and_its_bubble():
    c = sv.compare("transformer", ["pp"], stages=2, microbatches=2, steps=1, layers=2, batch=8)
    text = str(c)
    # 2 stages x 2 microbatches: (S-1)/(M+S-1) = 1/3.
    assert (
        "pipeline: gpipe, GSPMD · 2 stages x 2 microbatches · bubble 33.3% of the schedule "
        "(theory (S-1)/(M+S-1) 33.3%)"
    ) in text
    assert "pipeline:" not in str(sv.compare("mlp", ["dp"], steps=1))


@pytest.mark.parametrize("kind", ["pp", "pp+dp"])
def test_1f1b_written_with_shard_map_runs_in_compare_and_matches(plain, unpipelined_loss, kind):
    c = sv.compare(plain, [kind], stages=S, microbatches=8, schedule="1f1b", steps=1)
    (r,) = c.results
    assert r.loss_matches and r.report.check.matches
    assert r.loss == pytest.approx(unpipelined_loss, rel=1e-5)
    s = r.schedule
    assert (s.kind, s.form, s.stages, s.microbatches) == ("1f1b", "shard_map", S, 8)
    assert s.residual_bytes and s.activation_bytes(0) == S * s.residual_bytes
    assert s.activation_bytes(S - 1) == s.residual_bytes
    assert "1F1B, shard_map" in r.title
    # Each tick every stage sends forward and backward: two permutes per tick, counted per step.
    (perm,) = [x for x in r.collectives if x.kind == "collective-permute"]
    assert perm.axes == ("stage",) and perm.count == 2 * s.length
    if kind == "pp+dp":
        # The gradients are summed over the microbatches on each device, reduced over 'data'
        # once, not once per tick.
        data = [x for x in r.report.collectives if "data" in x.axes]
        assert data and all(x.trips == 1 for x in data)
        assert r.report.collectives_of("all-reduce")


def test_pipeline_schedule_names_are_checked(plain):
    with pytest.raises(ShardvizError, match="use 'gpipe' or '1f1b'"):
        sv.compare(plain, ["pp"], schedule="interleaved")
