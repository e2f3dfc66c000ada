"""Training steps as users write them: donation, static arguments, ``with jax.set_mesh``,
lazily loaded subpackages."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz as sv
from shardviz.capture.run import first_line
from shardviz.explainer.explain import explain_run
from shardviz.render.report.html import report_html
from shardviz.render.report.text import report_text
from shardviz.widgets.session import ExplorerSession

D = 16  # w is D x D float32: 1024 bytes, replicated, so 1024 bytes on every device
W_BYTES = D * D * 4


@pytest.fixture(scope="module")
def mesh():
    return jax.make_mesh((8,), ("data",), axis_types=(AxisType.Auto,))


def _state(mesh):
    w = jax.device_put(
        jnp.arange(D * D, dtype=jnp.float32).reshape(D, D) / 256, NamedSharding(mesh, P())
    )
    x = jax.device_put(jnp.ones((32, D)), NamedSharding(mesh, P("data")))
    return w, x


def step(w, x):
    """A training step's shape: new state, then the loss."""
    grad = x.T @ (x @ w) / x.shape[0]
    return w - 0.01 * grad, jnp.mean((x @ w) ** 2)


def step_n(w, x, n, *, scale=1.0):
    """``n`` (static) inner steps."""
    for _ in range(n):
        w = w - 0.01 * scale * x.T @ (x @ w) / x.shape[0]
    return w, jnp.mean((x @ w) ** 2)


def _alive(*trees) -> bool:
    return not any(x.is_deleted() for x in jax.tree.leaves(trees) if isinstance(x, jax.Array))


# --- donation --------------------------------------------------------------------------------


def test_raw_jax_crashes_on_a_buffer_donated_twice_and_explain_does_not():
    """What the fix guards against, measured in subprocesses: jax 0.10.2 on CPU dies with
    SIGSEGV when a donating program gets a donated buffer again; explain survives."""
    prelude = """
        import jax, jax.numpy as jnp
        jax.config.update("jax_num_cpu_devices", 8)
        from jax.sharding import NamedSharding, PartitionSpec as P
        mesh = jax.make_mesh((8,), ("data",))
        w = jax.device_put(jnp.ones((16, 16)), NamedSharding(mesh, P()))
        def step(w):
            return w * 2, jnp.sum(w)
    """
    raw = (
        prelude
        + """
        f = jax.jit(step, donate_argnums=0)
        c = f.lower(w).compile()
        c(w); c(w)
        print("survived")
    """
    )
    ours = (
        prelude
        + """
        import shardviz as sv
        r = sv.explain(step, w, donate_argnums=0, steps=3, profile=True)
        print("survived", r.memory.alias_bytes, w.is_deleted(), r.check.matches)
    """
    )
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}

    def run(code: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                              capture_output=True, text=True, timeout=240)  # fmt: skip

    crashed = run(raw)
    assert crashed.returncode != 0 and "survived" not in crashed.stdout
    fine = run(ours)
    assert fine.returncode == 0, fine.stderr[-2000:]
    assert f"survived {W_BYTES} False True" in fine.stdout


def test_donate_argnums_is_run_on_copies_and_shows_aliased_bytes(mesh):
    w, x = _state(mesh)
    plain = sv.explain(step, w, x, steps=2)
    donating = sv.explain(step, w, x, donate_argnums=0, steps=3, profile=True)
    assert plain.memory.alias_bytes == 0
    assert donating.memory.alias_bytes == W_BYTES  # w's buffer is reused for the new w
    assert donating.ran and donating.timing.steps == 3 and donating.profile
    assert donating.check is not None and donating.check.matches
    assert _alive(w, x)
    alias_line = next(
        ln for ln in report_text(donating).splitlines() if ln.strip().startswith("alias")
    )
    assert f"{W_BYTES:,} B" in alias_line and "donated" in alias_line
    html = report_html(donating)
    assert f'data-part="alias" data-bytes="{W_BYTES}"' in html
    assert "the part not aliased" in html


def test_a_step_jitted_with_donation_by_the_user_keeps_its_donation(mesh):
    w, x = _state(mesh)
    jitted = jax.jit(step, donate_argnums=0)
    report, outputs, ref = explain_run(jitted, w, x, steps=2)
    assert report.memory.alias_bytes == W_BYTES
    assert report.check.matches
    assert _alive(w, x)
    np.testing.assert_allclose(np.asarray(outputs[0]), np.asarray(step(w, x)[0]), atol=1e-6)
    again = jitted(w, x)  # the user's own arrays still work with the user's own step
    assert not again[0].is_deleted() and w.is_deleted()


def test_donate_argnames(mesh):
    w, x = _state(mesh)
    report = sv.explain(step, w, x, donate_argnames=("w",), steps=1)
    assert report.memory.alias_bytes == W_BYTES and report.check.matches
    assert _alive(w, x)


def test_donated_batch_is_copied_too(mesh):
    w, x = _state(mesh)
    report = sv.explain(jax.jit(step, donate_argnums=(0, 1)), w, x, steps=2)
    assert report.ran and report.check.matches
    assert _alive(w, x)


# --- static arguments ------------------------------------------------------------------------


def test_static_argnums_compile_in_and_change_the_program(mesh):
    w, x = _state(mesh)
    r3, out3, _ = explain_run(step_n, w, x, 3, static_argnums=(2,), steps=1)
    r1, out1, _ = explain_run(step_n, w, x, 1, static_argnums=(2,), steps=1)
    assert r3.check.matches and r1.check.matches
    assert [leaf.name for leaf in r3.arguments] == ["w", "x"]  # the int is no leaf
    assert r3.cost.flops_global > 2 * r1.cost.flops_global  # three inner steps, not one
    want = w
    for _ in range(3):
        want = want - 0.01 * x.T @ (x @ want) / x.shape[0]
    np.testing.assert_allclose(np.asarray(out3[0]), np.asarray(want), atol=1e-5)
    assert not np.allclose(np.asarray(out1[0]), np.asarray(out3[0]))


def test_static_argnames_with_keyword_arguments(mesh):
    w, x = _state(mesh)
    r, out, ref = explain_run(
        step_n, w, x, kwargs={"n": 2, "scale": 2.0}, static_argnames=("n",), steps=1
    )
    assert r.check.matches
    direct = jax.jit(step_n, static_argnames=("n",))(w, x, n=2, scale=2.0)
    np.testing.assert_allclose(np.asarray(out[0]), np.asarray(direct[0]), atol=1e-5)
    r_other = sv.explain(step_n, w, x, kwargs={"n": 1, "scale": 2.0}, static_argnames=("n",))
    assert r_other.cost.flops_global < r.cost.flops_global


def test_static_args_of_a_jitted_function(mesh):
    w, x = _state(mesh)
    jitted = jax.jit(step_n, static_argnums=2, donate_argnums=0)
    r = sv.explain(jitted, w, x, 2, steps=2)
    assert r.check.matches and r.memory.alias_bytes == W_BYTES
    assert _alive(w, x)


# --- with jax.set_mesh ------------------------------------------------------------------------


def resharding_step(w, x):
    """Needs the context mesh: bare partition specs."""
    xs = jax.sharding.reshard(x, P())
    y = jax.sharding.reshard(x @ w, P("data"))
    return w - 0.01 * (xs.T @ xs) @ w, jnp.mean(y**2)


@pytest.fixture(scope="module")
def explicit_mesh():
    return jax.make_mesh((8,), ("data",))  # Explicit axes: jax 0.10's default


def test_jax_pins_a_plain_jit_to_the_context_mesh(explicit_mesh):
    """What the reference run must avoid: inside set_mesh, a jit on one device's arrays fails."""
    with jax.set_mesh(explicit_mesh):
        x = jax.device_put(jnp.ones((8, 4)), P("data"))
        one = jax.device_put(np.ones((8, 4)), jax.devices()[0])
        with pytest.raises(Exception, match="context mesh"):
            jax.jit(lambda a: a * 2)(one)
        assert x.sharding.spec == P("data")


def test_explain_inside_set_mesh_checks_against_one_device(explicit_mesh):
    with jax.set_mesh(explicit_mesh):
        w = jax.device_put(jnp.ones((D, D)) / D, P())
        x = jax.device_put(jnp.ones((32, D)), P("data"))
        report = sv.explain(resharding_step, w, x, steps=1)
        donating = sv.explain(resharding_step, w, x, steps=1, donate_argnums=0)
    assert report.check is not None and report.check.matches, report.notes
    assert not any("no single-device check" in n for n in report.notes)
    assert donating.check.matches and donating.memory.alias_bytes == W_BYTES
    assert _alive(w, x)


def test_explicit_axes_without_a_context_mesh(explicit_mesh):
    w = jax.device_put(jnp.ones((D, D)) / D, NamedSharding(explicit_mesh, P()))
    x = jax.device_put(jnp.ones((32, D)), NamedSharding(explicit_mesh, P("data")))
    report = sv.explain(lambda w, x: (x @ w).sum(axis=0), w, x, steps=1)
    assert report.check.matches and report.mesh.axis_names == ("data",)


def test_a_refused_reference_note_keeps_whole_words():
    err = ValueError("word " * 200)
    line = first_line(err)
    assert len(line) <= 304 and line.endswith(" ...")
    assert all(part == "word" for part in line.removesuffix(" ...").split())
    assert first_line(ValueError("short\nsecond line")) == "short"


def test_session_carries_the_context_mesh_to_its_thread(explicit_mesh):
    with jax.set_mesh(explicit_mesh):
        w = jax.device_put(jnp.ones((D, D)) / D, P())
        x = jax.device_put(jnp.ones((32, D)), P("data"))
        session = ExplorerSession(resharding_step, w, x, steps=1)
    config = session.initial_config()
    assert config.axis_names == ("data",)
    out = {}

    def run() -> None:  # another thread, no context mesh there
        try:
            out["report"] = session.run(config)
        except Exception as err:  # shown below
            out["error"] = err

    t = threading.Thread(target=run)
    t.start()
    t.join(120)
    assert "error" not in out, out.get("error")
    assert out["report"].check.matches


def test_explorer_made_under_set_mesh_reruns_and_trains_outside_it(explicit_mesh):
    with jax.set_mesh(explicit_mesh):
        w = jax.device_put(jnp.ones((D, D)) / D, P())
        x = jax.device_put(jnp.ones((32, D)), P("data"))
        explorer = sv.Explorer(resharding_step, w, x, steps=1)
    assert explorer.report.check.matches
    explorer.controls.strategy.value = "dp"  # a background run, on the controls' thread
    assert explorer.wait(120)
    assert explorer.status == "done", explorer.error
    assert explorer.report.check.matches
    run = explorer.train(steps=2).wait(120)  # no context mesh here: the session has it
    assert run.status == "done", run.error
    assert len(run.losses) == 2


# --- the Explorer and live with a donating step --------------------------------------------


def test_explorer_and_live_with_a_donating_step(mesh):
    w, x = _state(mesh)
    jitted = jax.jit(step, donate_argnums=(0, 1))  # the batch too: live reuses one batch
    explorer = sv.Explorer(jitted, w, x, steps=1)
    assert explorer.report.ran and explorer.report.memory.alias_bytes == W_BYTES
    explorer.controls.strategy.value = "dp"  # a background run
    assert explorer.wait(120)
    assert explorer.status == "done", explorer.error
    run = explorer.train(steps=3)
    run.wait(120)
    assert run.status == "done", run.error
    assert len(run.losses) == 3 and run.losses[2] < run.losses[0]
    assert _alive(w, x)
    direct = sv.live(jitted, w, x, steps=3).wait(120)
    assert direct.status == "done", direct.error
    assert _alive(w, x) and not direct.state.is_deleted()


# --- lazy subpackages ------------------------------------------------------------------------


def test_subpackages_load_on_first_attribute_access():
    code = textwrap.dedent("""
        import sys
        import shardviz as sv
        assert "shardviz.strategies" not in sys.modules
        print(sv.strategies.model_state_bytes.__name__)
        print(sv.render.__name__, sv.widgets.__name__, sv.capture.__name__, sv.model.__name__)
        try:
            sv.nothing_here
        except AttributeError as err:
            print("missing", err)
    """)
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert lines[0] == "model_state_bytes"
    assert lines[1] == "shardviz.render shardviz.widgets shardviz.capture shardviz.model"
    assert lines[2].startswith("missing") and "nothing_here" in lines[2]
