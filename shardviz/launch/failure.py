"""Say why a launch failed: which process, how, its last meaningful output, and what jax's own
messages in the output mean (jax reports a collective mismatch or a dead peer in log lines
buried under native stack traces)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from shardviz.errors import problem
from shardviz.launch.result import LaunchResult, ProcessResult

#: Lines that say nothing to a user: native stack frames, crash-handler chatter, gloo's
#: connection log, jax noting the launcher's own SIGTERM.
_NOISE = re.compile(
    r"^\s*(@\s+0x|\*\*\* |PC: @|https://symbolize|\[Gloo\] Rank|=== Source Location)"
    r"|Expected number of connected peer ranks"
    r"|RAW: |preemption_notifier.cc:\d+\] SIGTERM caught|^\s*$"
)

#: Phrases in jax's (and gloo's) output, and what they mean for the processes of a launch.
KNOWN: tuple[tuple[str, str, str], ...] = (
    (
        "collective mismatch",
        "the processes ran different programs: one collective's sizes differ between them "
        "(jax aborted: gloo received a different number of bytes than it expected)",
        "make every process build the same shapes and shardings and call the same jitted "
        "functions in the same order",
    ),
    (
        "Shutdown barrier has failed",
        "a process finished while another still waited (jax's shutdown barrier timed out): "
        "the processes ran different numbers of collective steps",
        "make every process run the same steps (e.g. the same number of batches)",
    ),
    (
        "Gloo context initialization failed",
        "a process waited 30 s for the others to join a collective (jax's gloo setup timed "
        "out): another process failed first, or the processes run different collectives",
        "look at the process that failed first; make every process call the same jitted "
        "functions in the same order",
    ),
    (
        "stopped sending heartbeats",
        "jax noticed that a process stopped (its heartbeats stopped) and aborted the others",
        "look at the first process that failed",
    ),
    (
        "should only be called once",
        "the script calls jax.distributed.initialize itself, but the launcher already did",
        "remove the call from the script (or guard it with jax.distributed.is_initialized())",
    ),
)

#: Lines of output quoted per process.
TAIL = 8


def tail(lines: Sequence[str], n: int = TAIL) -> list[str]:
    """The last ``n`` lines that say something (native stack frames and the like left out)."""
    return [line for line in lines if not _NOISE.search(line)][-n:]


def _quote(p: ProcessResult, n: int = TAIL) -> str:
    lines = tail([line for _, line in p.output], n)
    if not lines:
        return f"process {p.index} wrote nothing"
    body = "\n".join(f"  [p{p.index}] {line}" for line in lines)
    return f"last output of process {p.index}:\n{body}"


def known_cause(
    lines: Sequence[str], known: Sequence[tuple[str, str, str]] = KNOWN
) -> tuple[str, str, str] | None:
    """``(meaning, fix, line)`` for the first of ``known``'s phrases found in ``lines`` (a
    process's output), with the line it was found in; None when none is there."""
    for phrase, meaning, fix in known:
        for line in lines:
            if phrase in line:
                return meaning, fix, line.strip()[:300]
    return None


def _failed(p: ProcessResult) -> bool:
    """``p`` exited nonzero or died by itself (not stopped by the launcher)."""
    return not p.ok and not p.stopped


def _known(result: LaunchResult, first: int | None) -> tuple[str, str, str, int] | None:
    """The first known jax message in the output, looking at process ``first`` first: its
    meaning (with the line it was found in), its fix, its phrase and the process that wrote it."""
    order = sorted(result.processes, key=lambda p: p.index != first)
    for entry in KNOWN:
        for p in order:
            found = known_cause([line for _, line in p.output], (entry,))
            if found is not None:
                meaning, fix, quote = found
                return f'{meaning} (process {p.index} wrote "{quote}")', fix, entry[0], p.index
    return None


def _names(indices: Sequence[int]) -> str:
    names = [f"process {i}" for i in indices]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def failure_message(result: LaunchResult, timeout: float | None = None) -> str | None:
    """Why the launch failed, in the project's ``where: what. Fix: fix.`` form followed by the
    last output of the processes concerned; None when it did not fail."""
    if result.ok:
        return None
    stopped = [p.index for p in result.processes if p.stopped]
    if result.failed is not None:
        p = result.processes[result.failed]
        what = p.describe()
        # Peers that failed by themselves too: which of them exits first is a race (a process
        # that aborts on a collective mismatch resets its peer's connection), so name them all.
        also = [q.describe() for q in result.processes if q.index != p.index and _failed(q)]
        if also:
            what += f" ({', '.join(also)} too)"
        if stopped:
            what += f", so {_names(stopped)} {'was' if len(stopped) == 1 else 'were'} stopped"
        known = _known(result, p.index)
        quoted = [_quote(p)]
        if known is not None:
            what += f". Cause: {known[0]}"
            fix = known[1]
            if known[3] != p.index:
                quoted.append(_quote(result.processes[known[3]]))
        elif p.returncode == -9:
            fix = (
                "something outside the program killed it (kill -9, or the system's "
                "out-of-memory killer); its last output is below"
            )
        else:
            fix = f"read process {p.index}'s last output below (a traceback names the cause)"
        return problem("launch", what, fix) + "\n" + "\n".join(quoted)

    running = list(result.still_running)
    limit = f"the {timeout:g} s timeout" if timeout is not None else "the timeout"
    what = f"{_names(running)} still ran after {limit} and {'was' if len(running) == 1 else 'were'} stopped"
    finished = [p.index for p in result.processes if not p.stopped]
    if finished:
        what += f" ({_names(finished)} had finished)"
    known = _known(result, None)
    if known is not None:
        what += f". Cause: {known[0]}"
    what += (
        ". Processes that disagree on the program (different shapes, shardings, or numbers of "
        "collective steps) wait for each other in a collective that never completes"
    )
    fix = (
        "make every process run the same jitted steps on the same shapes; if the program is "
        "only slow, raise --timeout (run(..., timeout=))"
    )
    quoted = [_quote(result.processes[i]) for i in running]
    return problem("launch", what, fix) + "\n" + "\n".join(quoted)
