"""``suggest``: the plan search finds Megatron and FSDP on its own, its rules reproduce the plan
in ``compare``, and it keeps to its budget and memory limit (8 fake CPU devices)."""

from __future__ import annotations

import jax
import pytest

from shardviz.capture.mesh import Mesh
from shardviz.errors import CompileError, ShardvizError
from shardviz.explainer.explain import explain
from shardviz.model.search import NEAR, Search
from shardviz.strategies.rules.plans import jax_entries
from shardviz.strategies.runner import compare
from shardviz.strategies.search.suggestions import SuggestedSearch, suggest
from shardviz.strategies.zoo import get_model, init_train_state, make_train_step
from shardviz.widgets.app import Explorer

# The FSDP case: a large batch and small weights (data parallelism moves the fewest bytes),
# under a limit below every plan that keeps the weights whole on each device.
FSDP_SIZES = {"d_model": 64, "d_hidden": 256, "batch": 1024}
FSDP_LIMIT = "700 KiB"


def _ledger(report) -> list[tuple]:
    return sorted((c.kind, c.axes, c.in_shape, c.moved_bytes) for c in report.collectives)


def _argument_specs(report) -> dict:
    return {leaf.name: leaf.spec for leaf in report.arguments}


@pytest.fixture(scope="module")
def mesh_2x4() -> Mesh:
    return Mesh(jax.devices(), (2, 4), ("data", "model"))


@pytest.fixture(scope="module")
def mesh_8() -> Mesh:
    return Mesh(jax.devices(), (8,), ("data",))


@pytest.fixture(scope="module")
def megatron(mesh_2x4: Mesh) -> SuggestedSearch:
    """Weights much larger than the activations: no seed strategy, only the descent from
    replicated parameters with the batch split over every axis."""
    model = get_model("mlp", batch=512)
    return suggest(model, mesh=mesh_2x4, strategies=(), budget_s=300, progress=False)


@pytest.fixture(scope="module")
def fsdp(mesh_8: Mesh) -> SuggestedSearch:
    """Seeded with data parallelism and ZeRO-1 only: FSDP is not among the seeds."""
    model = get_model("mlp", **FSDP_SIZES)
    return suggest(
        model, mesh=mesh_8, memory_limit=FSDP_LIMIT, strategies=("dp", "zero1"),
        budget_s=300, progress=False,
    )  # fmt: skip


def test_it_finds_megatrons_column_then_row_split_without_being_told(megatron) -> None:
    assert not megatron.budget_ran_out  # it converged
    assert all(not p.how.startswith("strategy") for p in megatron.plans)
    best = megatron.best
    assert best is not None
    specs = best.specs
    # w1 split by columns, w2 by rows, both over 'model'; the batch over 'data'.
    assert specs["params/w1"] == ((), ("model",))
    assert specs["params/w2"] == (("model",), ())
    assert specs["batch/x"] == specs["batch/y"] == (("data",), ())
    # One all-reduce over 'model', of the activations (batch/2 x d_model): Megatron's.
    over_model = [c for c in best.report.collectives if "model" in c.axes]
    assert [(c.kind, c.axes, c.in_shape) for c in over_model] == [
        ("all-reduce", ("model",), (256, 128))
    ]
    assert not best.report.collectives_of("all-gather")
    # What the plan says is what was compiled.
    assert _argument_specs(best.report) == specs


def test_the_winner_splits_the_work_and_moves_fewer_bytes_than_data_parallelism(megatron) -> None:
    best = megatron.best
    start = megatron.plan("#1")  # replicated parameters, batch over every axis
    assert start.how.startswith("parameters replicated")
    assert best.work_ratio is not None and best.work_ratio < 1.1
    assert best.moved_bytes < start.moved_bytes
    # Bytes moved are the ledger's, counted per device per step.
    assert best.moved_bytes == sum(c.moved_bytes for c in best.report.collectives)
    # The plan that splits nothing moves nothing, and is not near the top.
    whole = [p for p in megatron.plans if p.moved_bytes == 0]
    assert whole and all(p.work_ratio > 7 for p in whole)
    assert megatron.plans.index(whole[0]) > len(megatron.plans) // 2


def test_it_finds_fsdp_when_the_memory_limit_rules_out_replication(fsdp) -> None:
    limit = fsdp.memory_limit
    assert limit == 700 * 1024
    dp = next(p for p in fsdp.plans if p.how.startswith("strategy 'dp'"))
    assert dp.specs["params/w1"] == ((), ()) and dp.fits is False
    assert all(p.specs["params/w1"] != ((), ()) for p in fsdp.plans if p.fits)
    best = fsdp.best
    assert best is not None and best.fits and best.peak_bytes <= limit
    for leaf in ("params/w1", "params/w2"):
        assert ("data",) in best.specs[leaf]  # each weight split over 'data'
    assert best.specs["batch/x"] == (("data",), ())
    # Its gradients are reduced and its weights gathered over 'data'.
    kinds = {c.kind for c in best.report.collectives}
    assert "all-gather" in kinds and {c.axes for c in best.report.collectives} == {("data",)}
    # Not the FSDP seed (there is none): the search got there by its moves.
    assert best.how.startswith("from #")


def test_plans_over_the_limit_are_listed_after_every_plan_that_fits(fsdp) -> None:
    fits = [p.fits for p in fsdp.plans if p.compiled]
    assert fits == sorted(fits, reverse=True)  # True ... True, False ... False
    assert any(f is False for f in fits)
    text = str(fsdp)
    assert "memory limit 700 KiB per device" in text
    assert "no  " in text  # the fits column


def test_best_rules_reproduce_the_plan_in_compare(fsdp, mesh_8: Mesh) -> None:
    best = fsdp.best
    rules = best.rules
    assert rules.extra["mesh_shape"] == (8,)
    model = get_model("mlp", **FSDP_SIZES)
    comparison = compare(model, [rules], mesh=mesh_8, steps=1)
    result = comparison.results[0]
    assert _argument_specs(result.report) == best.specs
    assert _ledger(result.report) == _ledger(best.report)
    assert result.report.memory.peak_bytes == best.peak_bytes
    assert result.loss_matches
    # ... and the Explorer shows it like any strategy.
    explorer = Explorer(comparison)
    assert [s["id"] for s in explorer.strategies] == [f"suggested {best.label}"]
    assert explorer.report is result.report


def test_a_train_step_and_its_arguments_are_searched_by_leaf_path(mesh_2x4: Mesh) -> None:
    model = get_model("mlp")
    state = init_train_state(model, jax.random.key(0))
    step = make_train_step(model)
    search = suggest(step, *state, mesh=mesh_2x4, strategies=("tp",), budget_s=1.0, progress=False)
    assert search.budget_ran_out and search.tried >= 1
    assert any("budget of 1 s ran out" in n for n in search.notes)
    assert "ran out" in str(search)
    assert search.roles == {"params": "params", "opt_state": "optimizer", "batch": "batch"}
    first = search.plan("#1")
    assert "strategy 'tp' (data='data', model='model')" in first.how  # read with the structure
    assert first.specs["params/w1"] == ((), ("model",))
    assert first.specs["opt_state/0/mu/w1"] == ((), ("model",))
    assert first.specs["opt_state/0/count"] == ()
    for plan in search.plans:
        assert _argument_specs(plan.report) == plan.specs
    # The arguments placed with the best plan: real arrays on the devices, ready to explain.
    params, opt_state, batch = search.arguments()
    want = jax_entries(search.best.specs["params/w1"])
    assert params["w1"].sharding.spec == jax.sharding.PartitionSpec(*want)
    again = explain(step, params, opt_state, batch, run=False)
    assert _ledger(again) == _ledger(search.best.report)


def test_a_target_ranks_by_the_estimated_step(mesh_2x4: Mesh) -> None:
    model = get_model("mlp")
    search = suggest(
        model, mesh=mesh_2x4, target="v5e", strategies=("tp", "dp"), budget_s=4.0,
        progress=False,
    )  # fmt: skip
    compiled = [p for p in search.plans if p.compiled]
    assert all(p.estimated_seconds == p.report.estimate.step_seconds for p in compiled)
    assert "v5e" in search.target
    assert search.memory_limit == 16 * 1024**3  # the target's HBM, with no limit given
    fastest = min(p.estimated_seconds for p in compiled)
    assert search.best.estimated_seconds <= fastest * (1 + NEAR)
    assert "ranked by the estimated step" in search.ranking


def test_when_nothing_fits_best_is_none_and_the_notes_say_what_to_change(mesh_2x4) -> None:
    search = suggest("mlp", mesh=mesh_2x4, memory_limit="1 KiB", budget_s=30, progress=False)
    assert search.best is None and search.plans == ()
    assert search.skipped > 0
    assert any("raise memory_limit" in n for n in search.notes)
    assert "best: none" in str(search)
    with pytest.raises(ShardvizError, match="no plan fits"):
        search.arguments()


def test_a_function_that_does_not_trace_raises_the_compilers_words(mesh_2x4) -> None:
    def broken(params, batch):
        return params["missing"] * batch["x"]

    params = {"w": jax.ShapeDtypeStruct((8, 8), "float32")}
    batch = {"x": jax.ShapeDtypeStruct((8, 8), "float32")}
    with pytest.raises(CompileError, match="failed to trace"):
        suggest(broken, params, batch, mesh=mesh_2x4, budget_s=10, progress=False)


def test_the_search_round_trips_through_json(fsdp) -> None:
    back = Search.from_json(fsdp.to_json())
    assert back.plans[0].specs == fsdp.plans[0].specs
    assert back.best.label == fsdp.best.label
    assert str(back) == str(fsdp)
    # Read back as what it was written from: an equal object, its plans keeping their rules.
    again = type(fsdp).from_json(fsdp.to_json())
    assert again == fsdp and type(again.best) is type(fsdp.best)
    assert again.best.rules.name == fsdp.best.rules.name
    with pytest.raises(ShardvizError, match="read back from JSON"):
        again.arguments()
