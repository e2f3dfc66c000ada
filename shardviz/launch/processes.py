"""Start, watch and stop a group of local child processes together, reading their output line
by line as it arrives.

Nothing here knows about jax: the launcher (``python -m shardviz launch``) runs one worker per
jax process through a :class:`ProcessGroup`, and anything else that starts several local
processes which live and die together (engines for a notebook cluster) can do the same.

Each child runs in its own session (its own process group), so stopping it also stops whatever
it started. Stopping sends ``SIGTERM``, waits ``grace`` seconds, then sends ``SIGKILL``: jax's
distributed runtime catches ``SIGTERM`` (it treats it as a preemption notice and keeps
running), so for jax workers the ``SIGKILL`` is what ends them.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from enum import Enum
from typing import IO

from shardviz.errors import ProcessError, problem
from shardviz.explainer.background import own

#: Called for every line a process writes: (process index, "stdout" or "stderr", the line
#: without its newline). Called from reader threads, one per stream.
LineSink = Callable[[int, str, str], None]

#: Seconds between two looks at the processes while waiting.
POLL = 0.05
#: Seconds a process gets to exit after SIGTERM before SIGKILL.
GRACE = 2.0


class Outcome(Enum):
    """How :meth:`ProcessGroup.wait` ended."""

    FINISHED = "finished"  # every process exited with code 0
    FAILED = "failed"  # one exited with a nonzero code or a signal (see first_failure)
    TIMEOUT = "timeout"  # the time ran out with some still running


def describe_exit(returncode: int) -> str:
    """``"exited with code 1"`` or ``"died (signal 9, SIGKILL)"`` for a Popen return code."""
    if returncode >= 0:
        return f"exited with code {returncode}"
    sig = -returncode
    try:
        name = signal.Signals(sig).name
    except ValueError:
        return f"died (signal {sig})"
    return f"died (signal {sig}, {name})"


def exit_status(returncode: int) -> int:
    """A return code as a shell reports it: a death by signal N becomes 128 + N."""
    return returncode if returncode >= 0 else 128 - returncode


class ProcessGroup:
    """Several local child processes started, watched and stopped as one.

    Args:
        commands: one command line per process.
        envs: one environment per process (default: this process's).
        cwd: working directory of every process.
        on_line: called for each line of output as it arrives (see :data:`LineSink`).
        keep_lines: lines of output kept per process (the oldest are dropped).
    """

    def __init__(
        self,
        commands: Sequence[Sequence[str]],
        *,
        envs: Sequence[Mapping[str, str]] | None = None,
        cwd: str | None = None,
        on_line: LineSink | None = None,
        keep_lines: int = 10_000,
    ) -> None:
        if envs is not None and len(envs) != len(commands):
            raise ValueError(f"{len(commands)} commands but {len(envs)} environments")
        self.commands = [list(c) for c in commands]
        self._envs = [dict(e) for e in envs] if envs is not None else None
        self._cwd = cwd
        self._on_line = on_line
        self._procs: list[subprocess.Popen[bytes]] = []
        self._lines: list[deque[tuple[str, str]]] = [
            deque(maxlen=keep_lines) for _ in self.commands
        ]
        self._lock = threading.Lock()
        self._readers: list[threading.Thread] = []
        self._exit_order: list[int] = []  # process indices in the order they exited
        self._stopped: set[int] = set()  # processes this group had to stop

    # --- starting -------------------------------------------------------------------------

    def start(self) -> ProcessGroup:
        """Start every process; if one cannot start, stop those already started and raise.

        The group is closed before the interpreter exits (no process outlives it)."""
        own(self)
        for i, command in enumerate(self.commands):
            try:
                proc = subprocess.Popen(
                    command,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    env=self._envs[i] if self._envs is not None else None,
                    cwd=self._cwd,
                    start_new_session=True,
                )
            except OSError as err:
                self.stop()
                raise ProcessError(
                    problem(
                        f"process {i}",
                        f"could not start {command[0]!r}: {err}",
                        "check that the program exists and can be run",
                    )
                ) from err
            self._procs.append(proc)
            watcher = threading.Thread(
                target=self._note_exit, args=(i,), daemon=True, name=f"p{i}-exit"
            )
            watcher.start()
            for name, stream in (("stdout", proc.stdout), ("stderr", proc.stderr)):
                assert stream is not None
                reader = threading.Thread(
                    target=self._pump, args=(i, name, stream), daemon=True, name=f"p{i}-{name}"
                )
                reader.start()
                self._readers.append(reader)
        return self

    def _note_exit(self, index: int) -> None:
        """Block until process ``index`` exits (without reaping it) and note the order, so the
        first to fail is known even when the others die a moment later because of it."""
        with contextlib.suppress(ChildProcessError):  # already reaped: it exited
            os.waitid(os.P_PID, self._procs[index].pid, os.WEXITED | os.WNOWAIT)
        with self._lock:
            if index not in self._exit_order:
                self._exit_order.append(index)

    def _pump(self, index: int, name: str, stream: IO[bytes]) -> None:
        """Read one stream to its end, one line at a time, storing and passing on each line."""
        with stream:
            for raw in iter(stream.readline, b""):
                line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
                with self._lock:
                    self._lines[index].append((name, line))
                if self._on_line is not None:
                    with contextlib.suppress(Exception):  # a broken sink must not stop reading
                        self._on_line(index, name, line)

    # --- looking --------------------------------------------------------------------------

    @property
    def pids(self) -> list[int]:
        """Process ids, by process index."""
        return [p.pid for p in self._procs]

    def __len__(self) -> int:
        return len(self.commands)

    def returncodes(self) -> list[int | None]:
        """Each process's return code (negative: killed by that signal), None while running."""
        return [p.poll() for p in self._procs]

    def running(self) -> list[int]:
        """Indices of the processes still running."""
        return [i for i, code in enumerate(self.returncodes()) if code is None]

    def first_failure(self) -> int | None:
        """The first process seen to exit with a nonzero code or a signal, and not because this
        group stopped it."""
        codes = self.returncodes()
        with self._lock:
            seen = list(self._exit_order)
        # An exit the watcher threads have not noted yet comes last.
        order = seen + [i for i, code in enumerate(codes) if code is not None and i not in seen]
        for i in order:
            if codes[i] not in (0, None) and i not in self._stopped:
                return i
        return None

    def stopped(self) -> set[int]:
        """Processes that were still running when :meth:`stop` ended them."""
        return set(self._stopped)

    def output(self, index: int) -> list[tuple[str, str]]:
        """Lines process ``index`` wrote so far, as (stream, line), in the order they arrived."""
        with self._lock:
            return list(self._lines[index])

    def lines(self, index: int, stream: str | None = None) -> list[str]:
        """Lines process ``index`` wrote so far, from one stream or (default) both."""
        return [line for name, line in self.output(index) if stream in (None, name)]

    # --- waiting and stopping -------------------------------------------------------------

    def wait(self, timeout: float | None = None, *, stop_on_failure: bool = True) -> Outcome:
        """Wait until every process exits, one fails (if ``stop_on_failure``; the others are
        then stopped), or ``timeout`` seconds pass (the processes are left running: call
        :meth:`stop`)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            codes = self.returncodes()
            if stop_on_failure and self.first_failure() is not None:
                self.stop()
                return Outcome.FAILED
            if all(code is not None for code in codes):
                return Outcome.FINISHED if self.first_failure() is None else Outcome.FAILED
            if deadline is not None and time.monotonic() >= deadline:
                return Outcome.TIMEOUT
            time.sleep(POLL)

    def stop(self, grace: float = GRACE) -> None:
        """Stop every process still running: SIGTERM to its process group, then SIGKILL after
        ``grace`` seconds; wait for all of them and for their output. Safe to call twice."""
        alive = self.running()
        self._stopped.update(alive)
        for i in alive:
            self._signal(i, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and not all(self._exited(i) for i in alive):
            time.sleep(POLL)
        for i in alive:
            # Also when the leader already exited: what it started may still run in its group,
            # and until the leader is reaped below its pid (the group's id) is not reused.
            self._signal(i, signal.SIGKILL)
        for proc in self._procs:
            proc.wait()
        self.returncodes()
        for reader in self._readers:
            reader.join(timeout=2.0)

    def close(self, timeout: float | None = None) -> bool:
        """:meth:`stop` (what happens before the interpreter exits); True once all ended."""
        self.stop()
        return not self.running()

    def _exited(self, index: int) -> bool:
        """Whether a process exited, without reaping it (its pid stays reserved)."""
        try:
            info = os.waitid(os.P_PID, self._procs[index].pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:  # already reaped
            return True
        return info is not None

    def _signal(self, index: int, sig: signal.Signals) -> None:
        pid = self._procs[index].pid
        try:
            os.killpg(pid, sig)
        except (ProcessLookupError, PermissionError):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)

    def __enter__(self) -> ProcessGroup:
        return self.start() if not self._procs else self

    def __exit__(self, *exc: object) -> None:
        self.stop()
