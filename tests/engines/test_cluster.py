"""sv.cluster: two ipyparallel engines joined as one jax program (2 processes x 4 CPU
devices), driven from this process; what they compute agrees with this process's own 8
devices."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

import pytest

from shardviz.engines import cluster
from shardviz.errors import ProcessError

pytest.importorskip("ipyparallel")


def _tp_step() -> object:
    """A Megatron-style MLP forward on a (2, 4) ('data', 'model') mesh: an all-reduce over
    'model', built and explained wherever it runs (one process or several)."""
    import jax
    import numpy as np
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    import shardviz as sv

    mesh = sv.Mesh(range(8), (2, 4), ("data", "model")).jax_mesh

    def put(shape, spec):
        sh = NamedSharding(mesh, P(*spec))
        full = np.arange(np.prod(shape), dtype=np.float32).reshape(shape) / 1000
        return jax.make_array_from_callback(shape, sh, lambda idx: full[idx])

    x, w1, w2 = (
        put((16, 32), ("data", None)),
        put((32, 64), (None, "model")),
        put((64, 32), ("model", None)),
    )

    def f(x, w1, w2):
        return jax.nn.relu(x @ w1) @ w2

    return sv.explain(jax.jit(f), x, w1, w2, run=False)


def _ledger(report) -> list[tuple]:
    return sorted(
        (c.kind, c.axes, c.in_bytes, c.moved_bytes, c.group_size) for c in report.collectives
    )


def test_engines_are_one_jax_program(two):
    assert [p.process_index for p in two.processes] == [0, 1]
    assert all(p.local_devices == 4 and p.global_devices == 8 for p in two.processes)
    assert "2 processes, 8 devices" in repr(two)


def test_explain_in_every_process_agrees_with_one_process_of_8_devices(two):
    reports = two.run(_tp_step)
    here = _tp_step()
    assert _ledger(reports[0]) == _ledger(reports[1]) == _ledger(here)
    assert [c.kind for c in reports[0].collectives] == ["all-reduce"]
    assert reports[0].mesh.num_processes == 2 and here.mesh.num_processes == 1
    # Shown in this kernel: the process-0 report as text and HTML.
    assert "2 processes" in str(reports[0]) and "<svg" in reports[0]._repr_html_()


def test_pull_takes_a_value_from_a_process(two):
    two.execute("import jax; answer = jax.process_index() * 10 + 1")
    assert two.pull("answer") == 1 and two.pull("answer", process=1) == 11
    with pytest.raises(ProcessError, match="no such process"):
        two.pull("answer", process=5)


def test_an_error_in_a_process_names_it(two):
    def fail_on_one():
        import jax

        if jax.process_index() == 1:
            raise ValueError("shapes differ here")
        return 0

    with pytest.raises(ProcessError, match=r"process 1: .*ValueError: shapes differ here"):
        two.run(fail_on_one)


def test_a_killed_engine_is_reported_and_the_cluster_stops():
    c = cluster(processes=2, devices_per_process=2, timeout=30)
    try:
        c.execute("import jax; print('ready on', jax.process_index())")
        os.kill(c.processes[1].pid, signal.SIGKILL)
        start = time.monotonic()
        # A global sum needs both processes: process 0 would wait for the dead one.
        code = (
            "import jax, jax.numpy as jnp, numpy as np\n"
            "from jax.sharding import NamedSharding, PartitionSpec as P\n"
            "m = jax.make_mesh((4,), ('i',))\n"
            "x = jax.make_array_from_callback((4,), NamedSharding(m, P('i')), "
            "lambda idx: np.ones(4, np.float32)[idx])\n"
            "total = float(jax.jit(lambda a: a.sum())(x))\n"
        )
        with pytest.raises(ProcessError, match=r"process 1 \(pid \d+\)\: died") as err:
            c.execute(code)
        assert "its last output: ready on 1" in str(err.value)
        assert time.monotonic() - start < 60
        # Stopped, it says so (ipyparallel alone raised a raw NoEnginesRegistered).
        for call in (lambda: c.execute("1"), lambda: c.run(len, ()), lambda: c.pull("x")):
            with pytest.raises(ProcessError, match="it was stopped"):
                call()
    finally:
        c.stop()
    for p in c.processes:
        with pytest.raises(ProcessLookupError):
            os.kill(p.pid, 0)


def _global_x():
    import jax
    import numpy as np
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    import shardviz as sv

    mesh = sv.Mesh(range(8), (2, 4), ("data", "model")).jax_mesh
    full = np.arange(8 * 16, dtype=np.float32).reshape(8, 16)
    sh = NamedSharding(mesh, P("data", "model"))
    return jax.make_array_from_callback((8, 16), sh, lambda idx: full[idx])


def _layout_facts():
    import shardviz as sv

    lay = sv.layout(_global_x(), name="x")
    return len(lay.tiles), lay.shard_shape, lay.mesh.num_processes, str(lay.spec)


def _checked_explain():
    import jax

    import shardviz as sv

    r = sv.explain(jax.jit(lambda a: (a * 2) @ a.T), _global_x(), steps=1)
    return r.check.matches if r.check else None, r.check.max_abs_diff if r.check else None


def _compare_facts():
    import shardviz as sv

    c = sv.compare("mlp", ["dp", "tp"], steps=1)
    return [
        (
            r.strategy,
            sorted((s.kind, s.axes, s.count, s.moved_bytes) for s in r.collectives),
            r.memory.peak_bytes if hasattr(r.memory, "peak_bytes") else None,
            round(r.loss, 5),
            r.loss_matches,
            r.report.check.matches,
        )
        for r in c.results
    ]


def _save_where(folder: str) -> None:
    import jax

    import shardviz as sv

    report = sv.explain(jax.jit(lambda a: a.sum()), _global_x(), run=False)
    report.save_html(f"{folder}/from{jax.process_index()}.html")


def test_layout_of_an_array_no_process_holds_whole(two):
    got = two.run(_layout_facts)
    assert got[0] == got[1]
    tiles, shard, processes, spec = got[0]
    assert (tiles, tuple(shard), processes) == (8, (4, 4), 2) and "data" in spec


def test_explain_checks_against_one_device_in_every_process(two):
    checks = two.run(_checked_explain)
    assert checks[0] == checks[1] and checks[0][0] is True


def test_compare_in_two_processes_agrees_with_one_process(two):
    there = two.run(_compare_facts)
    here = _compare_facts()
    assert there[0] == there[1]
    strip = [(s, ledger, peak, loss, ok, chk) for s, ledger, peak, loss, ok, chk in here]
    assert [row[:2] for row in there[0]] == [row[:2] for row in strip]
    assert [row[3:] for row in there[0]] == [row[3:] for row in strip]
    assert all(row[4] and row[5] for row in there[0])


def test_only_process_0_writes_a_page(two, tmp_path):
    two.run(_save_where, str(tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["from0.html"]


def _hosts_of_a_run():
    import jax

    import shardviz as sv

    r = sv.explain(jax.jit(lambda a: (a * 5).sum()), _global_x(), steps=2, check=False)
    owner = {d.id: d.process_index for d in jax.devices()}
    return [(h.process, h.devices, h.step_seconds > 0) for h in r.hosts], owner, str(r)


def test_each_host_times_its_own_step_and_every_process_has_all_of_them(two):
    (hosts0, owner, text), (hosts1, _, _) = two.run(_hosts_of_a_run)
    # Step times differ by process, so compare who and which devices; all were timed.
    assert [h[:2] for h in hosts0] == [h[:2] for h in hosts1]
    assert [h[0] for h in hosts0] == [0, 1] and all(h[2] for h in hosts0)
    for process, devices, _ in hosts0:
        assert len(devices) == 4 and all(owner[d] == process for d in devices)
    assert "per host (each process timed its own step)" in text and "process 1  4 devices" in text


#: Two processes that disagree on the program: the all-gather of `x` moves a different number
#: of bytes in each, and gloo aborts both. Run as a script (see the test).
DISAGREEING = """
import os, time
import shardviz as sv
from shardviz.errors import ProcessError

c = sv.cluster(processes=2, devices_per_process=2, timeout=30)
start = time.monotonic()
try:
    c.execute(
        "import jax, numpy as np\\n"
        "from jax.sharding import Mesh, NamedSharding, PartitionSpec as P\\n"
        "n = 8 if jax.process_index() == 0 else 16\\n"
        "mesh = Mesh(np.array(jax.devices()), ('d',))\\n"
        "x = jax.make_array_from_callback((n,), NamedSharding(mesh, P('d')), "
        "lambda i: np.ones(n, np.float32)[i])\\n"
        "jax.jit(lambda a: a * 2, out_shardings=NamedSharding(mesh, P()))(x).block_until_ready()\\n"
    )
except ProcessError as err:
    print("ERROR", err)
finally:
    c.stop()
print("SECONDS", time.monotonic() - start)
for p in c.processes:
    try:
        os.kill(p.pid, 0)
        print("LEFT", p.pid)
    except ProcessLookupError:
        pass
"""


def test_processes_that_disagree_on_shapes_are_a_clear_error_not_a_hang():
    # Out of pytest's environment: ipykernel (in the engines) forwards native output only
    # when not under pytest, and that forwarding loses what an aborting process writes last.
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    done = subprocess.run(
        [sys.executable, "-c", DISAGREEING], env=env, capture_output=True, text=True, timeout=180
    )
    out = done.stdout
    assert done.returncode == 0, done.stderr[-2000:]
    message = next(line for line in out.splitlines() if line.startswith("ERROR"))
    assert re.search(r"process \d \(pid \d+\): died", message)
    # Found in the aborted engine's own log (native output survives the process there).
    assert "Cause: the processes ran different programs" in message
    assert "collective mismatch" in message
    assert "Fix: make every process build the same shapes" in message
    seconds = float(out.split("SECONDS ")[1].split()[0])
    assert seconds < 30  # gloo noticed, not the timeout
    assert "LEFT" not in out
