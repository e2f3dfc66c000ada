"""What a launch produced: each process's exit and output, and the launch's own verdict."""

from __future__ import annotations

import signal
from dataclasses import dataclass

from shardviz.launch.processes import describe_exit, exit_status

#: The exit code of a launch stopped by its timeout (as GNU ``timeout`` reports one).
TIMEOUT_EXIT = 124


@dataclass(frozen=True)
class ProcessResult:
    """One process of a launch.

    Attributes:
        index: the process index (jax's ``process_index()``).
        pid: its process id.
        returncode: as ``subprocess`` gives it (negative: killed by that signal).
        output: every line it wrote, as (``"stdout"`` or ``"stderr"``, line), in arrival order.
        stopped: the launcher stopped it (another process failed, or the timeout ran out).
    """

    index: int
    pid: int
    returncode: int
    output: tuple[tuple[str, str], ...]
    stopped: bool

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    @property
    def exit_code(self) -> int:
        """The return code as a shell reports it (128 + N for a death by signal N)."""
        return exit_status(self.returncode)

    @property
    def signal(self) -> signal.Signals | int | None:
        """The signal that ended it, if one did."""
        if self.returncode >= 0:
            return None
        try:
            return signal.Signals(-self.returncode)
        except ValueError:
            return -self.returncode

    @property
    def stdout(self) -> str:
        return "".join(line + "\n" for name, line in self.output if name == "stdout")

    @property
    def stderr(self) -> str:
        return "".join(line + "\n" for name, line in self.output if name == "stderr")

    def describe(self) -> str:
        """``"process 1 died (signal 9, SIGKILL)"``, ``"process 0 was stopped"``, ..."""
        if self.stopped:
            return f"process {self.index} was stopped"
        return f"process {self.index} {describe_exit(self.returncode)}"


@dataclass(frozen=True)
class LaunchResult:
    """Every process of a launch, and what went wrong if anything did.

    Attributes:
        processes: by process index.
        port: the coordinator's port.
        seconds: from the first start to the last exit.
        failed: index of the process whose failure ended the launch (None: none failed).
        timed_out: the timeout stopped the processes.
        still_running: processes that were still running when the timeout ran out.
        notes: things the launcher chose for the user (e.g. another port).
        error: the failure, as :class:`LaunchError` says it (None when every process exited 0).
    """

    processes: tuple[ProcessResult, ...]
    port: int
    seconds: float
    failed: int | None = None
    timed_out: bool = False
    still_running: tuple[int, ...] = ()
    notes: tuple[str, ...] = ()
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.failed is None and not self.timed_out

    @property
    def exit_code(self) -> int:
        """0 when every process exited 0; else the exit code of the process that failed (a
        death by signal N is 128 + N), or 124 when the timeout stopped them."""
        if self.failed is not None:
            return self.processes[self.failed].exit_code or 1
        if self.timed_out:
            return TIMEOUT_EXIT
        return max((p.exit_code for p in self.processes), default=0)

    def __getitem__(self, index: int) -> ProcessResult:
        return self.processes[index]

    def __len__(self) -> int:
        return len(self.processes)
