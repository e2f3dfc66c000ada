"""ProcessGroup on plain Python children (no jax): output line by line with the process index,
the first failure, stopping a process that ignores SIGTERM, nothing left behind."""

from __future__ import annotations

import signal
import sys
import time

from shardviz.launch import Outcome, ProcessGroup, describe_exit, exit_status
from tests.without_jax import run_without_jax

from .helpers import gone


def py(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def test_lines_arrive_with_their_process_and_stream():
    seen: list[tuple[int, str, str]] = []
    group = ProcessGroup(
        [py("import sys; print('a'); print('b', file=sys.stderr); print('c')"), py("print('d')")],
        on_line=lambda i, stream, line: seen.append((i, stream, line)),
    )
    with group:
        assert group.wait(30) is Outcome.FINISHED
    assert sorted(seen) == [
        (0, "stderr", "b"),
        (0, "stdout", "a"),
        (0, "stdout", "c"),
        (1, "stdout", "d"),
    ]
    assert group.lines(0, "stdout") == ["a", "c"] and group.lines(1) == ["d"]
    assert group.returncodes() == [0, 0] and group.first_failure() is None


def test_a_failure_stops_the_others_and_is_named():
    group = ProcessGroup(
        [py("import time; time.sleep(60)"), py("import time, sys; time.sleep(0.5); sys.exit(3)")]
    )
    start = time.monotonic()
    try:
        group.start()
        assert group.wait(30) is Outcome.FAILED
    finally:
        group.stop()
    assert time.monotonic() - start < 10
    assert group.first_failure() == 1
    assert group.returncodes() == [-signal.SIGTERM, 3]
    assert group.stopped() == {0}
    assert all(gone(pid) for pid in group.pids)


def test_stop_kills_a_process_that_ignores_sigterm():
    # As jax's distributed runtime does: it catches SIGTERM as a preemption notice.
    code = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True); time.sleep(60)"
    group = ProcessGroup([py(code)])
    group.start()
    try:
        deadline = time.monotonic() + 30
        while group.lines(0) != ["up"] and time.monotonic() < deadline:
            time.sleep(0.05)
        assert group.wait(0.2) is Outcome.TIMEOUT and group.running() == [0]
        start = time.monotonic()
        group.stop(grace=0.5)
        assert 0.5 <= time.monotonic() - start < 5
    finally:
        group.stop()
    assert group.returncodes() == [-signal.SIGKILL] and gone(group.pids[0])
    assert group.first_failure() is None  # stopped, not failed


def test_stop_reaches_what_a_process_started():
    child = "import subprocess, sys, time; p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); print(p.pid, flush=True); time.sleep(60)"
    group = ProcessGroup([py(child)])
    group.start()
    try:
        deadline = time.monotonic() + 30
        while not group.lines(0) and time.monotonic() < deadline:
            time.sleep(0.05)
        grandchild = int(group.lines(0)[0])
    finally:
        group.stop(grace=0.5)
    deadline = time.monotonic() + 5
    while not gone(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert gone(grandchild)


def test_exit_descriptions():
    assert describe_exit(0) == "exited with code 0"
    assert describe_exit(2) == "exited with code 2"
    assert describe_exit(-9) == "died (signal 9, SIGKILL)"
    assert describe_exit(-6) == "died (signal 6, SIGABRT)"
    assert (exit_status(-9), exit_status(1), exit_status(0)) == (137, 1, 0)


def test_the_launcher_side_needs_no_jax():
    # The launching process only starts and watches workers; jax loads in the workers.
    out = run_without_jax(
        """
        import shardviz.__main__, shardviz.launch
        from shardviz.launch import ProcessGroup, run, start, WorkerConfig
        print("ok")
        """
    )
    assert out.strip() == "ok"
