"""The coordinator's port: checked before any worker starts, so a busy port is a clear error
instead of jax's own failure (process 0 stops with "Failed to start RPC server", naming no
port, while the others wait ``initialization_timeout`` seconds on whatever holds the port)."""

from __future__ import annotations

import socket
from collections.abc import Callable

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


def pick_port(
    port: int | None,
    *,
    default: int,
    label: str,
    holders: str,
    error: Callable[[str, str], Exception],
    consequence: str = "",
    host: str = HOST,
) -> tuple[int, str | None]:
    """A port to listen on and, when it is not the one tried, a note saying why.

    A ``port`` given must be a port number nothing holds, else ``error(what, fix)`` is raised
    (the fix suggests a port free now). Without one, ``default`` if free, else a free port the
    system picks. ``label`` names the port in messages ("the coordinator port"); ``holders``
    says who may hold it, ``consequence`` what a busy port stopped (", so nothing started").
    """
    if port is not None:
        if not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536:
            raise error(f"port {port!r} is not a port number", "pass 1 .. 65535")
        if port_in_use(port, host):
            raise error(
                f"{label} {port} on {host} is already in use ({holders} holds it){consequence}",
                f"pass another port, e.g. --port {free_port(host)} (free now), or leave "
                "--port out to let shardviz pick one",
            )
        return port, None
    if not port_in_use(default, host):
        return default, None
    chosen = free_port(host)
    return chosen, f"{label} {default} is in use; using the free port {chosen} instead"


def choose_port(port: int | None, host: str = HOST) -> tuple[int, str | None]:
    """The coordinator's port and, when it differs from the one tried, a note saying why.

    With ``port`` given it must be free, else :class:`ProcessError`. Without, ``DEFAULT_PORT``
    is used if free, else a free port the system picks.
    """
    return pick_port(
        port,
        default=DEFAULT_PORT,
        label="the coordinator port",
        holders="another program, or a launch still running,",
        error=lambda what, fix: ProcessError(problem("launch", what, fix)),
        consequence=", so no process was started",
        host=host,
    )
