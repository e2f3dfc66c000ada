"""Pipelines in the plan search: the zoo transformer trained as ``pp+dp`` with its stages on a
mesh axis, and the microbatch count as a knob."""

from __future__ import annotations

import jax
import pytest

from shardviz.capture.mesh import Mesh
from shardviz.errors import ShardvizError
from shardviz.model.search import Search
from shardviz.strategies.candidates import Space
from shardviz.strategies.runner import compare
from shardviz.strategies.search.inputs import search_inputs
from shardviz.strategies.search.suggestions import SuggestedSearch, suggest
from shardviz.strategies.zoo import get_model


@pytest.fixture(scope="module")
def mesh_2x4() -> Mesh:
    return Mesh(jax.devices(), (2, 4), ("data", "model"))


@pytest.fixture(scope="module")
def search(mesh_2x4) -> SuggestedSearch:
    """The zoo transformer (2 layers, batch 16) with pipelines and no other seeds but the
    replicated plan: the pipeline on 'data' (2 stages; 'model' does not divide 2 layers)
    from 4 microbatches, and the knob's move to 2, then the replicated plan: three plans,
    capped so that a slow or busy machine compiles the same ones."""
    return suggest(
        "transformer",
        mesh=mesh_2x4,
        pipelines=True,
        strategies=(),
        max_plans=3,
        budget_s=600,
        progress=False,
    )


def test_the_microbatch_counts_that_fit_each_stage_axis(mesh_2x4) -> None:
    """Stages on 'data' (2): counts of at least 2 dividing the batch of 16 whose
    microbatches (16 / m rows) split over the other axis (4): 2 and 4. 'model' (4) does not
    divide the 2 layers. With 4 layers it does: counts 4 and 8 (rows over 'data', 2)."""
    inputs = search_inputs("transformer", (), mesh_2x4, None, None, 0)
    assert inputs.pipeline_options() == ({"data": (2, 4)}, "")
    four = search_inputs(get_model("transformer", layers=4), (), mesh_2x4, None, None, 0)
    assert four.pipeline_options()[0] == {"data": (2, 4), "model": (4, 8)}
    space = Space(inputs.leaves(), {"data": 2, "model": 4})
    space.pipelines = {"data": (2, 4)}
    ((seed, how),) = space.pipeline_seeds()
    assert seed.pipeline == ("data", 4) and "2 stages x 4 microbatches" in how
    assert space.idle_ways(seed) == 1
    moves = dict(space.moves(seed))
    assert list(moves) == ["microbatches"]
    assert [c.pipeline for c, _ in moves["microbatches"]] == [("data", 2)]


def test_each_microbatch_count_is_compiled_and_the_bubble_shows_in_the_work(search) -> None:
    piped = {p.pipeline: p for p in search.plans if p.pipeline is not None}
    assert set(piped) == {("data", 2, 4), ("data", 2, 2)}
    four, two = piped[("data", 2, 4)], piped[("data", 2, 2)]
    assert four.compiled and two.compiled
    # GPipe's bubble: (stages - 1) / (microbatches + stages - 1) of the loop does no work,
    # but every device computes through it: fewer microbatches, more flops per device.
    assert two.flops_per_device > four.flops_per_device
    assert four.report is not None
    kinds = {(c.kind, c.axes) for c in four.report.collectives}
    assert ("collective-permute", ("stage",)) in kinds, "activations move stage to stage"
    assert "from #" in two.how and "2 microbatches" in two.how
    assert any("pipelines searched" in n for n in search.notes)


def test_a_pipeline_plan_runs_in_compare_and_round_trips(search) -> None:
    plan = next(p for p in search.plans if p.pipeline == ("data", 2, 4))
    rules = plan.rules
    assert rules.axes == ("stage", "data")
    assert rules.extra["stages"] == 2 and rules.extra["microbatches"] == 4
    assert rules.extra["mesh_shape"] == (2, 4)
    result = compare("transformer", [rules], steps=1).results[0]
    assert result.loss_matches, "the pipelined step computes the same loss"
    with pytest.raises(ShardvizError, match="compare"):
        search.arguments(plan)
    again = SuggestedSearch.from_json(search.to_json())
    assert again.plan(plan.label).pipeline == ("data", 2, 4)
    assert Search.from_json(search.to_json()).plan(plan.label).pipeline == ("data", 2, 4)


def test_pipelines_on_a_program_that_cannot_be_pipelined_say_why(mesh_2x4) -> None:
    with pytest.raises(ShardvizError, match="no list of identical layers"):
        suggest("mlp", mesh=mesh_2x4, pipelines=True, budget_s=5, progress=False)

    def f(x, w):
        return x @ w

    x = jax.ShapeDtypeStruct((8, 4), "float32")
    with pytest.raises(ShardvizError, match="a pipeline is a model's"):
        suggest(f, x, x.update(shape=(4, 4)), mesh=mesh_2x4, pipelines=True, progress=False)
