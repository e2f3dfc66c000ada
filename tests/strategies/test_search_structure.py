"""``suggest`` reads the program's structure: Megatron's column/row pair from the jaxpr, moves
of several leaves at once, a best-first beam; it is never worse than the built-in strategies and
always says how many plans it compiled and why it stopped (8 fake CPU devices; issue 29 §1)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from shardviz.capture.mesh import Mesh
from shardviz.errors import ShardvizError
from shardviz.strategies.search.rank import bests, rank_key
from shardviz.strategies.search.structure import read_structure
from shardviz.strategies.search.suggestions import SuggestedSearch, suggest
from shardviz.strategies.zoo import get_model

#: What the one-knob descent settled on for the MLP forward before structure seeds (w1, w2 and
#: x all P('data', None)): bytes moved and peak per device.
OLD_MOVED, OLD_PEAK = 248 * 1024, 480 * 1024


def mlp(x, w1, w2):
    return jnp.tanh(x @ w1) @ w2


@pytest.fixture(scope="module")
def mesh() -> Mesh:
    return Mesh(jax.devices(), (2, 4), ("data", "model"))


def mlp_args(mesh: Mesh, hidden: int = 512) -> tuple:
    """x (64, 128) placed over 'data'; w1 and w2 with no placement."""
    x = jax.ShapeDtypeStruct(
        (64, 128), jnp.float32, sharding=NamedSharding(mesh.jax_mesh, P("data", None))
    )
    return (
        x,
        jax.ShapeDtypeStruct((128, hidden), jnp.float32),
        jax.ShapeDtypeStruct((hidden, 128), jnp.float32),
    )


@pytest.fixture(scope="module")
def mlp_search(mesh: Mesh) -> SuggestedSearch:
    return suggest(mlp, *mlp_args(mesh), mesh=mesh, budget_s=60, progress=False)


def _is_builtin(how: str) -> bool:
    return how.startswith("strategy") or "(as strategy" in how


def test_the_jaxpr_joins_w1s_columns_with_w2s_rows(mesh: Mesh) -> None:
    structure = read_structure(mlp, mlp_args(mesh), ["x", "w1", "w2"])
    assert structure.weights == {"w1", "w2"}
    link = structure.link_of("w1", 1)
    assert link is not None and link.dims == (("w1", 1), ("w2", 0)) and not link.reduced
    assert structure.link_of("x", 0).dims == (("x", 0),)  # the batch: in no weight
    assert structure.link_of("x", 1).dims == (("x", 1), ("w1", 0))


def test_megatron_is_found_for_the_mlp_forward(mlp_search: SuggestedSearch) -> None:
    best = mlp_search.best
    assert best is not None
    assert best.specs["w1"] == ((), ("model",))  # columns over 'model'
    assert best.specs["w2"] == (("model",), ())  # rows over 'model'
    assert best.specs["x"] == (("data",), ())  # the data as placed
    assert best.moved_bytes < OLD_MOVED / 5 and best.peak_bytes < OLD_PEAK
    # One all-reduce over 'model' where the pair meets: Megatron's.
    assert [(c.kind, c.axes) for c in best.report.collectives] == [("all-reduce", ("model",))]
    assert mlp_search.roles == {"x": "batch", "w1": "params", "w2": "params"}
    assert any("searched as weights" in n for n in mlp_search.notes)
    assert any("kept as placed" in n for n in mlp_search.notes)
    # The structure's first guess is compiled first.
    assert mlp_search.plan("#1").how.startswith("structure: 'model' on w1 dim 1, w2 dim 0")


def test_the_best_plan_ranks_at_least_as_well_as_every_builtin_seed(mlp_search) -> None:
    plans = list(mlp_search.plans)
    builtins = [p for p in plans if _is_builtin(p.how)]
    assert builtins
    figures = bests(plans)
    best_key = rank_key(mlp_search.best, figures, False)
    assert all(best_key <= rank_key(p, figures, False) for p in builtins)


def test_it_says_how_many_plans_it_compiled_and_why_it_stopped(mlp_search, mesh) -> None:
    assert mlp_search.stopped == "converged" and not mlp_search.budget_ran_out
    text = str(mlp_search)
    assert f"{mlp_search.tried} plans compiled" in text and "(converged)" in text
    assert mlp_search.tried > 4  # the beam went on past the first local optimum
    hurried = suggest(mlp, *mlp_args(mesh), mesh=mesh, budget_s=1e-3, progress=False)
    assert hurried.stopped == "budget" and hurried.tried == 1  # the first plan always compiles
    assert "1 plan compiled" in str(hurried) and "ran out" in str(hurried)


def test_a_budget_that_cannot_compile_one_plan_is_refused_with_the_fix(mesh) -> None:
    for budget in (0, -1.0):
        with pytest.raises(ShardvizError, match=r"budget_s=.* is not a finite positive number"):
            suggest(mlp, *mlp_args(mesh), mesh=mesh, budget_s=budget, progress=False)


def test_a_memory_cap_no_plan_meets_says_so_and_what_to_change(mesh) -> None:
    search = suggest(
        mlp, *mlp_args(mesh), mesh=mesh, budget_s=30, memory_limit="1 KiB", progress=False
    )
    assert search.best is None and search.stopped == "memory"
    assert any("raise memory_limit" in n for n in search.notes)
    assert "no plan fits the memory limit" in str(search)


# A one-layer zoo transformer, small enough to compile in seconds.
TRANSFORMER = {"layers": 1, "batch": 8, "seq": 16, "d_model": 128, "d_ff": 512, "vocab": 32}


@pytest.fixture(scope="module")
def transformer_first(mesh) -> SuggestedSearch:
    """The zoo transformer's search cut short after its first plan."""
    model = get_model("transformer", **TRANSFORMER)
    return suggest(model, mesh=mesh, strategies=("tp",), budget_s=1e-3, progress=False)


def test_the_zoo_transformer_is_first_tried_with_megatrons_split(transformer_first) -> None:
    """Read from the train step's jaxpr: w_in's columns with w_out's rows, the heads of wq,
    wk, wv with wo's, over 'model'; the batch over 'data'. The built-in 'tp' agrees."""
    first = transformer_first.plan("#1")
    assert first.how.startswith("structure: 'model' on layers/*/mlp/w_in dim 1")
    assert "(as strategy 'tp' (data='data', model='model'))" in first.how
    specs = first.specs
    assert specs["params/layers/0/mlp/w_in"] == ((), ("model",))
    assert specs["params/layers/0/mlp/w_out"] == (("model",), ())
    for w in ("wq", "wk", "wv"):  # [d_model, heads, head_dim]: by heads
        assert specs[f"params/layers/0/attn/{w}"] == ((), ("model",), ())
    assert specs["params/layers/0/attn/wo"] == (("model",), (), ())  # [heads, head_dim, d]
    assert specs["batch/inputs"] == (("data",), ())
    # Megatron's all-reduces over 'model' are of activations, not weights.
    assert not any(c.kind == "all-gather" and "model" in c.axes for c in first.report.collectives)


def test_a_memory_cap_that_rules_out_data_and_tensor_parallelism_still_finds_a_plan(
    mesh, transformer_first
):
    """1.5 MiB per device: pure data parallelism (every weight and its Adam state whole)
    does not fit, nor Megatron's split with data parallelism (1.7 MiB); the search still
    finds a plan that fits, ranked at least as well as every built-in that fits."""
    model = get_model("transformer", **TRANSFORMER)
    search = suggest(
        model, mesh=mesh, strategies=("dp", "tp", "zero3"), memory_limit="1.5 MiB",
        budget_s=10, progress=False,
    )  # fmt: skip
    # Data parallelism keeps the weights and both Adam moments whole on every device.
    assert 3 * 4 * model.info["num_params"] > 1.5 * 2**20
    dp = [p for p in search.plans if _is_builtin(p.how) and "'dp'" in p.how]
    assert all(p.fits is False for p in dp)
    megatron = transformer_first.plan("#1")  # tensor parallelism over 'model', data over 'data'
    assert megatron.peak_bytes > 1.5 * 2**20
    tp = [p for p in search.plans if "strategy 'tp'" in p.how]
    assert all(p.fits is False for p in tp)
    best = search.best
    assert best is not None and best.fits and best.peak_bytes <= 1.5 * 2**20
    figures = bests(list(search.plans))
    fitting_builtins = [p for p in search.plans if _is_builtin(p.how) and p.fits]
    assert all(
        rank_key(best, figures, False) <= rank_key(p, figures, False) for p in fitting_builtins
    )
    assert search.stopped in ("budget", "converged")
    assert f"{search.tried} plan" in str(search)


def test_the_meshs_shape_is_a_knob(mesh) -> None:
    """On 4 x 2 the data is split four ways and Megatron's all-reduce is of a quarter of the
    activations over 2 devices: fewer bytes than on 2 x 4."""
    search = suggest(
        mlp, *mlp_args(mesh), mesh=mesh, mesh_shapes=[(4, 2)], budget_s=60, progress=False
    )
    shapes = {p.report.mesh.axis_sizes for p in search.plans if p.compiled}
    assert shapes == {(2, 4), (4, 2)}
    best = search.best
    assert best.report.mesh.axis_sizes == (4, 2) and best.rules.extra["mesh_shape"] == (4, 2)
    assert best.specs["w1"] == ((), ("model",)) and best.specs["w2"] == (("model",), ())
    on_2x4 = [p for p in search.plans if p.compiled and p.report.mesh.axis_sizes == (2, 4)]
    assert best.moved_bytes < min(p.moved_bytes for p in on_2x4 if p.work_ratio < 1.1)
    assert search.mesh.axis_sizes == (4, 2)
    assert any(n.startswith("mesh shapes searched: 2 x 4") for n in search.notes)
    x, w1, _ = search.arguments()  # placed on the best plan's mesh
    assert dict(x.sharding.mesh.shape) == {"data": 4, "model": 2}
    assert w1.sharding.spec == P(None, "model")


def test_a_mesh_shape_of_another_device_count_is_refused_with_the_fix(mesh) -> None:
    with pytest.raises(ShardvizError, match="whose product is 8"):
        suggest(mlp, *mlp_args(mesh), mesh=mesh, mesh_shapes=[(3, 3)], progress=False)
