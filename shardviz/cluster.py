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
import time
from dataclasses import dataclass
from typing import Any

from shardviz.errors import ProcessError, problem
from shardviz.launch.ports import free_port

#: Seconds to wait for the engines to start and for ``jax.distributed`` to join them.
START_TIMEOUT = 120.0
#: Seconds between checks that every engine is still alive while waiting for one.
POLL = 0.5
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


def _ipyparallel() -> Any:
    try:
        import ipyparallel
    except ImportError as err:  # pragma: no cover - installed by make
        raise ImportError(
            "shardviz.cluster needs ipyparallel: pip install 'shardviz[cluster]'"
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
        self._cluster = ipp.Cluster(n=processes, engines="local", log_level=40)
        self.client: Any = None
        self._sent: list[Any] = []
        try:
            self.client = self._cluster.start_and_connect_sync(activate=False)
            self.client.wait_for_engines(processes, timeout=timeout)
            self.processes = self._join(processes, devices_per_process)
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

    def _get(self, async_result: Any, who: str, doing: str) -> Any:
        """An engine's result, or a ProcessError naming it (raised, timed out), or naming a
        process that died meanwhile (then the whole cluster is stopped: a jax program cannot
        go on without one of its processes)."""
        self._sent = [*self._sent[-50:], async_result]  # for a dead engine's last output
        deadline = time.monotonic() + self.timeout
        while not async_result.ready():
            dead = self._dead()
            if dead is not None:
                last = self._last_output(dead.engine)
                self.stop()
                raise ProcessError(
                    problem(
                        f"process {dead.process_index} (pid {dead.pid})",
                        f"died while {who} was {doing}; every process was stopped"
                        + (f"; its last output: {last}" if last else ""),
                        "start a new cluster (sv.cluster(...)); look for what killed it "
                        "(out of memory, a signal) in the terminal that runs Jupyter",
                    )
                )  # fmt: skip
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
            raise ProcessError(
                problem(
                    who,
                    f"failed while {doing}: {_engine_error(err)}",
                    "fix what raised it there (its traceback is this error's cause)",
                )  # fmt: skip
            ) from err

    def _last_output(self, engine: int, lines: int = 3) -> str:
        """The last lines ``engine`` printed (stdout, then stderr) in the tasks sent to it."""
        records = []
        for ar in self._sent:
            meta = ar.metadata
            for m in meta if isinstance(meta, list) else [meta]:
                if m.get("engine_id") == engine:
                    records.append(m)
        text = "".join((m.get("stdout") or "") + (m.get("stderr") or "") for m in records)
        tail = [line for line in text.splitlines() if line.strip()][-lines:]
        return " | ".join(tail)

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

    def execute(self, code: str) -> None:
        """Run ``code`` in every process at once (what a ``%%px`` cell does)."""
        pending = [self.client[p.engine].execute(code, block=False) for p in self.processes]
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
        pending = [self.client[p.engine].apply_async(fn, *args, **kwargs) for p in self.processes]
        return [
            self._get(ar, f"process {p.process_index}", f"running {getattr(fn, '__name__', fn)}")
            for p, ar in zip(self.processes, pending, strict=True)
        ]

    def pull(self, name: str, process: int = 0) -> Any:
        """The value ``name`` holds in ``process``'s namespace (after ``%%px`` cells)."""
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
