"""The coordinator's port: checked before any worker starts, so a busy port is a clear error
instead of jax's own failure (process 0 stops with "Failed to start RPC server", naming no
port, while the others wait ``initialization_timeout`` seconds on whatever holds the port)."""

from __future__ import annotations

import socket

from shardviz.errors import ProcessError, problem

#: Where the coordinator (jax.distributed's service, in process 0) listens: this machine only.
HOST = "127.0.0.1"
#: The port tried first when none is given (jax's own default coordinator port on Cloud TPU).
DEFAULT_PORT = 8476


def port_in_use(port: int, host: str = HOST) -> bool:
    """Whether something already holds ``port``: a bind as the coordinator does it fails.

    ``SO_REUSEADDR`` is set as gRPC sets it, so connections of an earlier run still closing
    (``TIME_WAIT``) do not count, while a socket listening or bound there does.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return True
    return False


def free_port(host: str = HOST) -> int:
    """A port nothing holds now (the system's choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def choose_port(port: int | None, host: str = HOST) -> tuple[int, str | None]:
    """The coordinator's port and, when it differs from the one tried, a note saying why.

    With ``port`` given it must be free, else :class:`ProcessError`. Without, ``DEFAULT_PORT``
    is used if free, else a free port the system picks.
    """
    if port is not None:
        if not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536:
            raise ProcessError(
                problem("launch", f"port {port!r} is not a port number", "pass 1 .. 65535")
            )
        if port_in_use(port, host):
            raise ProcessError(
                problem(
                    "launch",
                    f"the coordinator port {port} on {host} is already in use (another "
                    "program, or a launch still running, holds it), so no process was started",
                    "pass another --port, or leave --port out to let shardviz pick a free one",
                )
            )
        return port, None
    if not port_in_use(DEFAULT_PORT, host):
        return DEFAULT_PORT, None
    chosen = free_port(host)
    note = f"the coordinator port {DEFAULT_PORT} is in use; using the free port {chosen} instead"
    return chosen, note
