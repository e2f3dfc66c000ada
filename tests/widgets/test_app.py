"""``shardviz.Explorer``: a report, a comparison, or a function with controls and live training."""

from __future__ import annotations

import time

import jax
import pytest

import shardviz as sv
from shardviz.errors import SpecError
from shardviz.strategies import mlp

MEGATRON = {"w1": (None, "model"), "b1": ("model",), "w2": ("model", None), "b2": ()}


@pytest.fixture(scope="module")
def explorer():
    mesh = sv.Mesh(range(8), (2, 4), ("data", "model"))
    params = mlp.init_params(jax.random.key(0), 64, 256)
    batch = mlp.make_batch(jax.random.key(1), 32, 64)
    params = {k: sv.mark_sharding(v, mesh, MEGATRON[k]) for k, v in params.items()}
    batch = {k: sv.mark_sharding(v, mesh, ("data", None)) for k, v in batch.items()}
    return sv.Explorer(mlp.train_step, params, batch)


def test_function_is_explained_and_shown_with_controls(explorer):
    assert explorer.report.ran
    kinds = {(c.kind, c.axes) for c in explorer.report.collectives}
    assert ("all-reduce", ("model",)) in kinds  # Megatron's activation all-reduce
    frames = [f for c in explorer.report.collectives if c.source for f in c.source.frames]
    assert any(f.function == "loss_fn" for f in frames)
    assert not any("/shardviz/widgets/" in f.file for f in frames)  # machinery is trimmed
    bundle = explorer._repr_mimebundle_()
    data = bundle[0] if isinstance(bundle, tuple) else bundle
    assert "application/vnd.jupyter.widget-view+json" in data
    assert data["application/vnd.jupyter.widget-view+json"]["model_id"] == explorer._box.model_id
    assert "<svg" in data["text/html"]
    assert explorer in explorer._box.children and explorer.controls in explorer._box.children


def test_invalid_spec_is_flagged_inline_and_nothing_runs(explorer):
    before = explorer.report
    box = explorer.controls.spec_boxes["params/w1"]
    box.value = "P('modle', None)"
    assert "modle" in explorer.controls.spec_messages["params/w1"].value
    assert explorer.wait(60)
    assert explorer.report is before
    assert explorer.stale.startswith("fix params/w1: ")  # the panes are the last valid
    box.value = "P(None, 'model')"
    assert explorer.controls.spec_messages["params/w1"].value == ""
    assert explorer.stale == ""


def test_train_while_a_box_is_invalid_names_the_box(explorer):
    """Regression (issue 12): AttributeError: 'NoneType' object has no attribute 'mesh_shape'."""
    box = explorer.controls.spec_boxes["params/w1"]
    box.value = "P('modle', None)"
    try:
        with pytest.raises(SpecError, match=r"'params/w1' box is invalid .*'modle'"):
            explorer.train(5)
    finally:
        box.value = "P(None, 'model')"
    assert explorer.wait(60)


def test_strategy_switch_recompiles_in_the_background(explorer):
    explorer.controls.strategy.value = "dp"
    assert explorer.wait(180)
    assert explorer.status == "done", explorer.error
    assert explorer.report.collectives
    assert all(c.axes == ("data",) for c in explorer.report.collectives)
    explorer.controls.strategy.value = "as given"
    assert explorer.wait(180)


def test_train_runs_the_function_live(explorer):
    run = explorer.train(steps=3)
    run.wait(120)
    assert run.status == "done", run.error
    assert len(run.losses) == 3 and run.losses[2] < run.losses[0]


def test_train_can_be_paced_for_teaching_without_slowing_the_step_times(explorer):
    started = time.perf_counter()
    run = explorer.train(steps=3, pace=0.3)
    run.wait(120)
    assert run.status == "done", run.error
    elapsed_ms = (time.perf_counter() - started) * 1000
    assert elapsed_ms >= 600  # two waits: before steps 2 and 3
    # The waits are not counted as step time: the steps fit in what the waits left.
    assert sum(run.step_ms) <= elapsed_ms - 600
    with pytest.raises(ValueError, match="pace=-1"):
        explorer.train(2, pace=-1)


def test_report_and_comparison_take_no_arguments():
    report = sv.explain(lambda x: x * 2, jax.numpy.ones(8), run=False)
    ex = sv.Explorer(report)
    assert ex.controls is None
    with pytest.raises(TypeError, match="take no arguments"):
        sv.Explorer(report, 1)
    with pytest.raises(TypeError, match="function"):
        sv.Explorer(42)
    with pytest.raises(TypeError, match="needs a function"):
        ex.train(2)


def test_public_explorer_and_its_view_each_have_their_own_name():
    from shardviz.widgets import ExplorerWidget
    from shardviz.widgets.explorer.widget import ExplorerWidget as defined

    assert ExplorerWidget is defined and ExplorerWidget.__name__ == "ExplorerWidget"
    assert sv.Explorer.__name__ == "Explorer" and sv.Explorer is not ExplorerWidget
    assert issubclass(sv.Explorer, ExplorerWidget)
    assert sv.widgets.Explorer is sv.Explorer
