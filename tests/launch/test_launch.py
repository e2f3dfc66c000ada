"""Real launches: 2 processes x 4 (or 2) CPU devices joined by jax.distributed, from the Python
API and once from the command line; a worker killed, a busy port, processes that disagree on
the program, a script that raises in one process. Every launch is bounded by its timeout and
stopped in a finally; no process is left behind."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from shardviz.__main__ import main
from shardviz.errors import ProcessError
from shardviz.launch import DEFAULT_PORT, LaunchError, run, start
from shardviz.launch import launcher as launcher_module

from .helpers import SCRIPTS, gone, held

ROOT = Path(__file__).resolve().parents[2]


def reports(result_or_lines) -> dict[int, dict]:
    """The JSON line each process printed (psum.py), by process index."""
    return {
        p.index: json.loads(p.stdout.strip().splitlines()[-1]) for p in result_or_lines.processes
    }


def test_two_processes_of_four_devices_run_a_psum(capsys):
    start_time = time.monotonic()
    result = run(
        SCRIPTS / "psum.py", processes=2, devices_per_process=4, args=["--flag", "x"], timeout=60
    )
    assert time.monotonic() - start_time < 60
    assert result.ok and result.exit_code == 0 and [p.returncode for p in result] == [0, 0]
    seen = reports(result)
    for i in (0, 1):
        assert seen[i]["process"] == i and seen[i]["processes"] == 2
        assert seen[i]["devices"] == 8 and seen[i]["local_devices"] == 4
        assert seen[i]["device_processes"] == [0, 0, 0, 0, 1, 1, 1, 1]
        assert seen[i]["shape"] == [4, 8]
        assert seen[i]["total"] == sum(range(32))  # 496, every element once across 8 devices
        assert seen[i]["args"] == ["--flag", "x"]
    out, err = capsys.readouterr()
    for i in (0, 1):  # echoed as it arrived, each line prefixed by its process
        assert f'[p{i}] {{"process": {i}, ' in out
        assert f"[p{i}] process {i} done" in err
    assert all(gone(p.pid) for p in result)


def test_a_killed_worker_stops_the_others():
    launch = start(
        SCRIPTS / "ready_then_loop.py", processes=2, devices_per_process=2, timeout=60, echo=False
    )
    try:
        deadline = time.monotonic() + 60
        while not any(line.startswith("ready") for line in launch.group.lines(1, "stdout")):
            assert time.monotonic() < deadline and launch.group.running() == [0, 1]
            time.sleep(0.1)
        os.kill(launch.pids[1], signal.SIGKILL)
        killed = time.monotonic()
        with pytest.raises(LaunchError) as caught:
            launch.wait()
        stopped_after = time.monotonic() - killed
    finally:
        launch.stop()
    assert stopped_after < 10  # SIGTERM (which jax ignores), 2 s, SIGKILL
    message = str(caught.value)
    assert message.startswith(
        "launch: process 1 died (signal 9, SIGKILL), so process 0 was stopped."
    )
    assert f"last output of process 1:\n  [p1] ready pid={launch.pids[1]}" in message
    result = caught.value.result
    assert (
        result.failed == 1
        and result.exit_code == 137
        and result[0].stopped
        and not result[1].stopped
    )
    assert all(gone(pid) for pid in launch.pids)


def test_a_busy_port_given_is_an_error_before_any_process_starts(monkeypatch):
    def no_start(*args, **kwargs):
        raise AssertionError("a process was started")

    monkeypatch.setattr(launcher_module, "ProcessGroup", no_start)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        with pytest.raises(
            ProcessError,
            match=f"the coordinator port {port} on 127.0.0.1 is already in use.*no process was started",
        ):
            run(SCRIPTS / "psum.py", port=port, echo=False)


def test_a_busy_default_port_is_replaced_and_said(capsys):
    with held(DEFAULT_PORT):
        result = run(SCRIPTS / "psum.py", processes=2, devices_per_process=2, timeout=60)
    assert result.ok and result.port != DEFAULT_PORT
    note = (
        f"the coordinator port {DEFAULT_PORT} is in use; using the free port {result.port} instead"
    )
    assert result.notes == (note,)
    assert f"shardviz launch: {note}" in capsys.readouterr().err
    assert all(r["total"] == sum(range(16)) and r["devices"] == 4 for r in reports(result).values())


def test_different_shapes_in_two_processes_are_a_clear_error():
    start_time = time.monotonic()
    with pytest.raises(LaunchError) as caught:
        run(
            SCRIPTS / "different_shapes.py",
            processes=2,
            devices_per_process=2,
            timeout=60,
            echo=False,
        )
    assert time.monotonic() - start_time < 60  # jax (gloo) noticed, not the timeout
    message = str(caught.value)
    # Which process aborts and which sees its peer go is a race; the message names both.
    assert "died (signal 6, SIGABRT)" in message
    assert (
        "the processes ran different programs: one collective's sizes differ between them"
        in message
    )
    assert "collective mismatch" in message  # gloo's own line, quoted
    assert not caught.value.result.timed_out
    assert all(gone(p.pid) for p in caught.value.result)


def test_processes_that_wait_for_each_other_forever_are_stopped_by_the_timeout():
    start_time = time.monotonic()
    with pytest.raises(LaunchError) as caught:
        run(
            SCRIPTS / "different_axes.py",
            processes=2,
            devices_per_process=2,
            timeout=20,
            echo=False,
        )
    took = time.monotonic() - start_time
    assert 20 <= took < 35
    result = caught.value.result
    assert result.timed_out and result.still_running == (0, 1) and result.exit_code == 124
    message = str(caught.value)
    assert message.startswith(
        "launch: process 0 and process 1 still ran after the 20 s timeout and were stopped."
    )
    assert "last output of process 0:\n  [p0] summing over axis 0\n" in message
    # Process 1's section is last. Under load jax's own runtime can add lines after the
    # script's (seen in CI: "[p1] 1"; and, when process 0 is stopped first, process 1's
    # Gloo collective failing on the closed connection, which may push the script's line out
    # of the quoted tail): either way the section quotes process 1 as it ended.
    section = message.split("last output of process 1:\n", 1)[1]
    assert "[p1] summing over axis 1" in section or (
        "[p1] " in section and "Connection closed by peer" in section
    )
    assert message.index("last output of process 1:") > message.index("last output of process 0:")
    assert all(gone(p.pid) for p in result)


def test_a_script_that_raises_in_one_process_ends_the_launch_at_once():
    start_time = time.monotonic()
    result = run(
        SCRIPTS / "fails_in_one.py",
        processes=2,
        devices_per_process=2,
        timeout=60,
        echo=False,
        check=False,
    )
    # At once: not after jax's 30 s gloo timeout or its shutdown barrier.
    assert time.monotonic() - start_time < 20
    assert result.failed == 1 and result.exit_code == 1 and result[0].stopped
    assert result.error is not None and result.error.startswith(
        "launch: process 1 exited with code 1, so process 0 was stopped."
    )
    # The traceback starts at the script, as `python script.py` shows it.
    assert result[1].stderr.startswith("Traceback (most recent call last):\n  File ")
    assert (
        "runpy" not in result[1].stderr
        and "ValueError: process 1 found bad data" in result[1].stderr
    )


def test_command_line_end_to_end():
    env = {k: v for k, v in os.environ.items() if k != "SHARDVIZ_TEST_DEVICES"}
    command = [sys.executable, "-m", "shardviz", "launch", "--processes", "2", "--devices-per-process", "2",
               "--timeout", "60", str(SCRIPTS / "psum.py"), "--flag"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=90, cwd=ROOT, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = {
        i: [ln for ln in done.stdout.splitlines() if ln.startswith(f'[p{i}] {{"process"')]
        for i in (0, 1)
    }
    for i in (0, 1):
        assert len(lines[i]) == 1
        seen = json.loads(lines[i][0].removeprefix(f"[p{i}] "))
        assert seen["process"] == i and seen["devices"] == 4 and seen["args"] == ["--flag"]
        assert f"[p{i}] process {i} done" in done.stderr


def test_command_line_errors_say_shardviz_and_exit_nonzero(capsys):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        assert main(["launch", "--port", str(port), str(SCRIPTS / "psum.py")]) == 2
    assert capsys.readouterr().err.startswith(f"shardviz: launch: the coordinator port {port} ")
    assert main(["launch", "--processes", "0", str(SCRIPTS / "psum.py")]) == 2
    assert "processes must be a positive whole number, got 0" in capsys.readouterr().err
