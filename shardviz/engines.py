"""Multi-process jax from a notebook: an ipyparallel cluster whose engines are jax processes.

``sv.cluster(processes=2, devices_per_process=4)`` starts ``processes`` ipyparallel engines on
this machine, gives each ``devices_per_process`` CPU devices and joins them into one jax
program with ``jax.distributed`` (gloo collectives), so ``%%px`` cells run the same code in
every process, as a multi-host training job does. The notebook's own kernel is not one of the
processes: it drives them and shows what they computed (:meth:`Cluster.pull`, e.g. process 0's
``Report``, drawn here as text, HTML or in the Explorer).

Engines that die or hang surface as :class:`~shardviz.errors.ProcessError` naming the process;
:meth:`Cluster.stop` (also on ``with`` exit and at interpreter exit) stops every engine.
ipyparallel is imported only here (``pip install 'shardviz[cluster]'``).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shardviz.errors import ProcessError, problem
from shardviz.launch.failure import known_cause, tail
from shardviz.launch.ports import free_port

#: Seconds to wait for the engines to start and for ``jax.distributed`` to join them.
START_TIMEOUT = 120.0
#: Seconds between checks that every engine is still alive while waiting for one.
POLL = 0.5
#: Seconds to wait, after a process died, for the others' output that may say why.
CAUSE_WAIT = 2.0
#: ANSI colour codes (IPython colours the tracebacks it writes to an engine's log).
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
#: ipyparallel's own lines in an engine's log (its start, its tasks, its nanny), not the
#: program's output.
_ENGINE_LOG = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+ \[(IPEngine|KernelNanny)")
#: Seconds without a heartbeat before jax's coordination service gives up on a process (jax's
#: default, 100 s, would leave the others waiting that long for one that died).
HEARTBEAT = 10


@dataclass(frozen=True)
class ProcessInfo:
    """One engine as a jax process: its index, its devices and the program's."""

    engine: int
    process_index: int
    local_devices: int
    global_devices: int
    pid: int


def _join(port: int, index: int, processes: int, devices: int, timeout: int) -> dict:
    """Run in an engine: ``devices`` CPU devices, joined to the others (before any jax use),
    the same way ``python -m shardviz launch`` joins its workers."""
    import os

    import jax

    from shardviz.launch.worker import WorkerConfig, join

    join(
        WorkerConfig(
            process_id=index, processes=processes, devices=devices,
            coordinator=f"127.0.0.1:{port}", init_timeout=timeout,
            heartbeat_timeout=HEARTBEAT, shutdown_timeout=HEARTBEAT,
        )
    )  # fmt: skip
    return {
        "process_index": jax.process_index(),
        "local_devices": len(jax.local_devices()),
        "global_devices": len(jax.devices()),
        "pid": os.getpid(),
    }


def _engine_config() -> Any:
    """The engines' configuration: native output to their logs (see
    :mod:`shardviz.launch.engine_stream`), so a process that jax aborts says why."""
    from traitlets.config import Config

    config = Config()
    config.LocalEngineSetLauncher.engine_args = [
        "--IPEngine.out_stream_factory=shardviz.launch.engine_stream.EngineOutStream"
    ]
    return config


def _ipyparallel() -> Any:
    try:
        import ipyparallel
    except ImportError as err:  # pragma: no cover - installed by make
        raise ImportError(
            "shardviz.engines needs ipyparallel: pip install 'shardviz[cluster]'"
        ) from err
    return ipyparallel


class Cluster:
    """Local jax processes driven from this kernel (see :func:`cluster`).

    Attributes:
        client: the ipyparallel client; ``client[:]`` is a view on every engine.
        processes: each engine's jax process, by process index.
    """

    def __init__(self, processes: int, devices_per_process: int, timeout: float) -> None:
        ipp = _ipyparallel()
        self.timeout = timeout
        self._cluster = ipp.Cluster(
            n=processes, engines="local", log_level=40, config=_engine_config()
        )
        self.client: Any = None
        self._sent: list[Any] = []
        self._live: Any = None
        self._logs: dict[int, str] = {}
        try:
            self.client = self._cluster.start_and_connect_sync(activate=False)
            self.client.wait_for_engines(processes, timeout=timeout)
            self.processes = self._join(processes, devices_per_process)
            self._logs = self._engine_logs()
        except BaseException:
            self.stop()
            raise
        atexit.register(self.stop)

    def _join(self, processes: int, devices: int) -> tuple[ProcessInfo, ...]:
        port = free_port()
        engines = sorted(self.client.ids)[:processes]
        pending = [
            self.client[e].apply_async(_join, port, i, processes, devices, int(self.timeout))
            for i, e in enumerate(engines)
        ]
        infos = [
            ProcessInfo(engine=e, **self._get(ar, f"process {i} (engine {e})", "joining"))
            for i, (e, ar) in enumerate(zip(engines, pending, strict=True))
        ]
        return tuple(sorted(infos, key=lambda p: p.process_index))

    def _engine_logs(self) -> dict[int, str]:
        """Each engine process's log file (its stdout and stderr), by pid."""
        logs = {}
        for engine_set in getattr(self._cluster, "engines", {}).values():
            for launcher in getattr(engine_set, "launchers", {}).values():
                pid, path = getattr(launcher, "pid", None), getattr(launcher, "output_file", "")
                if pid is not None and path:
                    logs[int(pid)] = str(path)
        return logs

    def _get(self, async_result: Any, who: str, doing: str) -> Any:
        """An engine's result, or a ProcessError naming it (raised, timed out), or naming a
        process that died meanwhile (then the whole cluster is stopped: a jax program cannot
        go on without one of its processes)."""
        self._remember([async_result])
        deadline = time.monotonic() + self.timeout
        while not async_result.ready():
            dead = self._dead()
            if dead is not None:
                raise self._died(dead, who, doing)
            if time.monotonic() > deadline:
                raise ProcessError(
                    problem(
                        who, f"did not finish {doing} within {self.timeout:.0f} s",
                        "check that every process runs the same program (same shapes, same "
                        "collectives); cluster.stop() stops them all",
                    )
                )  # fmt: skip
            async_result.wait(POLL)
        try:
            return async_result.get()
        except Exception as err:
            dead = self._dead_after(err)
            if dead is not None:
                raise self._died(dead, who, doing) from err
            raise ProcessError(
                problem(
                    who,
                    f"failed while {doing}: {_engine_error(err)}",
                    "fix what raised it there (its traceback is this error's cause)",
                )  # fmt: skip
            ) from err

    def _remember(self, pending: list[Any]) -> None:
        """Keep the latest tasks sent (for what each process printed, should one die)."""
        self._sent = [*self._sent, *(ar for ar in pending if ar not in self._sent)][-50:]

    def _died(self, dead: ProcessInfo, who: str, doing: str) -> ProcessError:
        """The error for a process that died: its last output, and what jax's messages say
        (looked for in every process's output and in the engines' own logs, where native
        aborts write; for up to :data:`CAUSE_WAIT` s, as other processes' output may still be
        on its way); the whole cluster is stopped first."""
        deadline = time.monotonic() + CAUSE_WAIT
        order = sorted(self.processes, key=lambda p: p is not dead)
        while True:
            said = {p.process_index: self._printed(p) + self._log_lines(p.pid) for p in order}
            found = next(
                ((i, c) for i, lines in said.items() if (c := known_cause(lines)) is not None),
                None,
            )
            if found is not None or time.monotonic() > deadline:
                break
            time.sleep(POLL / 2)
        last = " | ".join(tail(self._printed(dead) or said[dead.process_index], 3))
        self.stop()
        what = f"died while {who} was {doing}; every process was stopped"
        fix = (
            "start a new cluster (sv.cluster(...)); look for what killed it (out of memory, "
            "a signal) in the terminal that runs Jupyter"
        )
        if found is not None:
            process, (meaning, cause_fix, line) = found
            what += f'. Cause: {meaning} (process {process} wrote "{line}")'
            fix = f"{cause_fix}, then start a new cluster (sv.cluster(...))"
        if last:
            what += f"; its last output: {last}"
        return ProcessError(problem(f"process {dead.process_index} (pid {dead.pid})", what, fix))

    def _printed(self, process: ProcessInfo) -> list[str]:
        """What ``process`` printed in the tasks sent to it (stdout, then stderr), as the
        notebook got it; ANSI colours left out."""
        text = ""
        for ar in self._sent:
            meta = ar.metadata
            for m in meta if isinstance(meta, list) else [meta]:
                if m.get("engine_id") == process.engine:
                    text += (m.get("stdout") or "") + (m.get("stderr") or "")
        return [line for line in _ANSI.sub("", text).splitlines() if line.strip()]

    def _log_lines(self, pid: int) -> list[str]:
        """What an engine process wrote to its own stdout and stderr (ipyparallel's log file
        for it), or [] when there is none to read."""
        path = self._logs.get(pid)
        try:
            text = Path(path).read_text(errors="replace") if path else ""
        except OSError:
            return []
        lines = _ANSI.sub("", text).splitlines()
        return [line for line in lines if line.strip() and not _ENGINE_LOG.match(line)]

    def _dead_after(self, err: BaseException) -> ProcessInfo | None:
        """The process that died, when ipyparallel says an engine died (it may notice before
        the process is gone: wait a little for it)."""
        if getattr(err, "ename", None) != "EngineError":
            return self._dead()
        deadline = time.monotonic() + 5 * POLL
        while (dead := self._dead()) is None and time.monotonic() < deadline:
            time.sleep(POLL / 5)
        return dead

    def _dead(self) -> ProcessInfo | None:
        """The first process whose engine is no longer running, if any."""
        for p in getattr(self, "processes", ()):
            try:
                os.kill(p.pid, 0)
            except ProcessLookupError:
                return p
            except PermissionError:  # alive, someone else's
                continue
        return None

    @property
    def alive(self) -> bool:
        """Whether the engines are still running (not stopped, none died)."""
        return self._cluster is not None and self._dead() is None

    def _check_free(self, doing: str = "being sent work") -> None:
        """Refuse to send work to a cluster that was stopped or lost a process (ipyparallel
        itself would raise NoEnginesRegistered), or while a live run uses the processes (from
        another thread): the engines must all run the same steps in the same order."""
        if self._cluster is None:
            raise ProcessError(
                problem("the cluster", f"it was stopped, so it cannot be {doing}",
                        "start a new one: sv.cluster(processes=..., devices_per_process=...)")
            )  # fmt: skip
        dead = self._dead()
        if dead is not None:
            raise self._died(dead, f"process {dead.process_index}", doing)
        run = self._live
        if run is not None and run.running and threading.current_thread() is not run.thread:
            raise ProcessError(
                problem(
                    "the cluster", "a live run is using its processes",
                    "wait for it to end (run.wait()) or stop it (run.stop()) first",
                )
            )  # fmt: skip

    def live(
        self,
        step: str,
        state: str | tuple[str, ...],
        batches: str,
        steps: int | None = None,
        every: int = 1,
        *,
        title: str = "",
    ) -> Any:
        """Run training steps in every process and watch them live here; returns at once.

        The step, state and batches are the *names* of variables a ``%%px`` cell made in every
        process (the arrays live there; a dotted name such as ``"mlp.train_step"`` works), with :func:`shardviz.live`'s convention:
        ``step(*state, batch) -> (*new_state, loss)``; ``state`` is one name, or a tuple of
        names for several arguments; ``batches`` names one batch, an iterator or a callable
        ``step index -> batch``. When the run ends, the engines' state variables hold the
        latest state, so a ``%%px`` cell can go on from there.

        The view is :func:`shardviz.live`'s, with each process's own step time (one line
        each; the step is the slowest process's) and the memory of every process's devices.

        Returns:
            The running :class:`~shardviz.engines_live.ClusterLiveRun`: ``.view``,
            ``.wait()``, ``.stop()``, ``.losses``, ``.step_ms``, ``.host_step_ms``.
            Until it ends, the cluster's own methods refuse to run (the processes are busy).

        Raises:
            ProcessError: a name is not defined in a process, or the arguments are wrong
                (the message names the process and the fix).
        """
        from shardviz.engines_live import ClusterLiveRun
        from shardviz.widgets.live.widget import LiveWidget

        self._check_free()
        view = LiveWidget(title=title or f"training {step} on {len(self.processes)} processes",
                        total_steps=steps or 0)  # fmt: skip
        run = ClusterLiveRun(self, step, state, batches, steps=steps, every=every, view=view)
        self._live = run
        return run.start()

    def execute(self, code: str) -> None:
        """Run ``code`` in every process at once (what a ``%%px`` cell does)."""
        self._check_free("running code")
        pending = [self.client[p.engine].execute(code, block=False) for p in self.processes]
        self._remember(pending)
        for p, ar in zip(self.processes, pending, strict=True):
            self._get(ar, f"process {p.process_index}", "running code")

    @property
    def view(self) -> Any:
        """A view on every process's engine, in process order."""
        return self.client[[p.engine for p in self.processes]]

    def activate(self) -> Cluster:
        """Make ``%px`` / ``%%px`` run on every process (done by :func:`cluster`)."""
        self.view.activate()
        return self

    def run(self, fn: Any, *args: Any, **kwargs: Any) -> list[Any]:
        """``fn(*args, **kwargs)`` in every process at once (as SPMD code must run); results
        in process order."""
        self._check_free(f"running {getattr(fn, '__name__', fn)}")
        pending = [self.client[p.engine].apply_async(fn, *args, **kwargs) for p in self.processes]
        self._remember(pending)
        return [
            self._get(ar, f"process {p.process_index}", f"running {getattr(fn, '__name__', fn)}")
            for p, ar in zip(self.processes, pending, strict=True)
        ]

    def pull(self, name: str, process: int = 0) -> Any:
        """The value ``name`` holds in ``process``'s namespace (after ``%%px`` cells)."""
        self._check_free(f"sending {name!r}")
        info = self._process(process)
        ar = self.client[info.engine].pull(name, block=False)
        return self._get(ar, f"process {process}", f"sending {name!r}")

    def _process(self, process: int) -> ProcessInfo:
        for p in self.processes:
            if p.process_index == process:
                return p
        raise ProcessError(
            problem(
                f"process {process}", "the cluster has no such process",
                f"use 0 .. {len(self.processes) - 1}",
            )
        )  # fmt: skip

    def stop(self) -> None:
        """Stop every engine and the controller (idempotent)."""
        cluster, self._cluster = getattr(self, "_cluster", None), None
        if self.client is not None:
            with contextlib.suppress(Exception):  # stopping anyway
                self.client.close()
        if cluster is not None:
            with contextlib.suppress(Exception):  # engines already gone
                cluster.stop_cluster_sync()

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        procs = ", ".join(f"p{p.process_index}: {p.local_devices} devices" for p in self.processes)
        total = self.processes[0].global_devices if self.processes else 0
        return f"Cluster({len(self.processes)} processes, {total} devices: {procs})"


def _engine_error(err: BaseException) -> str:
    """An ipyparallel RemoteError as the engine's exception type and message."""
    ename, evalue = getattr(err, "ename", None), getattr(err, "evalue", None)
    return f"{ename}: {evalue}" if ename else f"{type(err).__name__}: {err}"


def cluster(
    processes: int = 2, devices_per_process: int = 4, *, timeout: float = START_TIMEOUT
) -> Cluster:
    """Start ``processes`` local jax processes (engines) with ``devices_per_process`` CPU
    devices each, joined by ``jax.distributed``, and make ``%%px`` cells run on all of them.

    Raises:
        ProcessError: an engine failed to start or to join within ``timeout`` seconds.
        ValueError: fewer than one process or device.
    """
    if processes < 1 or devices_per_process < 1:
        raise ValueError(
            f"a cluster needs at least one process and one device each (got {processes} "
            f"processes x {devices_per_process} devices)"
        )
    c = Cluster(processes, devices_per_process, timeout)
    try:
        from IPython import get_ipython

        if get_ipython() is not None:
            c.activate()
    except ImportError:  # pragma: no cover - IPython comes with jupyter
        pass
    return c
