"""Run a script as several local jax processes joined by ``jax.distributed``.

``python -m shardviz launch --processes 2 --devices-per-process 4 script.py`` or, from Python,
:func:`run`. :class:`ProcessGroup` (start, watch, stop local processes together) and
:func:`join` (make this process one of a program's processes) serve anything else that runs a
multi-process program on one machine.
"""

from __future__ import annotations

from shardviz.errors import LaunchError
from shardviz.launch.launcher import DEFAULT_TIMEOUT, Launch, echo_sink, run, start, worker_env
from shardviz.launch.ports import DEFAULT_PORT, choose_port, free_port, pick_port, port_in_use
from shardviz.launch.processes import Outcome, ProcessGroup, describe_exit, exit_status
from shardviz.launch.result import LaunchResult, ProcessResult
from shardviz.launch.worker import WorkerConfig, join

__all__ = [
    "DEFAULT_PORT",
    "DEFAULT_TIMEOUT",
    "Launch",
    "LaunchError",
    "LaunchResult",
    "Outcome",
    "ProcessGroup",
    "ProcessResult",
    "WorkerConfig",
    "choose_port",
    "describe_exit",
    "echo_sink",
    "exit_status",
    "free_port",
    "join",
    "pick_port",
    "port_in_use",
    "run",
    "start",
    "worker_env",
]
