"""Run a script as N local jax processes with K CPU devices each (``python -m shardviz launch``).

For teaching and CI: one machine plays a multi-host program. Each process runs
:mod:`shardviz.launch.worker`, which joins ``jax.distributed`` (gloo collectives) and then runs
the script as ``__main__``. Output comes back line by line, prefixed ``[p0] ``, ``[p1] ``, ...
A process that fails stops the others at once; a program that hangs (processes that disagree
on what to run wait for each other forever) is stopped by the timeout.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from shardviz.errors import LaunchError, ProcessError, problem
from shardviz.launch.failure import failure_message
from shardviz.launch.ports import HOST, choose_port
from shardviz.launch.processes import LineSink, Outcome, ProcessGroup
from shardviz.launch.result import LaunchResult, ProcessResult
from shardviz.launch.worker import WorkerConfig

#: Seconds a launch may run before everything is stopped.
DEFAULT_TIMEOUT = 120.0

_WORKER = "from shardviz.launch.worker import main; main()"


def echo_sink(out: Callable[[str], object] | None = None) -> LineSink:
    """A :data:`LineSink` that prints each line prefixed ``[pN] ``: stdout lines to this
    process's stdout, stderr lines to its stderr (or every line to ``out``), whole lines only."""
    lock = threading.Lock()

    def sink(index: int, stream: str, line: str) -> None:
        text = f"[p{index}] {line}"
        with lock:
            if out is not None:
                out(text)
                return
            target = sys.stdout if stream == "stdout" else sys.stderr
            target.write(text + "\n")
            target.flush()

    return sink


def _count(value: object, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ProcessError(
            problem(
                "launch",
                f"{what} must be a positive whole number, got {value!r}",
                f"pass e.g. {what}=2",
            )
        )
    return value


def worker_env(config: WorkerConfig, base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of one worker: ``base`` (default: this process's), CPU devices only,
    unbuffered output (lines arrive as they are printed), shardviz importable, ``config``."""
    env = dict(os.environ if base is None else base)
    package_root = str(Path(__file__).resolve().parents[2])
    # Last, so the script's own modules and the user's path come first; redundant when
    # shardviz is installed, needed when it is imported from a source tree.
    env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), package_root) if p)
    env["JAX_PLATFORMS"] = "cpu"
    env["PYTHONUNBUFFERED"] = "1"
    env.update(config.to_env())
    return env


class Launch:
    """Worker processes running one script; :meth:`wait` collects their :class:`LaunchResult`.

    Attributes:
        group: the processes (pids, output so far).
        port: the coordinator's port.
        notes: what the launcher chose for the user (e.g. another port).
        timeout: seconds :meth:`wait` allows by default.
    """

    def __init__(self, group: ProcessGroup, port: int, notes: tuple[str, ...], timeout: float):
        self.group = group
        self.port = port
        self.notes = notes
        self.timeout = timeout
        self._started = time.monotonic()

    @property
    def pids(self) -> list[int]:
        """Process ids, by process index."""
        return self.group.pids

    def wait(self, timeout: float | None = None, *, check: bool = True) -> LaunchResult:
        """Wait for every process to exit, stopping all of them as soon as one fails or when
        ``timeout`` (default: the launch's) runs out. No process is left running.

        Raises:
            LaunchError: with ``check``, when a process failed or the timeout ran out; the
                message names the process and quotes its last output.
        """
        limit = self.timeout if timeout is None else timeout
        still_running: tuple[int, ...] = ()
        try:
            outcome = self.group.wait(limit)
            if outcome is Outcome.TIMEOUT:
                still_running = tuple(self.group.running())
        finally:
            self.group.stop()
        stopped = self.group.stopped()
        codes = self.group.returncodes()
        processes = tuple(
            ProcessResult(
                index=i,
                pid=pid,
                returncode=code if code is not None else -9,
                output=tuple(self.group.output(i)),
                stopped=i in stopped,
            )
            for i, (pid, code) in enumerate(zip(self.group.pids, codes, strict=True))
        )
        result = LaunchResult(
            processes=processes,
            port=self.port,
            seconds=time.monotonic() - self._started,
            failed=self.group.first_failure(),
            timed_out=outcome is Outcome.TIMEOUT and self.group.first_failure() is None,
            still_running=still_running,
            notes=self.notes,
        )
        message = failure_message(result, limit)
        if message is not None:
            result = dataclasses.replace(result, error=message)
            if check:
                raise LaunchError(message, result)
        return result

    def stop(self) -> None:
        """Stop every process now (SIGTERM, then SIGKILL)."""
        self.group.stop()

    def __enter__(self) -> Launch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start(
    script: str | os.PathLike[str],
    *,
    processes: int = 2,
    devices_per_process: int = 4,
    args: Sequence[str] = (),
    port: int | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    echo: bool | LineSink = True,
    heartbeat_timeout: int = 10,
) -> Launch:
    """Start ``script`` as ``processes`` jax processes and return at once (see :func:`run`).

    ``echo`` is True (print every line prefixed ``[pN] ``), False (keep output only in the
    result) or a :data:`LineSink`. Notes about choices made (another port) go to stderr when
    echoing. Call :meth:`Launch.wait` (or use ``with``) so the processes are stopped.
    """
    n = _count(processes, "processes")
    k = _count(devices_per_process, "devices_per_process")
    if not isinstance(timeout, int | float) or timeout <= 0:
        raise ProcessError(
            problem(
                "launch",
                f"timeout must be a positive number of seconds, got {timeout!r}",
                "pass e.g. timeout=120",
            )
        )
    path = Path(script)
    if not path.is_file():
        raise ProcessError(
            problem(
                "launch",
                f"the script {str(script)!r} does not exist",
                "pass the path of a Python file",
            )
        )
    chosen, note = choose_port(port)
    notes = (note,) if note else ()
    sink: LineSink | None = echo_sink() if echo is True else (echo or None)
    if echo is True:
        for text in notes:
            print(f"shardviz launch: {text}", file=sys.stderr, flush=True)
    parent = os.getpid()
    envs = [
        worker_env(
            WorkerConfig(
                process_id=i,
                processes=n,
                devices=k,
                coordinator=f"{HOST}:{chosen}",
                init_timeout=int(min(timeout, 60)),
                heartbeat_timeout=heartbeat_timeout,
                # A finished process waits for the others at exit; the launch's own timeout
                # bounds the whole run, so jax's wait must not cut it shorter.
                shutdown_timeout=int(timeout) + 1,
                parent=parent,
            )
        )
        for i in range(n)
    ]
    command = [sys.executable, "-c", _WORKER, str(path), *map(str, args)]
    group = ProcessGroup([command] * n, envs=envs, on_line=sink)
    group.start()
    return Launch(group, chosen, notes, float(timeout))


def run(
    script: str | os.PathLike[str],
    *,
    processes: int = 2,
    devices_per_process: int = 4,
    args: Sequence[str] = (),
    port: int | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    echo: bool | LineSink = True,
    check: bool = True,
) -> LaunchResult:
    """Run ``script`` as ``processes`` local jax processes with ``devices_per_process`` CPU
    devices each, joined by ``jax.distributed`` (gloo), and wait for them.

    ``port`` is the coordinator's (default: 8476, or a free one if that is taken). Every
    process is stopped when one fails or after ``timeout`` seconds.

    Returns:
        Each process's exit code and output, by process index.

    Raises:
        LaunchError: with ``check``, when a process failed or the timeout ran out (its
            ``result`` holds the outputs).
        ProcessError: the coordinator port is taken, or bad arguments; nothing was started.
    """
    launch = start(
        script,
        processes=processes,
        devices_per_process=devices_per_process,
        args=args,
        port=port,
        timeout=timeout,
        echo=echo,
    )
    with launch:
        return launch.wait(check=check)
