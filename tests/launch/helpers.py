"""Shared by the launch tests: the scripts they run, whether a process is gone, and a port
held busy."""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Iterator
from pathlib import Path

SCRIPTS = Path(__file__).parent / "scripts"


def gone(pid: int) -> bool:
    """Whether process ``pid`` no longer exists (a zombie nobody reaped counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state == "Z"


@contextlib.contextmanager
def held(port: int) -> Iterator[None]:
    """``port`` on 127.0.0.1 busy for the block (held here, or already busy: just as good)."""
    with socket.socket() as s:
        # SO_REUSEADDR: an earlier launch's connections still closing must not stop the bind.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
            s.listen()
        except OSError:  # busy already
            pass
        yield
