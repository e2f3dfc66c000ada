"""Read the compiler's dumps while the compiler is still running.

XLA writes the module before and after SPMD partitioning early in a compile (about a fifth
of the way through a 256-chip TPU compile) and then spends most of its time in the
backend's passes, with the GIL released and one of two cores mostly idle. Work that needs
only those texts (the completed shardings, the partitioned ledger, the global cost) can run
on a thread meanwhile instead of after the compile. The TPU compiler's final module
(``after_codegen``) comes about a tenth of the compile before its end: it can be parsed then.

A result is only ever used for the exact texts the compiler left: when the compile is done,
:meth:`DumpWatch.finish` compares the texts the thread read with the final files and drops
the result if they differ (a file read while still being written) or the work failed; the
caller then does the work itself. A result is never wrong, at worst not early.
"""

from __future__ import annotations

import contextlib
import glob
import os
import threading
import time
from collections.abc import Callable
from typing import Any

#: The propagation dump (before the partitioner) and the partitioned module (after it). The
#: pass pipeline writes them in that order, so once the second exists the first is whole.
PROPAGATED = "*before_*spmd-partitioning.txt"
PARTITIONED = "*after_*spmd-partitioning.before_*.txt"
#: How often a thread looks for its dump: every 3 ms at first, then every hundredth of the
#: time it has waited (up to 50 ms): a look costs about 0.1 ms (a folder walk), so a
#: minutes-long compile is not slowed by thousands of them, and a dump is seen within 1% of
#: the wait.
_POLL_SECONDS, _POLL_SHARE, _POLL_MAX_SECONDS = 0.003, 0.01, 0.05


def find_dump(folder: str, pattern: str) -> str | None:
    """The first dumped file matching ``pattern`` (``None`` if absent)."""
    files = sorted(glob.glob(os.path.join(folder, "**", pattern), recursive=True))
    return files[0] if files else None


def read_dump(folder: str, pattern: str) -> str:
    """The first dumped file matching ``pattern``, as text ("" if absent)."""
    path = find_dump(folder, pattern)
    if path is None:
        return ""
    with open(path, encoding="utf-8") as f:
        return f.read()


#: How far a thread working beside the compile lowers its priority (Linux nice, this thread
#: alone; an unprivileged process cannot raise it again, so it is the thread's for good).
YIELDING_NICE = 10


def _yield_to_the_compiler() -> None:
    """Lower this thread's scheduling priority: the compiler's own threads keep the cores
    they use (XLA:CPU compiles its kernels on a pool as wide as the machine), and the work
    here fills the idle ones."""
    with contextlib.suppress(AttributeError, OSError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), YIELDING_NICE)


#: One piece of work: the dumps it reads (patterns; the last is written last, and its being
#: whole means the others are) and what to do with their texts.
Stage = tuple[tuple[str, ...], Callable[..., Any]]


class DumpWatch:
    """Runs each stage's work on a thread, in order (a stage may use what the one before
    found), as soon as its dumps in ``folder`` are written; :meth:`finish` gives each
    stage's result if it read the final texts.

    ``yielding``: the thread runs at a lower priority than the compile. Right where the work
    is small beside the compile still to come and the compiler leaves moments idle: it fills
    those instead of slowing the compile. Wrong where the compiler keeps every core busy to
    its end: starved until then, the work would run alone afterwards while the caller waits.
    """

    def __init__(self, folder: str, stages: list[Stage], yielding: bool = False) -> None:
        self._folder = folder
        self._stages = stages
        self._yielding = yielding
        self._stop = threading.Event()
        self._done: list[tuple[tuple[str, ...], Any] | None] = [None] * len(stages)
        self._results: list[Any] | None = None
        self._thread = threading.Thread(target=self._run, name="shardviz-dump-watch", daemon=True)

    def start(self) -> DumpWatch:
        self._thread.start()
        return self

    def _run(self) -> None:
        if self._yielding:
            _yield_to_the_compiler()
        for i, (patterns, work) in enumerate(self._stages):
            texts = self._wait_for(patterns)
            if texts is None:
                return
            try:
                self._done[i] = (texts, work(*texts))
            except Exception:  # read too early, or a format the work cannot read: done later
                self._done[i] = None

    def _wait_for(self, patterns: tuple[str, ...]) -> tuple[str, ...] | None:
        path, size = None, -1
        start = time.monotonic()
        while not self._stop.wait(
            min(_POLL_MAX_SECONDS, max(_POLL_SECONDS, _POLL_SHARE * (time.monotonic() - start)))
        ):
            path = path or find_dump(self._folder, patterns[-1])
            if path is None:
                continue
            # Whole once its size holds still between two polls and the module is closed.
            now = os.path.getsize(path)
            if now != size:
                size = now
                continue
            with open(path, encoding="utf-8") as f:
                last = f.read()
            if not last.rstrip().endswith("}"):
                size = -1
                continue
            return (*(read_dump(self._folder, p) for p in patterns[:-1]), last)
        return None

    def finish(self, read: Callable[[str], str] | None = None) -> list[Any]:
        """Stop watching (waiting for work under way) and give each stage's result: ``None``
        when it did not run or the texts it read are not the files the compiler left.

        ``read(pattern)`` gives a final file's text (default: read it from the folder); a
        caller that reads the same files anyway passes its own, so each is read once.
        """
        if self._results is None:
            self._stop.set()
            self._thread.join()
            read = read or (lambda p: read_dump(self._folder, p))
            self._results = []
            for (patterns, _), done in zip(self._stages, self._done, strict=True):
                final = tuple(read(p) for p in patterns)
                self._results.append(done[1] if done is not None and done[0] == final else None)
        return self._results
