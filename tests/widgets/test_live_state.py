"""The live training view without a browser: real steps on 8 fake CPU devices, synced state.

Runs are gated with threading.Event (never with sleeps or timing asserts): a step function that
waits on an event while it is traced, or a batch function that waits before a given step.
"""

from __future__ import annotations

import json
import math
import re
import statistics
import threading
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import PartitionSpec as P

import shardviz
import shardviz as sv
from shardviz.render.colors import device_color
from shardviz.render.live.format import time_note
from shardviz.strategies import mlp
from shardviz.strategies.zoo import get_model, init_train_state, make_train_step
from shardviz.widgets.esm import widget_module
from shardviz.widgets.live import run as live_run_mod
from shardviz.widgets.live import stepper as live_stepper_mod
from shardviz.widgets.live.widget import STATIC, LiveRun, LiveWidget, live

D, H, B = 64, 256, 32
WAIT = 120  # seconds: a bound for a hung test, never a timing assert
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
HOSTILE = "<img src=x onerror=alert(1)>"


@pytest.fixture(scope="module")
def mesh():
    return sv.Mesh(range(8), (2, 4), ("data", "model"))


@pytest.fixture(scope="module")
def dp_state(mesh):
    """The MLP placed data-parallel: parameters replicated, the batch split over 'data'."""
    params = mlp.init_params(jax.random.key(0), D, H)
    batch = mlp.make_batch(jax.random.key(1), B, D)
    params = {k: sv.mark_sharding(v, mesh, (), name=k) for k, v in params.items()}
    batch = {k: sv.mark_sharding(v, mesh, ("data", None), name=k) for k, v in batch.items()}
    return params, batch


def _reference(step, state: tuple, batch, steps: int) -> tuple[list[float], tuple]:
    """The losses and final state of ``steps`` steps run directly, without shardviz."""
    jitted = jax.jit(step)
    losses = []
    for _ in range(steps):
        *state, loss = jitted(*state, batch)
        losses.append(float(loss))
    return losses, tuple(state)


def _finished(run: LiveRun) -> LiveRun:
    run.wait(WAIT)
    assert not run.running, "the run's thread did not end"
    return run


def _bad_batch():
    """A batch whose features do not match w1: the step fails with a shape error."""
    return mlp.make_batch(jax.random.key(2), B, D + 1)


# -- what a run syncs ------------------------------------------------------------------------


def test_synced_losses_are_the_step_functions(dp_state):
    params, batch = dp_state
    want, (want_params,) = _reference(mlp.train_step, (params,), batch, 5)

    run = _finished(live(mlp.train_step, params, batch, steps=5))

    assert run.status == "done" and run.error == ""
    synced = run.view.get_state()
    assert synced["losses"] == want
    assert run.losses == want
    assert synced["step"] == 5 and synced["total_steps"] == 5
    assert isinstance(run.state, dict)  # the form given: one argument, not a tuple
    for k in want_params:
        np.testing.assert_array_equal(np.asarray(run.state[k]), np.asarray(want_params[k]))
    json.dumps(synced["losses"], allow_nan=False)  # plain JSON


def test_one_positive_step_time_per_step_and_the_first_is_the_compile(dp_state):
    params, batch = dp_state
    run = _finished(live(mlp.train_step, params, batch, steps=5))
    ms = run.view.get_state()["step_ms"]
    assert len(ms) == 5 and all(isinstance(t, float) and t > 0 for t in ms)
    assert run.step_ms == ms
    assert run.median_step_ms == statistics.median(ms[1:])
    note = time_note(ms)
    assert note.startswith("step 1 (compile): ") and "over steps 2–5" in note


def test_memory_per_device_is_the_compiled_memory_analysis(dp_state, mesh):
    params, batch = dp_state
    run = _finished(live(mlp.train_step, params, batch, steps=2))
    ma = jax.jit(mlp.train_step).lower(params, batch).compile().memory_analysis()
    per_device = (
        ma.argument_size_in_bytes
        + ma.output_size_in_bytes
        - ma.alias_size_in_bytes
        + ma.temp_size_in_bytes
    )
    memory = run.view.get_state()["memory"]
    assert [e["device"] for e in memory] == [int(i) for i in mesh.device_ids.reshape(-1)]
    assert {e["bytes"] for e in memory} == {per_device}
    assert all(e["color"] == device_color(e["device"]) for e in memory)
    assert run.view.memory_source == "estimate"
    assert "compiler's estimate" in run.view.memory_note


def test_zoo_train_step_with_params_and_optimizer_state():
    model = get_model("mlp", d_model=16, d_hidden=32, batch=8)
    params, opt_state, batch = init_train_state(model, jax.random.key(0))
    step = make_train_step(model)
    want, (want_params, _) = _reference(step, (params, opt_state), batch, 3)

    run = _finished(live(step, (params, opt_state), batch, steps=3))

    assert run.status == "done", run.error
    assert run.losses == want
    assert isinstance(run.state, tuple) and len(run.state) == 2
    np.testing.assert_array_equal(np.asarray(run.state[0]["w1"]), np.asarray(want_params["w1"]))


def test_batches_from_an_iterator_run_until_it_runs_out(dp_state):
    params, batch = dp_state
    run = _finished(live(mlp.train_step, params, iter([batch] * 3)))
    assert run.status == "done"
    assert len(run.losses) == 3 and run.view.total_steps == 0


def test_batches_from_a_callable_get_the_step_index(dp_state):
    params, batch = dp_state
    seen = []

    def batches(i: int):
        seen.append(i)
        return batch

    run = _finished(live(mlp.train_step, params, batches, steps=4))
    assert seen == [0, 1, 2, 3] and len(run.losses) == 4


def test_non_finite_losses_sync_as_null():
    def step(x, batch):
        return x + 1.0, jnp.where(x >= 2.0, jnp.nan, x * batch)

    run = _finished(live(step, jnp.float32(0.0), jnp.float32(1.0), steps=3))
    assert run.view.losses == [0.0, 1.0, None]
    assert math.isnan(run.losses[2])
    html = run.view.static_html()
    assert html.count('class="sv-l-pt"') == 2 and html.count('class="sv-l-pt sv-l-bad"') == 1


# -- the notebook stays responsive -----------------------------------------------------------


def test_live_returns_before_the_run_finishes(dp_state):
    params, batch = dp_state
    gate = threading.Event()

    def gated(params, batch):
        assert gate.wait(WAIT)  # runs while tracing, in the run's thread
        return mlp.train_step(params, batch)

    run = live(gated, params, batch, steps=2)
    try:
        assert run.running
        assert run.status == "compiling"
        assert run.losses == [] and run.view.losses == []
    finally:
        gate.set()
    _finished(run)
    assert run.status == "done" and len(run.losses) == 2


def test_stop_ends_the_run_after_the_current_step(dp_state):
    params, batch = dp_state
    reached, proceed = threading.Event(), threading.Event()

    def batches(i: int):
        if i == 2:
            reached.set()
            assert proceed.wait(WAIT)
        return batch

    run = live(mlp.train_step, params, batches, steps=1000)
    try:
        assert reached.wait(WAIT)
        assert run.stop() is run
        assert run.status == "stopping"
    finally:
        proceed.set()
    _finished(run)
    assert run.status == "stopped"
    want, (want_params,) = _reference(mlp.train_step, (params,), batch, 3)
    assert run.losses == want and run.view.losses == want
    np.testing.assert_array_equal(np.asarray(run.state["w2"]), np.asarray(want_params["w2"]))


def test_the_views_stop_button_stops_the_run(dp_state):
    params, batch = dp_state
    gate = threading.Event()

    def gated(params, batch):
        assert gate.wait(WAIT)
        return mlp.train_step(params, batch)

    run = live(gated, params, batch, steps=1000)
    try:
        run.view.stop_requested = True  # what the front end's button sends
        assert run.status == "stopping"
    finally:
        gate.set()
    _finished(run)
    assert run.status == "stopped" and len(run.losses) == 1


def test_updates_go_out_in_batches(dp_state, monkeypatch):
    params, batch = dp_state

    def sends(**kwargs) -> list[int]:
        """The length of ``losses`` in every update the view gets during a run."""
        sent: list[int] = []
        gate = threading.Event()

        def batches(i: int):
            assert gate.wait(WAIT)  # hold step 1 until we listen
            return batch

        run = live(mlp.train_step, params, batches, steps=7, **kwargs)
        run.view.observe(lambda c: sent.append(len(c["new"])), names="losses")
        gate.set()
        _finished(run)
        return sent

    monkeypatch.setattr(live_run_mod, "SYNC_SECONDS", 0.0)
    assert sends(every=3) == [3, 6, 7]
    monkeypatch.setattr(live_run_mod, "SYNC_SECONDS", 1e9)  # fast steps: only the first and last
    assert sends() == [1, 7]


def test_jax_mesh_context_is_carried_into_the_thread(mesh, dp_state):
    params, batch = dp_state

    def constrained(params, batch):
        x = jax.lax.with_sharding_constraint(batch["x"], P("data", None))  # needs a mesh
        return mlp.train_step(params, {**batch, "x": x})

    with jax.set_mesh(mesh.jax_mesh):
        run = live(constrained, params, batch, steps=2)
    _finished(run)
    assert run.status == "done", run.error


# -- errors stay in the view -----------------------------------------------------------------


def test_a_shape_error_shows_in_the_view_and_the_thread_ends(dp_state):
    params, _ = dp_state
    run = _finished(live(mlp.train_step, params, _bad_batch(), steps=5))
    assert run.status == "error"
    assert run.view.get_state()["status"] == "error"
    assert run.error.startswith("step 1 failed: TypeError: ")
    assert "dot_general" in run.error
    assert isinstance(run.exception, TypeError)
    assert run.losses == [] and run.view.step == 0
    assert run.state is params  # the state before the failing step


def test_an_error_at_a_later_step_keeps_the_earlier_points(dp_state):
    params, batch = dp_state
    bad = _bad_batch()
    run = _finished(live(mlp.train_step, params, lambda i: bad if i == 2 else batch, steps=5))
    assert run.status == "error"
    assert run.error.startswith("step 3 failed: ")
    assert len(run.view.losses) == 2 and len(run.view.step_ms) == 2


def test_a_step_not_following_the_convention_says_what_to_return(dp_state):
    params, batch = dp_state

    def params_only(params, batch):
        return mlp.train_step(params, batch)[0]

    run = _finished(live(params_only, params, batch, steps=2))
    assert run.status == "error"
    assert "not (new_state..., loss)" in run.error and "Fix:" in run.error

    def vector_loss(params, batch):
        new, _ = mlp.train_step(params, batch)
        return new, batch["x"][:, 0]

    run = _finished(live(vector_loss, params, batch, steps=2))
    assert run.status == "error" and "scalar loss" in run.error


def test_wrong_arguments_raise_at_once(dp_state):
    params, batch = dp_state
    with pytest.raises(ValueError, match="steps is missing"):
        live(mlp.train_step, params, batch)
    with pytest.raises(ValueError, match="every=0"):
        live(mlp.train_step, params, batch, steps=2, every=0)
    with pytest.raises(ValueError, match="steps=-1"):
        live(mlp.train_step, params, batch, steps=-1)
    with pytest.raises(TypeError, match="not a function"):
        live("step", params, batch, steps=2)


def test_device_memory_stats_are_used_when_the_backend_has_them(dp_state, monkeypatch):
    params, batch = dp_state
    calls = []

    def fake_stats(devices):
        calls.append(len(devices))
        return [
            {"bytes_in_use": 1000 + d.id, "peak_bytes_in_use": 2000, "bytes_limit": 4096}
            for d in devices
        ]

    monkeypatch.setattr(live_stepper_mod, "devices_memory_stats", fake_stats)
    run = _finished(live(mlp.train_step, params, batch, steps=3))
    assert run.view.memory_source == "device"
    assert [(e["device"], e["bytes"], e["peak"], e["limit"]) for e in run.view.memory] == [
        (i, 1000 + i, 2000, 4096) for i in range(8)
    ]
    assert len(calls) >= 2, "device statistics are read again when the view is updated"
    assert "memory_stats" in run.view.memory_note


# -- the static picture ----------------------------------------------------------------------


def _bundle_data(bundle):
    return bundle[0] if isinstance(bundle, tuple) else bundle


def test_static_html_has_one_point_per_loss(dp_state):
    params, batch = dp_state
    run = _finished(live(mlp.train_step, params, batch, steps=5, title="dp mlp"))
    html = run.view.static_html()
    assert "<svg" in html
    loss_svg = re.search(r'<svg class="sv-l-chart sv-l-loss".*?</svg>', html).group(0)
    assert loss_svg.count("<circle") == 5
    assert html.count('class="sv-l-bar"') == 1  # 8 identical devices: one bar, "all 8"
    assert ">all 8<" in html
    assert "step 5 / 5" in html and "dp mlp" in html

    data = _bundle_data(run._repr_mimebundle_())
    assert data[WIDGET_MIME]["model_id"] == run.view.model_id
    assert data["text/html"] == run.view.static_html()


def test_save_html_is_one_offline_file(dp_state, tmp_path: Path):
    params, batch = dp_state
    run = _finished(live(mlp.train_step, params, batch, steps=3))
    path = run.save_html(tmp_path / "run.html")
    text = Path(path).read_text(encoding="utf-8")
    assert text.startswith("<!doctype html>")
    assert text.count('class="sv-l-pt"') == 3
    assert "<script" not in text and not re.search(r"(src|href)=\"https?:", text)


def test_user_strings_are_escaped_in_the_static_view():
    view = LiveWidget(title=HOSTILE, total_steps=3)
    view.losses = [1.0, 0.5]
    view.step_ms = [100.0, 2.0]
    view.error = "step 3 failed: " + HOSTILE
    html = view.static_html()
    assert "<img" not in html
    assert html.count("&lt;img src=x onerror=alert(1)&gt;") == 2
    assert 'role="alert"' in html


def test_front_end_files_ship_inside_the_package_and_load_nothing():
    package = Path(shardviz.__file__).resolve().parent
    assert STATIC.resolve() == package / "widgets" / "static"
    state = LiveWidget().get_state()
    js = widget_module("live.js")
    css = (STATIC / "live.css").read_text(encoding="utf-8")
    assert state["_esm"] == js and state["_css"] == css
    assert "export default" in js
    assert not re.search(r"^\s*import\s", js, re.M), "the module must not import anything"
    assert ".innerHTML" not in js and "insertAdjacentHTML" not in js
    # The SVG namespace is an identifier, not a request.
    assert re.findall(r"https?://[^\"']+", js) == ["http://www.w3.org/2000/svg"]
    assert not re.search(r"https?://", css) and "@import" not in css
