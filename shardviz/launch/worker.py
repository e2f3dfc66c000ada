"""What runs inside each launched process: join jax.distributed, then run the user's script.

``python -m shardviz.launch.worker script.py [args...]`` reads its place in the program from
``SHARDVIZ_LAUNCH_*`` environment variables (written by :meth:`WorkerConfig.to_env`), gives jax
that many CPU devices with gloo collectives, calls ``jax.distributed.initialize`` and then runs
the script as ``__main__``, so ``jax.process_index()``, ``jax.devices()`` (every process's
devices) and collectives across processes work in it. The script must not call
``jax.distributed.initialize`` itself.

:func:`join` is the part that any process can use to become one of the program's processes
(e.g. an engine of a notebook cluster), before it touches jax's devices.
"""

from __future__ import annotations

import contextlib
import os
import runpy
import sys
import threading
import time
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NoReturn

from shardviz.errors import DeviceSetupError, ProcessError, problem

_PREFIX = "SHARDVIZ_LAUNCH_"


@dataclass(frozen=True)
class WorkerConfig:
    """One process's place in a multi-process program, and how long jax waits for the others.

    Attributes:
        process_id: this process's index, 0 .. processes - 1 (process 0 hosts the coordinator).
        processes: how many processes the program has.
        devices: CPU devices in this process.
        coordinator: ``host:port`` of the coordinator.
        init_timeout: seconds ``jax.distributed.initialize`` waits for every process to join.
        heartbeat_timeout: seconds without a heartbeat after which jax declares a process dead
            and aborts the others (jax's default, 100 s, leaves them waiting that long).
        shutdown_timeout: seconds a process that finished waits at exit for the others.
        parent: pid of the launcher; a worker whose launcher is gone exits (0: no check).
    """

    process_id: int
    processes: int
    devices: int
    coordinator: str
    init_timeout: int = 60
    heartbeat_timeout: int = 10
    shutdown_timeout: int = 120
    parent: int = 0

    def to_env(self) -> dict[str, str]:
        """The environment variables that carry this configuration to the worker."""
        return {
            f"{_PREFIX}PROCESS_ID": str(self.process_id),
            f"{_PREFIX}PROCESSES": str(self.processes),
            f"{_PREFIX}DEVICES": str(self.devices),
            f"{_PREFIX}COORDINATOR": self.coordinator,
            f"{_PREFIX}INIT_TIMEOUT": str(self.init_timeout),
            f"{_PREFIX}HEARTBEAT_TIMEOUT": str(self.heartbeat_timeout),
            f"{_PREFIX}SHUTDOWN_TIMEOUT": str(self.shutdown_timeout),
            f"{_PREFIX}PARENT": str(self.parent),
        }

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> WorkerConfig:
        """Read the configuration :meth:`to_env` wrote."""
        env = os.environ if environ is None else environ
        missing = [
            k
            for k in ("PROCESS_ID", "PROCESSES", "DEVICES", "COORDINATOR")
            if _PREFIX + k not in env
        ]
        if missing:
            raise ProcessError(
                problem(
                    "shardviz.launch.worker",
                    f"{', '.join(_PREFIX + k for k in missing)} not set: this module runs "
                    "inside processes that the launcher starts",
                    "run the script with python -m shardviz launch --processes N script.py",
                )
            )

        def num(key: str, default: int) -> int:
            return int(env.get(_PREFIX + key, default))

        return cls(
            process_id=num("PROCESS_ID", 0),
            processes=num("PROCESSES", 1),
            devices=num("DEVICES", 1),
            coordinator=env[_PREFIX + "COORDINATOR"],
            init_timeout=num("INIT_TIMEOUT", cls.init_timeout),
            heartbeat_timeout=num("HEARTBEAT_TIMEOUT", cls.heartbeat_timeout),
            shutdown_timeout=num("SHUTDOWN_TIMEOUT", cls.shutdown_timeout),
            parent=num("PARENT", 0),
        )


def join(config: WorkerConfig) -> None:
    """Make this process ``config.process_id`` of the program: ``config.devices`` CPU devices,
    gloo collectives across processes, ``jax.distributed.initialize`` with short timeouts.

    Raises:
        DeviceSetupError: jax's backend already started in this process (too late to join).
    """
    import jax
    from jax._src import xla_bridge  # no public query for "backend started" in jax 0.10

    if xla_bridge.backends_are_initialized():
        raise DeviceSetupError(
            problem(
                f"process {config.process_id}",
                "jax's backend already started, so this process can no longer join a "
                "multi-process program",
                "join before anything touches jax devices or arrays (restart the process)",
            )
        )
    jax.config.update("jax_platforms", "cpu")
    jax.config.update("jax_num_cpu_devices", config.devices)
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(
        coordinator_address=config.coordinator,
        num_processes=config.processes,
        process_id=config.process_id,
        initialization_timeout=config.init_timeout,
        heartbeat_timeout_seconds=config.heartbeat_timeout,
        shutdown_timeout_seconds=config.shutdown_timeout,
        # This machine only: the coordinator is not reachable from the network.
        coordinator_bind_address=config.coordinator if config.process_id == 0 else None,
    )


def exit_with_parent(parent: int, every: float = 0.5) -> None:
    """End this process when the launcher ``parent`` is gone (e.g. killed with SIGKILL, which
    leaves it no chance to stop its workers); a daemon thread checks every ``every`` seconds."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(every)
        print(f"shardviz worker: the launcher (pid {parent}) is gone; exiting", file=sys.stderr)
        os._exit(1)

    if parent and os.getppid() == parent:
        threading.Thread(target=watch, daemon=True, name="launcher-watch").start()


def run_script(script: str, args: Sequence[str]) -> None:
    """Run ``script`` as ``__main__`` with ``args``, as ``python script.py args`` would."""
    sys.argv = [script, *args]
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    runpy.run_path(script, run_name="__main__")


def _script_traceback(err: BaseException, script: str) -> None:
    """Print ``err``'s traceback from the script's first frame on, as ``python script.py``
    would (the worker's and runpy's frames say nothing to the user)."""
    tb = err.__traceback__
    target = os.path.abspath(script)
    while tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename) != target:
        tb = tb.tb_next
    traceback.print_exception(type(err), err, tb if tb is not None else err.__traceback__)


def exit_now(code: int) -> NoReturn:
    """Flush and end this process at once with ``code``.

    Not ``sys.exit``: jax's exit handler waits at a shutdown barrier until every other process
    reaches it too (up to ``shutdown_timeout``), while the others, waiting for this one in a
    collective, never do. A process whose script failed must end now so that the launcher
    stops the rest.
    """
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of every launched process: ``script.py [args...]``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:
        raise SystemExit("usage: python -m shardviz.launch.worker script.py [args...]")
    config = WorkerConfig.from_env()
    exit_with_parent(config.parent)
    join(config)
    try:
        run_script(argv[0], argv[1:])
    except SystemExit as done:
        if done.code is None or done.code == 0:
            raise
        if not isinstance(done.code, int):
            print(done.code, file=sys.stderr)
        exit_now(done.code if isinstance(done.code, int) else 1)
    except BaseException as err:  # the script failed: say how, then end without waiting
        _script_traceback(err, argv[0])
        exit_now(1)


if __name__ == "__main__":
    main()
