"""What the compiler says on stderr while it compiles, kept for the report.

XLA's passes (and libtpu as it starts) log through C++ straight to file descriptor 2, not to
Python's ``sys.stderr``. A Jupyter kernel (ipykernel 7) turns fd 2 into a pipe whose bytes it
shows in the running cell, so without care a learner's cell fills with the compiler's
warnings. The one a user most needs is the SPMD partitioner's "Involuntary full
rematerialization" warning (the compiler could not reshard a value efficiently, so it
replicates it and splits it again): shardviz shows it as a finding instead.

:func:`compiler_log` copies fd 2 during a call into XLA and afterwards passes every byte on
unchanged to the process's own terminal (:func:`terminal_fd`: the terminal that started
Jupyter under a kernel, fd 2 anywhere else), never into a cell;
:func:`full_rematerializations` reads those warnings.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

# fd 2 is one per process: two compiles on two threads must not both redirect it (the second
# would restore the first's copy). A compile on another thread waits for the copy in progress
# (a compile that ran without one would lose its warnings, and its report their findings,
# depending on what else happened to compile then); a copy nested in the same thread's copy
# is left empty (the outer one keeps the text).
_FD2 = threading.Lock()
_owner: list[int | None] = [None]


@dataclass
class CompilerLog:
    """The text written to fd 2 during the block ("" when it could not be copied)."""

    text: str = ""


def terminal_fd() -> int:
    """Where the native log goes on: ``sys.stderr``'s own descriptor. Under ipykernel that
    is the kernel's copy of the terminal it was started from (fd 2 itself is the pipe into
    the cell); in a plain process it is fd 2."""
    try:
        fd = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # a stream with no descriptor (captured)
        return 2
    return fd if isinstance(fd, int) and fd >= 0 else 2


@contextmanager
def compiler_log(wait: bool = True) -> Iterator[CompilerLog]:
    """Copy what is written to fd 2 during the block into the yielded log, then write it on
    to :func:`terminal_fd` (so in a notebook it reaches the terminal, not the cell).

    ``wait=False``, for a block whose log nobody reads (a parser's warnings): when another
    thread is copying fd 2 already, its copy takes this block's output too and the block
    runs at once (the dump thread must not wait for the compile it reads beside)."""
    log = CompilerLog()
    if _owner[0] == threading.get_ident():
        yield log
        return
    if not _FD2.acquire(blocking=wait):
        yield log
        return
    _owner[0] = threading.get_ident()
    try:
        try:
            sys.stderr.flush()
            saved = os.dup(2)
        except (OSError, ValueError):  # no fd 2 (an embedded interpreter): nothing to copy
            yield log
            return
        with tempfile.TemporaryFile() as copy:
            os.dup2(copy.fileno(), 2)
            try:
                yield log
            finally:
                os.dup2(saved, 2)
                os.close(saved)
                copy.seek(0)
                data = copy.read()
                if data:
                    _write_all(terminal_fd(), data)
                log.text = data.decode("utf-8", "replace")
    finally:
        _owner[0] = None
        _FD2.release()


def _write_all(fd: int, data: bytes) -> None:
    """Write every byte (a pipe may take a large log in parts); a closed terminal drops it."""
    try:
        while data:
            data = data[os.write(fd, data) :]
    except OSError:
        pass


@dataclass(frozen=True)
class FullRemat:
    """One "Involuntary full rematerialization" warning of the SPMD partitioner."""

    source_sharding: str
    target_sharding: str
    #: The HLO instruction it was for, and its ``op_name`` (the jax name of the value).
    instruction: str
    op_name: str
    #: The instruction's element type and dims as the warning prints them (``f32``,
    #: ``(4, 8)``; empty when it prints none).
    dtype: str = ""
    dims: tuple[int, ...] | None = None


_REMAT = re.compile(
    r"Involuntary full rematerialization\. The compiler cannot go from sharding (?P<src>\{.*?\}) "
    r"to (?P<dst>\{.*?\}) efficiently for HLO operation %(?P<ins>[^\s=]+)"
    r"(?P<rest>.*?)(?:$|As the last resort)",
    re.MULTILINE,
)
_OP_NAME = re.compile(r'op_name="((?:[^"\\]|\\.)*)"')
_SHAPE = re.compile(r"^ = (?P<dtype>[a-z]+[0-9]*)\[(?P<dims>[0-9,]*)\]")


def full_rematerializations(log: str) -> tuple[FullRemat, ...]:
    """The partitioner's involuntary full rematerializations in ``log``, in order."""
    out = []
    for m in _REMAT.finditer(log):
        op = _OP_NAME.search(m.group("rest"))
        shape = _SHAPE.match(m.group("rest"))
        dims = tuple(int(d) for d in shape.group("dims").split(",") if d) if shape else None
        out.append(
            FullRemat(
                m.group("src"), m.group("dst"), m.group("ins"), op.group(1) if op else "",
                shape.group("dtype") if shape else "", dims,
            )
        )  # fmt: skip
    return tuple(out)
