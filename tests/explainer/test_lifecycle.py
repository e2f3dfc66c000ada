"""Background work ends cleanly: every thread shardviz starts is owned, stopped and joined
before the interpreter exits, so a script or a kernel never dies inside XLA.

Each test runs a fresh interpreter (or a Jupyter kernel), as a user's script does.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: A program with a replicated weight: explaining it finds something with a fix to try, so the
#: Explorer compiles that fix in a background thread.
PROGRAM = """
import jax, jax.numpy as jnp
import shardviz as sv
sv.use_cpu_devices(8)
from jax.sharding import AxisType, NamedSharding, PartitionSpec as P

mesh = jax.make_mesh((2, 4), ("data", "model"), axis_types=(AxisType.Auto,) * 2)
put = lambda x, *spec: jax.device_put(x, NamedSharding(mesh, P(*spec)))
params = {
    "w1": put(jnp.ones((256, 256)), "data", "model"),
    "w2": put(jnp.ones((256, 256)), "model", None),
    "w3": put(jnp.ones((256, 256)), None, None),
}
x = put(jnp.ones((64, 256)), "data", None)

def forward(params, x):
    h = jnp.tanh(x @ params["w1"])
    h = jnp.tanh(h @ params["w2"])
    return h @ params["w3"]
"""


def _run(script: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "JAX_PLATFORMS": "cpu"},
    )


def test_explorer_rename_then_explain_exits_cleanly_twenty_times_in_a_row():
    script = (
        PROGRAM
        + """
e = sv.Explorer(forward, params, x)
e.controls.axis_names.value = "dp, tp"   # a recompile in the Explorer's own thread
report = sv.explain(forward, params, x)
print("findings", len(report.findings))
"""
    )
    for attempt in range(20):
        done = _run(script)
        assert done.returncode == 0, (attempt, done.returncode, done.stderr[-3000:])
        assert "findings" in done.stdout


def test_sigint_during_a_long_explain_leaves_the_process_able_to_explain_again():
    script = (
        PROGRAM
        + """
import os, signal, sys, threading, time, traceback

def chain(w, h):  # long to compile and analyse: 200 layers, unrolled
    for _ in range(200):
        h = jnp.tanh(h @ w)
    return h.sum()

# The modules explain imports are imported first: a SIGINT inside a first import can leave
# Python's import state half done (an ImportError later), which is not what this tests.
sv.explain(forward, params, x)
interrupted = inside = 0
for delay in (0.3, 1.0, 2.0):
    timer = threading.Timer(delay, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    try:
        sv.explain(chain, params["w1"], x)
        time.sleep(5)  # the explain was quicker than the delay: the signal lands here
    except KeyboardInterrupt:
        interrupted += 1
        inside += traceback.extract_tb(sys.exc_info()[2])[-1].name != "<module>"
    finally:
        timer.join()
again = sv.explain(chain, params["w1"], x)
small = sv.explain(forward, params, x).try_fixes()
print("interrupted", interrupted, inside, len(again.collectives) > 0, len(small.findings))
"""
    )
    done = _run(script)
    assert done.returncode == 0, done.stderr[-3000:]
    words = done.stdout.split()
    # Every SIGINT became a KeyboardInterrupt, at least one inside explain (compiling or
    # reading the program), and the same program and another explained afterwards.
    assert words[:2] == ["interrupted", "3"] and int(words[2]) >= 1, done.stdout
    assert words[3] == "True" and int(words[4]) >= 1, done.stdout


def _children(pid: int) -> set[int]:
    """The processes whose parent is ``pid`` (read from /proc)."""
    out = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.add(int(entry.name))
    return out


def _alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads processes from /proc")
def test_kernel_shutdown_while_the_explorer_recompiles_leaves_no_process_behind():
    jupyter_client = pytest.importorskip("jupyter_client")
    km = jupyter_client.KernelManager(kernel_name="python3")
    km.start_kernel(cwd=str(ROOT), env={**os.environ, "JAX_PLATFORMS": "cpu"})
    try:
        kc = km.client()
        kc.start_channels()
        kc.wait_for_ready(timeout=120)
        code = (
            PROGRAM
            + """
e = sv.Explorer(forward, params, x)
e.controls.axis_names.value = "dp, tp"   # recompiling in the background now
import os
print("pid", os.getpid())
"""
        )
        reply = kc.execute_interactive(code, timeout=300, output_hook=_keep_stdout)
        assert reply["content"]["status"] == "ok", reply["content"]
        pid = int(_STDOUT[-1].split()[1])
        children = _children(pid)
        process = km.provisioner.process  # the kernel's Popen
        kc.stop_channels()
        km.shutdown_kernel(now=False)
        assert not _alive(pid)
        # It exited by itself (no SIGKILL from jupyter_client, no abort inside XLA).
        assert process.returncode == 0, process.returncode
        left = [c for c in children if _alive(c)]
        assert left == [], left
    finally:
        if km.is_alive():
            km.shutdown_kernel(now=True)


_STDOUT: list[str] = []


def _keep_stdout(msg: dict) -> None:
    if msg["msg_type"] == "stream" and msg["content"].get("name") == "stdout":
        _STDOUT.extend(line for line in msg["content"]["text"].splitlines() if line.strip())
