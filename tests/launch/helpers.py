"""Shared by the launch tests: the scripts they run, and whether a process is gone."""

from __future__ import annotations

import os
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
