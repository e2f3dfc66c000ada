"""ExplorerSession and connect(): a small MLP on 8 fake CPU devices, with a fake explorer."""

from __future__ import annotations

import threading

import jax
import numpy as np
import pytest

import shardviz as sv
from shardviz.errors import SpecError
from shardviz.model import Report
from shardviz.strategies import mlp
from shardviz.widgets.controls import AS_GIVEN, Config, Controls
from shardviz.widgets.session import ExplorerSession, connect, role_of

D, H, B = 64, 256, 32
WAIT = 120  # seconds: a ceiling against hangs, never a timing assertion
MEGATRON = {"w1": (None, "model"), "b1": ("model",), "w2": ("model", None), "b2": ()}


class FakeExplorer:
    """The Explorer's interface: show(report), status and error; records what it was given."""

    def __init__(self) -> None:
        self.shown: list[Report] = []
        self.statuses: list[str] = []
        self._status = ""
        self.error = ""
        self.stale = ""

    @property
    def status(self) -> str:
        return self._status

    @status.setter
    def status(self, value: str) -> None:
        self._status = value
        self.statuses.append(value)

    def show(self, report: Report) -> None:
        self.shown.append(report)


@pytest.fixture(scope="module")
def mesh():
    return sv.Mesh(range(8), (2, 4), ("data", "model"))


@pytest.fixture(scope="module")
def args(mesh):
    params = mlp.init_params(jax.random.key(0), D, H)
    batch = mlp.make_batch(jax.random.key(1), B, D)
    params = {k: sv.mark_sharding(v, mesh, MEGATRON[k], name=k) for k, v in params.items()}
    batch = {k: sv.mark_sharding(v, mesh, ("data", None), name=k) for k, v in batch.items()}
    return params, batch


@pytest.fixture(scope="module")
def session(args):
    return ExplorerSession(mlp.train_step, *args, steps=1)


def wired(session: ExplorerSession, run_now: bool = False):
    explorer, controls = FakeExplorer(), session.controls()
    return explorer, controls, connect(explorer, controls, session, run_now=run_now)


def kinds(report: Report) -> set[tuple[str, tuple[str, ...]]]:
    return {(c.kind, c.axes) for c in report.collectives}


# --- reading and placing --------------------------------------------------------------------


def test_leaves_are_named_by_argument_and_path(session):
    assert set(session.shapes) == {
        "params/w1", "params/b1", "params/w2", "params/b2", "batch/x", "batch/y",
    }  # fmt: skip
    assert session.shapes["params/w1"] == (D, H)
    assert session.device_ids == tuple(range(8))


def test_initial_config_reads_the_given_shardings(session):
    config = session.initial_config()
    assert (config.mesh_shape, config.axis_names, config.strategy) == (
        (2, 4), ("data", "model"), AS_GIVEN,
    )  # fmt: skip
    assert config.specs["params/w1"] == (None, "model")
    assert config.specs["params/b1"] == ("model",)
    assert config.specs["params/w2"] == ("model", None)
    assert config.specs["params/b2"] == (None,)
    assert config.specs["batch/x"] == ("data", None)


def test_initial_config_round_trips_through_build(session, args):
    placed = session.build(session.initial_config())
    for (_, new), (_, old) in zip(
        jax.tree_util.tree_leaves_with_path(placed),
        jax.tree_util.tree_leaves_with_path(args),
        strict=True,
    ):
        assert new.sharding.is_equivalent_to(old.sharding, new.ndim)
        np.testing.assert_array_equal(np.asarray(new), np.asarray(old))


def test_unplaced_arguments_start_replicated_on_one_data_axis():
    x = np.ones((16, 4), np.float32)
    s = ExplorerSession(mlp.forward, {"w1": x.T}, x)
    config = s.initial_config()
    assert (config.mesh_shape, config.axis_names) == ((8,), ("data",))
    assert config.specs == {"params/w1": (None, None), "x": (None, None)}
    placed_params, placed_x = s.build(Config((8,), ("data",), AS_GIVEN, {"x": ("data",)}))
    assert sv.layout(placed_x).spec == (("data",), ())
    assert isinstance(placed_params["w1"], jax.Array)


def test_build_names_the_leaf_of_a_bad_spec(session):
    config = Config((2, 4), ("data", "model"), AS_GIVEN, {"params/w1": ("modle", None)})
    with pytest.raises(SpecError, match="'params/w1'.*unknown mesh axis 'modle'"):
        session.build(config)


def test_roles_and_strategy_specs(session):
    assert [role_of(n) for n in ("params", "opt_state", "batch", "x")] == [
        "params", "optimizer", "batch", "batch",
    ]  # fmt: skip
    tp = session.strategy_specs((2, 4), ("data", "model"), "tp")
    assert tp["params/w1"] == (None, "model")
    assert tp["params/w2"] == ("model", None)
    assert tp["batch/x"] == ("data",)
    fsdp = session.strategy_specs((8,), ("data",), "fsdp")
    assert fsdp["params/w1"] == (None, "data")  # the largest dim


def test_a_strategy_needing_a_missing_axis_says_so(session):
    with pytest.raises(sv.ShardvizError, match="needs mesh axes"):
        session.strategy_specs((8,), ("data",), "tp")


def test_session_controls_show_the_initial_config(session):
    controls = session.controls()
    assert controls.config == session.initial_config()
    assert controls.spec_boxes["params/w1"].value == "P(None, 'model')"
    controls.strategy.value = "tp"
    assert controls.spec_boxes["batch/x"].value == "P('data',)"


# --- running through connect ----------------------------------------------------------------


def test_run_now_shows_the_given_placement(session):
    explorer, _, conn = wired(session, run_now=True)
    assert conn.wait(WAIT)
    (report,) = explorer.shown
    assert report.ran
    assert ("all-reduce", ("model",)) in kinds(report)  # Megatron's row-split matmul
    assert explorer.statuses == ["compiling", "running", "done"]
    assert explorer.error == ""


def test_changing_a_spec_shows_a_report_with_the_new_spec(session):
    explorer, controls, conn = wired(session)
    controls.spec_boxes["params/w1"].value = "('model', None)"
    assert conn.wait(WAIT)
    report = explorer.shown[-1]
    assert report.arguments["params/w1"].spec == (("model",), ())
    assert report.arguments["params/w2"].spec == (("model",), ())
    assert explorer.status == "done"


def test_an_invalid_axis_is_shown_as_the_explorers_error(session):
    explorer, controls, conn = wired(session)
    controls.spec_boxes["params/w1"].value = "modle, None"  # caught as you type: no run
    assert "unknown mesh axis 'modle'" in controls.spec_messages["params/w1"].value
    assert explorer.statuses == []
    bad = Config((2, 4), ("data", "model"), AS_GIVEN, {"params/w1": ("modle", None)})
    conn.submit(bad)  # from code, past the controls: the error reaches the explorer
    assert conn.wait(WAIT)
    assert explorer.status == "error"
    assert "'params/w1'" in explorer.error and "unknown mesh axis 'modle'" in explorer.error
    assert "Fix:" in explorer.error
    assert explorer.shown == []
    conn.submit(session.initial_config())  # a later good request clears it
    assert conn.wait(WAIT)
    assert (explorer.status, explorer.error) == ("done", "")
    assert len(explorer.shown) == 1


def test_a_mesh_that_does_not_fit_the_devices_is_an_error_not_an_exception(session):
    explorer, _, conn = wired(session)
    conn.submit(Config((3,), ("data",), AS_GIVEN, {}))
    assert conn.wait(WAIT)
    assert explorer.status == "error"
    assert "mesh_shape (3,)" in explorer.error


def test_switching_to_dp_all_reduces_over_data_only(session):
    explorer, controls, conn = wired(session)
    controls.strategy.value = "dp"
    assert conn.wait(WAIT)
    report = explorer.shown[-1]
    assert report.collectives_of("all-reduce", ("data",))
    assert not any("model" in c.axes for c in report.collectives)
    assert report.arguments["params/w1"].spec == ((), ())


def test_switching_to_fsdp_gathers_parameters_over_data(session):
    explorer, controls, conn = wired(session)
    controls.mesh_shape.value = (8,)  # names become 'data'; the Megatron specs are fitted
    assert controls.valid and controls.config.specs["params/w1"] == (None, None)
    controls.strategy.value = "fsdp"
    assert conn.wait(WAIT)
    report = explorer.shown[-1]
    assert report.mesh.axis_sizes == (8,)
    assert report.collectives_of("all-gather", ("data",))
    assert report.arguments["params/w1"].spec == ((), ("data",))


def test_a_strategy_run_notes_the_rules_a_plain_function_cannot_take(session):
    config = Config((8,), ("data",), "zero2", {})
    report = session.run(config)
    assert any("placed the arguments only" in n and "gradients" in n for n in report.notes)
    assert not any("placed the arguments only" in n for n in session.run(
        Config((8,), ("data",), "dp", {})).notes)  # fmt: skip


def test_a_strategy_run_says_what_its_unused_axis_costs(session):
    report = session.run(Config((2, 4), ("data", "model"), "dp", {}))
    assert any("'model' (4 devices) is unused" in n for n in report.notes)


def test_while_a_box_is_wrong_the_explorer_is_told_which(session):
    explorer, controls, conn = wired(session)
    assert explorer.stale == ""
    controls.spec_boxes["params/w1"].value = "modle, None"
    assert explorer.stale.startswith("fix params/w1: ")
    assert "unknown mesh axis 'modle'" in explorer.stale
    controls.axis_names.value = "data"
    assert explorer.stale.startswith("fix axis names: 1 name(s)")
    controls.axis_names.value = "data, model"
    controls.spec_boxes["params/w1"].value = "None, model"
    assert explorer.stale == ""
    assert conn.wait(WAIT)


class GatedSession(ExplorerSession):
    """Holds the first build until released: a request still in flight when a newer comes."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.started, self.release = threading.Event(), threading.Event()
        self.builds = 0

    def build(self, config):
        self.builds += 1
        if self.builds == 1:
            self.started.set()
            assert self.release.wait(WAIT)
        return super().build(config)


def test_two_rapid_requests_show_only_the_newest(args):
    session = GatedSession(mlp.train_step, *args, steps=1)
    explorer, controls, conn = wired(session)
    controls.spec_boxes["params/w1"].value = "model, None"  # A: held in build
    assert session.started.wait(WAIT)
    controls.spec_boxes["params/w1"].value = "None, data"  # B: submitted while A runs
    session.release.set()
    assert conn.wait(WAIT)
    assert conn.latest.join(WAIT)
    (report,) = explorer.shown
    assert report.arguments["params/w1"].spec == ((), ("data",))
    assert explorer.status == "done"


def test_controls_can_be_built_without_a_session():
    c = Controls({"x": (8,)}, Config((8,), ("data",), AS_GIVEN, {"x": ("data",)}))
    assert c.config is not None and c.config.specs == {"x": ("data",)}
