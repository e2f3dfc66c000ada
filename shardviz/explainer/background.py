"""Run slow work (compile, run) in a background thread; the newest request wins.

A notebook must stay responsive while a program compiles, and a user editing a spec fires
requests faster than they finish. :class:`Latest` numbers every request (its generation);
a result, an error or a status from a request older than the newest one submitted is dropped,
so what the user sees always belongs to what they typed last. Nothing is ever raised into the
kernel: errors become a status ``"error"`` and a short message.

Every object that starts threads (a :class:`Latest`, a live run, a process group) is
:func:`own`-ed here: before the interpreter shuts down, :func:`close_all` tells each to stop and
joins its threads, since a thread still inside XLA while the interpreter tears down aborts the
whole process ("FATAL: exception not rethrown").
"""

from __future__ import annotations

import atexit
import contextlib
import threading
import time
import weakref
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from shardviz.errors import ShardvizError

__all__ = [
    "IDLE",
    "STATUSES",
    "Closable",
    "Latest",
    "OwnedPool",
    "Stage",
    "Superseded",
    "close_all",
    "own",
    "short_message",
]

IDLE, COMPILING, RUNNING, DONE, ERROR = "", "compiling", "running", "done", "error"
#: Every status a request reports, in the order it goes through them.
STATUSES = (IDLE, COMPILING, RUNNING, DONE, ERROR)

#: Called with (status, error message); the message is ``""`` unless the status is "error".
StatusCallback = Callable[[str, str], None]
#: Called with the newest request's result.
ResultCallback = Callable[[Any], None]


class Superseded(Exception):
    """Raised inside a job by its ``stage`` callback when a newer request was submitted.

    The job stops early (no point compiling or running a configuration nobody will see);
    :class:`Latest` drops it silently.
    """


def short_message(err: BaseException) -> str:
    """What to show for an error: a shardviz error's own message (it already says what to do),
    otherwise the exception type and the first line of its message."""
    if isinstance(err, ShardvizError):
        return str(err)
    lines = str(err).strip().splitlines()
    first = lines[0].strip() if lines else ""
    return f"{type(err).__name__}: {first}" if first else type(err).__name__


class Stage:
    """Handed to a job: ``stage("running")`` reports progress, or raises :class:`Superseded`
    when a newer request was submitted (so a stale job stops at its next stage)."""

    def __init__(self, owner: Latest, generation: int) -> None:
        self._owner = owner
        self.generation = generation

    @property
    def stale(self) -> bool:
        """Whether a newer request was submitted since this one."""
        return self._owner.generation != self.generation

    def __call__(self, status: str) -> None:
        if status not in (COMPILING, RUNNING):
            raise ValueError(f"a job reports 'compiling' or 'running', not {status!r}")
        if not self._owner._report(self.generation, status, ""):
            raise Superseded(f"request {self.generation} was superseded")


#: A job: called in a background thread with its :class:`Stage`; returns the result to show.
Job = Callable[[Stage], Any]


class Latest:
    """Run jobs in background threads and deliver only the newest one's outcome.

    Each :meth:`submit` starts a daemon thread and reports ``"compiling"`` at once; the job
    may report ``"running"`` through its :class:`Stage`; then ``on_result(result)`` and
    ``"done"``, or ``"error"`` with :func:`short_message`. Reports from a request older than
    the newest submitted are dropped. Callbacks run under a lock (so a stale delivery can never
    interleave with a newer submit); an exception in a callback becomes an ``"error"`` status.

    Args:
        on_result: receives the newest request's result (e.g. ``explorer.show``).
        on_status: receives ``(status, error)`` on every change (e.g. sets ``explorer.status``
            and ``explorer.error``).
    """

    def __init__(
        self,
        on_result: ResultCallback | None = None,
        on_status: StatusCallback | None = None,
    ) -> None:
        self._on_result = on_result
        self._on_status = on_status
        self._lock = threading.RLock()
        self._settled = threading.Condition(self._lock)
        self._generation = 0
        self._finished = 0  # newest generation whose outcome was delivered
        self._threads: set[threading.Thread] = set()
        self.status = IDLE
        self.error = ""
        self.result: Any = None
        own(self)

    @property
    def generation(self) -> int:
        """The newest request's number (0 before any request)."""
        return self._generation

    def submit(self, job: Job) -> int:
        """Start ``job`` in a background thread; returns its generation number."""
        with self._lock:
            self._generation += 1
            generation = self._generation
            self._set_status(COMPILING, "")
            thread = threading.Thread(
                target=self._work, args=(job, generation), name=f"shardviz-{generation}",
                daemon=True,
            )  # fmt: skip
            self._threads.add(thread)
        thread.start()
        return generation

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the newest request has finished (result or error shown).

        Returns False if ``timeout`` seconds passed first. Older requests may still be
        running; their outcomes will be dropped.
        """
        with self._settled:
            return self._settled.wait_for(lambda: self._finished == self._generation, timeout)

    def join(self, timeout: float | None = None) -> bool:
        """Block until every request, stale ones too, has finished; False on timeout."""
        with self._settled:
            return self._settled.wait_for(lambda: not self._threads, timeout)

    def supersede(self) -> None:
        """Make every request stale without starting another, and return at once: a job
        stops at its next stage (or ``stage.stale`` check), and its outcome is dropped.

        For work a caller wants out of the way now (e.g. fix trials while the user's next
        edit compiles), not only when it next submits.
        """
        with self._settled:
            self._generation += 1
            self._finished = self._generation
            self._settled.notify_all()

    def close(self, timeout: float | None = None) -> bool:
        """Supersede every request (a job stops at its next stage; its outcome is dropped)
        and wait for their threads; False if some were still running after ``timeout``."""
        self.supersede()
        return self.join(timeout)

    # --- in the background thread -------------------------------------------------------

    def _work(self, job: Job, generation: int) -> None:
        try:
            result = job(Stage(self, generation))
        except Superseded:
            pass
        except BaseException as err:  # never raise into the kernel
            self._finish(generation, None, short_message(err))
        else:
            self._finish(generation, result, None)
        finally:
            with self._settled:
                self._threads.discard(threading.current_thread())
                self._settled.notify_all()

    def _finish(self, generation: int, result: Any, error: str | None) -> None:
        with self._lock:
            if generation != self._generation:
                return
            if error is None:
                try:
                    if self._on_result is not None:
                        self._on_result(result)
                    self.result = result
                except Exception as err:  # the view refused it: say so, do not raise
                    error = short_message(err)
            self._set_status(DONE if error is None else ERROR, error or "")
            self._finished = generation
            self._settled.notify_all()

    def _report(self, generation: int, status: str, error: str) -> bool:
        """Report a status for ``generation`` if it is still the newest; False if stale."""
        with self._lock:
            if generation != self._generation:
                return False
            self._set_status(status, error)
            return True

    def _set_status(self, status: str, error: str) -> None:
        if (status, error) == (self.status, self.error):
            return
        self.status, self.error = status, error
        if self._on_status is None:
            return
        with contextlib.suppress(Exception):  # a broken status display must not stop the work
            self._on_status(status, error)


class Closable(Protocol):
    """Owns threads: ``close(timeout)`` tells them to stop, joins them, and says whether they
    all ended within ``timeout`` seconds."""

    def close(self, timeout: float | None = None) -> bool: ...


#: Every owner of threads not yet collected: closed before the interpreter exits.
_OWNERS: weakref.WeakSet[Any] = weakref.WeakSet()
_exit_hooked = threading.Lock()
_hooked: list[bool] = []

#: Longest wait at exit for one owner's work in progress (a compile cannot be interrupted).
EXIT_WAIT_SECONDS = 120.0


def own(owner: Closable) -> None:
    """Close ``owner`` (stop and join its threads) before the interpreter exits."""
    _OWNERS.add(owner)
    with _exit_hooked:
        if _hooked:
            return
        # threading's own exit hooks run before any atexit function (jax's included, which
        # tears its backends down) and before the interpreter stops daemon threads.
        register = getattr(threading, "_register_atexit", atexit.register)
        with contextlib.suppress(RuntimeError):  # already shutting down: nothing to add
            register(close_all)
            _hooked.append(True)


def close_all(timeout: float | None = EXIT_WAIT_SECONDS) -> bool:
    """Close every owner (what runs at exit); False if some thread was still running after
    ``timeout`` seconds."""
    return all([owner.close(timeout) for owner in list(_OWNERS)])


class OwnedPool(ThreadPoolExecutor):
    """A thread pool that is :func:`own`-ed: before the interpreter exits, work not started is
    cancelled and its threads are joined (a ``with`` block or :meth:`shutdown` still ends it
    as any pool's).

    For a pool whose work may still run after the call that made it returns (an error left
    it behind, or it serves a whole process), where a thread still inside XLA at shutdown
    would abort the process.
    """

    def __init__(self, max_workers: int, name: str) -> None:
        super().__init__(max_workers=max_workers, thread_name_prefix=name)
        own(self)

    def close(self, timeout: float | None = None) -> bool:
        """Cancel the work not started and join the threads; whether they all ended within
        ``timeout`` seconds."""
        self.shutdown(wait=False, cancel_futures=True)
        end = None if timeout is None else time.monotonic() + timeout
        threads = list(getattr(self, "_threads", ()))
        for thread in threads:
            thread.join(None if end is None else max(0.0, end - time.monotonic()))
        return not any(t.is_alive() for t in threads)
