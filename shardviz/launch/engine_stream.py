"""The standard streams of a cluster's engine (see :mod:`shardviz.engines`).

ipykernel's streams also capture what native code writes to file descriptors 1 and 2 and
forward it from a thread; when jax aborts a process (a collective mismatch, a dead peer), the
message it writes last dies with that thread. An engine started with this stream leaves the
descriptors alone: Python's output still reaches the notebook, native output goes to the
engine's log file, where it outlives the process and the cluster quotes it.
"""

from __future__ import annotations

from typing import Any

from ipykernel.iostream import OutStream


class EngineOutStream(OutStream):
    """An ``OutStream`` that does not watch the file descriptor it stands for."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["watchfd"] = False
        super().__init__(*args, **kwargs)
