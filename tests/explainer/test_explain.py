"""explain() on live compiles (8 fake CPU devices): known answers for each strategy."""

import inspect
import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz as sv
from shardviz.model import Report
from shardviz.strategies import mlp

D, H, B = 64, 256, 32
F32 = 4
PARAM_BYTES = (D * H + H + H * D + D) * F32  # 132,352


def _place(mesh, specs: dict, batch_spec):
    params = mlp.init_params(jax.random.key(0), D, H)
    batch = mlp.make_batch(jax.random.key(1), B, D)
    params = {k: sv.mark_sharding(v, mesh, specs[k], name=k) for k, v in params.items()}
    batch = {k: sv.mark_sharding(v, mesh, batch_spec, name=k) for k, v in batch.items()}
    return params, batch


@pytest.fixture(scope="module")
def mesh2d():
    return sv.Mesh(range(8), (2, 4), ("data", "model"))


@pytest.fixture(scope="module")
def dp_report(mesh2d):
    specs = dict.fromkeys(("w1", "b1", "w2", "b2"), ())
    return sv.explain(mlp.train_step, *_place(mesh2d, specs, ("data", None)), steps=3)


@pytest.fixture(scope="module")
def fsdp_report():
    mesh = sv.Mesh(range(8), (8,), ("data",))
    specs = {"w1": ("data", None), "b1": ("data",), "w2": ("data", None), "b2": ("data",)}
    return sv.explain(mlp.train_step, *_place(mesh, specs, ("data", None)), steps=2)


MEGATRON = {"w1": (None, "model"), "b1": ("model",), "w2": ("model", None), "b2": ()}


def _line_of(fn, marker: str) -> int:
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, t in enumerate(lines) if marker in t)


def test_data_parallel_gradient_all_reduce_over_data(dp_report):
    r = dp_report
    assert r.mesh.axis_names == ("data", "model")
    ars = r.collectives_of("all-reduce", ("data",))
    assert ars, str(r)
    grads = [c for c in ars if c.in_shape != ()]  # the scalar one is the loss mean
    assert sum(c.in_bytes for c in grads) == PARAM_BYTES
    assert all(c.group_size == 2 and c.origin == "partitioner" for c in ars)
    assert {c.groups for c in ars} == {((0, 4), (1, 5), (2, 6), (3, 7))}
    assert not r.collectives_of(axes=("model",))  # nothing is split over 'model'
    for c in grads:  # ring all-reduce moves 2 (n-1)/n of the buffer
        assert c.moved_bytes == 2 * c.in_bytes * (2 - 1) // 2


def test_data_parallel_memory_is_hand_computed(dp_report):
    m = dp_report.memory
    batch_bytes = 2 * (B // 2) * D * F32  # x and y split over 'data' (2)
    assert m.argument_bytes == PARAM_BYTES + batch_bytes
    assert m.peak_bytes == m.argument_bytes + m.output_bytes - m.alias_bytes + m.temp_bytes
    by = {lb.path: lb.bytes for lb in m.by_leaf}
    assert by["params/w1"] == D * H * F32 and by["batch/x"] == (B // 2) * D * F32
    assert {lb.role for lb in m.by_leaf} == {"params", "batch"}
    assert sum(by.values()) == m.argument_bytes


def test_run_timing_and_check(dp_report):
    r = dp_report
    assert r.ran and r.timing is not None and r.timing.steps == 3
    assert r.timing.compile_seconds > 0 and r.timing.step_seconds > 0
    assert r.check is not None and r.check.matches, r.check
    assert r.check.max_abs_diff < 1e-4
    assert r.cost is not None and r.cost.flops_per_device and r.cost.flops_global
    assert r.cost.flops_global > r.cost.flops_per_device
    # The global figure is the unpartitioned program's: the same flops jax's own estimate gives.
    lowered = jax.jit(mlp.train_step).lower(*_place(sv.Mesh(range(8), (2, 4), ("data", "model")),
                                                    dict.fromkeys(("w1", "b1", "w2", "b2"), ()),
                                                    ("data", None)))  # fmt: skip
    assert r.cost.flops_global == lowered.cost_analysis()["flops"]


def test_global_cost_comes_from_the_dumped_module(mesh2d):
    """The global figure is read from the propagation dump's text, not by asking jax to
    convert the lowered module again (the slow fallback is made to fail here)."""
    from shardviz.capture.compile import global_cost, lower_and_compile

    args = _place(mesh2d, dict.fromkeys(("w1", "b1", "w2", "b2"), ()), ("data", None))
    comp = lower_and_compile(jax.jit(mlp.train_step), args, {}, "train_step")
    expected = comp.lowered.cost_analysis()["flops"]

    class NoFallback:
        def cost_analysis(self):
            raise AssertionError("global_cost took the slow path")

    comp.lowered = NoFallback()
    assert global_cost(comp)["flops"] == expected


def test_fsdp_gathers_params_and_reduces_grads_over_data(fsdp_report):
    r = fsdp_report
    gathers = r.collectives_of("all-gather", ("data",))
    assert gathers, str(r)
    assert {c.out_shape for c in gathers} >= {(D, H), (H, D)}
    reductions = r.collectives_of("reduce-scatter", ("data",)) + tuple(
        c for c in r.collectives_of("all-reduce", ("data",)) if c.in_shape != ()
    )
    assert reductions
    m = r.memory
    per_dev = (D * H + H + H * D + D) * F32 // 8 + 2 * (B // 8) * D * F32
    assert m.argument_bytes == per_dev  # 18,592
    assert r.check is not None and r.check.matches


def test_megatron_forward_has_one_all_reduce_over_model(mesh2d):
    params, batch = _place(mesh2d, MEGATRON, ("data", None))
    r = sv.explain(mlp.forward, params, batch["x"], run=False)
    assert [c.kind for c in r.collectives] == ["all-reduce"], str(r)
    (c,) = r.collectives
    assert c.axes == ("model",) and c.groups == ((0, 1, 2, 3), (4, 5, 6, 7))
    assert c.in_shape == (B // 2, D) and c.in_bytes == (B // 2) * D * F32  # the activation
    line = _line_of(mlp.forward, "second matmul")
    assert c.source is not None and c.source.innermost.line == line
    assert c.source.location.endswith(f"mlp.py:{line}")
    assert c.source.innermost.function == "forward"
    assert (
        r.memory.argument_bytes == (D * H // 4 + H // 4 + H * D // 4 + D) * F32 + (B // 2) * D * F32
    )


def test_shard_map_collectives_are_user_written(mesh2d):
    jm = mesh2d.jax_mesh

    def body(a):
        s = jax.lax.psum(a, "model")
        p = jax.lax.ppermute(a, "data", perm=[(0, 1), (1, 0)])
        t = jax.lax.all_to_all(a, "model", 0, 0, tiled=True)
        return s, p, t

    f = jax.shard_map(
        body, mesh=jm, in_specs=P("data", "model"), out_specs=(P("data", "model"),) * 3
    )
    x = jax.device_put(jnp.arange(64.0).reshape(8, 8), NamedSharding(jm, P("data", "model")))
    r = sv.explain(f, x, steps=1)
    kinds = {c.kind: c for c in r.collectives}
    assert set(kinds) == {"all-reduce", "collective-permute", "all-to-all"}, str(r)
    assert all(c.user_written for c in r.collectives)
    assert kinds["all-reduce"].axes == ("model",)
    assert kinds["all-reduce"].groups == ((0, 1, 2, 3), (4, 5, 6, 7))
    assert kinds["all-to-all"].axes == ("model",)
    assert set(kinds["collective-permute"].pairs) == {(i, i + 4) for i in range(4)} | {
        (i + 4, i) for i in range(4)
    }
    assert kinds["collective-permute"].axes == ("data",)
    assert r.ran and r.timing is not None


def test_hypothetical_arguments_are_compile_only(mesh2d):
    jm = mesh2d.jax_mesh
    sds = {k: jax.ShapeDtypeStruct(v.shape, v.dtype, sharding=NamedSharding(jm, P(*spec)))
           for (k, v), spec in zip(mlp.init_params(jax.random.key(0), D, H).items(),
                                   MEGATRON.values(), strict=True)}  # fmt: skip
    x = jax.ShapeDtypeStruct((B, D), jnp.float32, sharding=NamedSharding(jm, P("data")))
    r = sv.explain(mlp.forward, sds, x)
    assert not r.ran and r.timing is None and r.check is None
    assert any("nothing to run" in n for n in r.notes)
    assert len(r.collectives_of("all-reduce", ("model",))) == 1


def test_repeat_is_served_from_cache(mesh2d):
    params, batch = _place(mesh2d, MEGATRON, ("data", None))
    a = sv.explain(mlp.forward, params, batch["x"], run=False)
    b = sv.explain(mlp.forward, params, batch["x"], run=False)
    assert a is b
    c = sv.explain(mlp.forward, params, batch["x"][:16], run=False)  # another shape: recompiled
    assert c is not a


def test_report_json_round_trip_and_views(dp_report):
    assert Report.from_json(dp_report.to_json()) == dp_report
    assert "all-reduce" in str(dp_report)
    assert "sv-collective" in dp_report._repr_html_()


def test_intermediates_have_specs_and_reshards(mesh2d):
    params, batch = _place(mesh2d, MEGATRON, ("data", None))
    r = sv.explain(mlp.forward, params, batch["x"], run=False)
    assert r.intermediates
    specs = {s.spec for s in r.intermediates if s.spec is not None}
    assert (("data",), ("model",)) in specs  # the hidden activation: batch x hidden split
    assert r.reshards


def test_intermediates_under_gspmd_too(mesh2d):
    """The dump is asked for by the partitioner's pass, so the completed shardings come out
    whichever pass completed them: Shardy (the default) or GSPMD's sharding propagation."""
    from jax._src import config

    params, batch = _place(mesh2d, MEGATRON, ("data", None))
    shardy = sv.explain(mlp.forward, params, batch["x"], run=False)
    with config.use_shardy_partitioner(False):
        r = sv.explain(mlp.forward, params, batch["x"], run=False)
    assert r is not shardy  # explain's cache tells the partitioners apart
    specs = {s.spec for s in r.intermediates if s.spec is not None}
    assert (("data",), ("model",)) in specs
    assert r.cost is not None and r.cost.flops_global


def test_trace_failure_is_a_compile_error(mesh2d):
    def broken(x):
        return x @ jnp.ones((3, 3))  # shapes do not match

    x = sv.mark_sharding(jnp.ones((8, 4)), mesh2d, ("data", None))
    with pytest.raises(sv.CompileError) as err:
        sv.explain(broken, x)
    assert "'test_trace_failure_is_a_compile_error.<locals>.broken'" in str(err.value)
    assert "Fix:" in str(err.value)


def test_arguments_on_different_devices_is_a_compile_error():
    a_mesh = sv.Mesh(range(4), (4,), ("a",))
    b_mesh = sv.Mesh(range(4, 8), (4,), ("a",))
    a = sv.mark_sharding(jnp.ones(8), a_mesh, ("a",))
    b = sv.mark_sharding(jnp.ones(8), b_mesh, ("a",))
    with pytest.raises(sv.CompileError, match="failed to trace|rejected"):
        sv.explain(lambda x, y: x + y, a, b)


def test_dump_folders_are_removed(mesh2d, monkeypatch):
    """Every dump folder this process makes is gone after its explain, a failed one too (the
    folders are told apart from other processes' by recording this one's: a test worker or a
    plan beside it makes its own in the same place)."""
    from shardviz.capture import compile as capture_compile

    made: list[str] = []
    real = capture_compile.tempfile.mkdtemp

    def recorded(*a, **k):
        path = real(*a, **k)
        if os.path.basename(path).startswith("shardviz-dump-"):
            made.append(path)
        return path

    monkeypatch.setattr(capture_compile.tempfile, "mkdtemp", recorded)
    params, batch = _place(mesh2d, MEGATRON, ("data", None))
    sv.explain(lambda p, x: mlp.forward(p, x) * 2, params, batch["x"], run=False)
    with pytest.raises(sv.CompileError):
        sv.explain(lambda x: x @ jnp.ones((3, 3)), batch["x"])
    assert made  # the program explained (the failing one stops at its trace or compile)
    assert not [p for p in made if os.path.exists(p)]


def test_profile_times_ledger_entries(mesh2d):
    params, batch = _place(mesh2d, MEGATRON, ("data", None))
    r = sv.explain(mlp.forward, params, batch["x"], steps=1, profile=True)
    assert r.profile, r.notes
    names = {o.name for o in r.profile}
    assert {c.name.split("#")[0] for c in r.collectives} <= names
    assert all(o.illustrative for o in r.profile)
    assert any("illustrative" in n for n in r.notes)


def test_more_than_256_participants_is_compile_only():
    code = textwrap.dedent(
        """
        import shardviz as sv
        sv.use_cpu_devices(512)
        import jax.numpy as jnp
        mesh = sv.Mesh(range(512), (512,), ("data",))
        x = sv.mark_sharding(jnp.ones(1024), mesh, ("data",))
        r = sv.explain(lambda a: a.sum(), x, run=True)
        print("RAN" if r.ran else "COMPILE-ONLY", r.collectives[0].group_size)
        print(r.notes[0])
        """
    )
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=600, env=env)  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    first, note = out.stdout.strip().splitlines()[:2]
    assert first == "COMPILE-ONLY 512"
    assert "aborts the whole process" in note


def test_out_of_memory_while_running_is_explained():
    from shardviz.capture.run import run_steps

    def boom(*a):
        raise RuntimeError("RESOURCE_EXHAUSTED: Out of memory allocating 17179869184 bytes.")

    with pytest.raises(sv.CompileError) as err:
        run_steps(boom, (), {}, 2, "train_step")
    msg = str(err.value)
    assert "'train_step'" in msg and "ran out of memory" in msg and "Fix:" in msg


def test_save_html_is_one_offline_file(dp_report, tmp_path):
    path = dp_report.save_html(str(tmp_path / "r.html"))
    text = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert path == str(tmp_path / "r.html")
    assert text.lower().startswith("<!doctype html>") and "sv-collective" in text
    assert "http://" not in text and "https://" not in text and "<script src" not in text


# --------------------------------------------------------------------------------------------
# Call chains: the kernel's and shardviz's frames trimmed, the model's line read (issue 12)

CELL = "/tmp/ipykernel_4242/2417310581.py"  # how ipykernel names a notebook cell's code
CELL_CODE = textwrap.dedent(
    """\
    def step(w, x):
        y = x @ w
        return jnp.sum(y)

    report = sv.explain(step, w, x, run=False)
    """
)


def _chain_files(source) -> list[str]:
    return [f.file for f in source.frames]


def test_trim_drops_kernel_shardviz_and_module_frames():
    from shardviz.explainer import explain as ex
    from shardviz.model import Frame, Source

    site = "/opt/venv/lib/python3.11/site-packages"
    runner = os.path.join(os.path.dirname(os.path.dirname(ex.__file__)), "strategies", "runner.py")
    chain = Source(
        (
            Frame(site + "/ipykernel_launcher.py", 18, "<module>"),
            Frame("/usr/lib/python3.11/runpy.py", 88, "_run_code"),
            Frame(CELL, 12, "<module>"),
            Frame(runner, 320, "compare"),
            Frame(runner, 359, "_run_here.<locals>.<listcomp>"),
            Frame(ex.__file__, 300, "analyse_program"),
            Frame("/home/ada/model.py", 7, "train_step"),
            Frame("/home/ada/model.py", 3, "forward"),
        )
    )
    out = ex._trim(chain)
    assert out.chain == "train_step > forward"
    assert out.location == "/home/ada/model.py:3"
    only_callers = Source((Frame(CELL, 5, "<module>"), Frame(ex.__file__, 300, "explain")))
    assert ex._trim(only_callers) is None  # no line of the traced program: no source
    assert ex._trim(None) is None


def test_a_notebook_function_points_at_its_own_line(mesh2d):
    """A function defined in a cell (a ``<module>`` frame of an ipykernel file, its code in
    linecache as IPython keeps it): the chain is the function alone, with the line's code."""
    import linecache

    linecache.cache[CELL] = (len(CELL_CODE), None, CELL_CODE.splitlines(True), CELL)
    try:
        mesh = mesh2d.jax_mesh if hasattr(mesh2d, "jax_mesh") else mesh2d
        w = jax.device_put(jnp.ones((16, 16)), NamedSharding(mesh, P(None, "model")))
        x = jax.device_put(jnp.ones((64, 16)), NamedSharding(mesh, P("data", None)))
        ns = {"sv": sv, "jnp": jnp, "w": w, "x": x}
        exec(compile(CELL_CODE, CELL, "exec"), ns)
    finally:
        linecache.cache.pop(CELL, None)
    report = ns["report"]
    sources = [c.source for c in report.collectives] + [s.source for s in report.intermediates]
    assert report.collectives
    for s in sources:
        if s is None:
            continue
        assert s.frames[0].function == "step", s.chain
        assert all(f.function != "<module>" for f in s.frames)
        assert not any("ipykernel" in f or "/shardviz/" in f for f in _chain_files(s)[1:])
    lines = {s.text for s in sources if s is not None}
    assert "y = x @ w" in lines or "return jnp.sum(y)" in lines
    back = Report.from_json(report.to_json())
    assert [c.source for c in back.collectives] == [c.source for c in report.collectives]


def test_compare_chains_start_at_the_models_step():
    cmp = sv.compare("mlp", ["dp"], steps=1)
    report = cmp.results[0].report
    runner = os.path.join("shardviz", "strategies", "runner.py")
    sources = [c.source for c in report.collectives] + [s.source for s in report.intermediates]
    assert any(s is not None for s in sources)
    for s in sources:
        if s is None:
            continue
        assert not any(f.endswith(runner) or "/capture/" in f for f in _chain_files(s)), s.chain
        assert s.frames[0].function.endswith("train_step"), s.chain
        assert "<module>" not in s.chain and "_compile_strategy" not in s.chain
    in_model = [c.source for c in report.collectives if c.source.innermost.file == mlp.__file__]
    assert in_model  # the gradient all-reduces point at the model's lines, with their code
    for src in in_model:
        assert src.text and src.text == mlp_line(src.innermost.line)


def mlp_line(n: int) -> str:
    import linecache

    return linecache.getline(mlp.__file__, n).strip()
