"""The worker's side of the contract: configuration through the environment, and a worker
whose launcher is gone exits."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pytest

from shardviz.errors import ProcessError
from shardviz.launch import WorkerConfig, worker_env

from .helpers import gone


def test_config_round_trips_through_the_environment():
    config = WorkerConfig(process_id=1, processes=2, devices=4, coordinator="127.0.0.1:9999",
                          init_timeout=30, heartbeat_timeout=5, shutdown_timeout=61, parent=42)  # fmt: skip
    env = worker_env(config, base={"PATH": "/bin", "JAX_PLATFORMS": "tpu"})
    assert WorkerConfig.from_env(env) == config
    assert env["JAX_PLATFORMS"] == "cpu" and env["PYTHONUNBUFFERED"] == "1"
    assert env["SHARDVIZ_LAUNCH_PROCESS_ID"] == "1" and env["PATH"] == "/bin"


def test_config_outside_a_launch_says_how_to_launch():
    with pytest.raises(ProcessError, match="SHARDVIZ_LAUNCH_PROCESS_ID.*python -m shardviz launch"):
        WorkerConfig.from_env({})


def test_a_worker_whose_launcher_is_killed_exits():
    # launcher -> worker; the launcher is killed with SIGKILL (no chance to stop its worker).
    worker = "import os, time; from shardviz.launch.worker import exit_with_parent; exit_with_parent(os.getppid(), 0.1); time.sleep(60)"
    launcher = textwrap.dedent(
        f"""
        import subprocess, sys, time
        p = subprocess.Popen([sys.executable, "-c", {worker!r}])
        print(p.pid, flush=True)
        time.sleep(60)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", launcher], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        worker_pid = int(proc.stdout.readline())
        time.sleep(1.0)  # the worker is running its watch
        assert not gone(worker_pid)
        proc.kill()
        proc.wait(10)
        deadline = time.monotonic() + 10
        while not gone(worker_pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert gone(worker_pid)
    finally:
        proc.kill()
        proc.wait(10)
