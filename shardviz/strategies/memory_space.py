"""Moving values between a device's HBM and pinned host memory inside a jitted step.

jax computes on device memory only: a step that keeps state in host memory between steps
(ZeRO-Offload's optimizer state, weights streamed per layer) brings it to HBM where it is
used and sends the new state back. One place for those two moves and the memory kind the
strategies keep host trees in.
"""

from __future__ import annotations

from typing import Any

import jax

__all__ = ["HOST_KIND", "to_device", "to_host"]

#: The memory kind strategies keep their ``host`` trees in.
HOST_KIND = "pinned_host"


def to_device(tree: Any) -> Any:
    """``tree`` moved to the device's HBM inside a jitted program (a no-op for arrays
    already there); on host memory arrays the compiler schedules the copies."""
    return jax.device_put(tree, jax.memory.Space.Device)


def to_host(tree: Any) -> Any:
    """``tree`` moved to pinned host memory inside a jitted program."""
    return jax.device_put(tree, jax.memory.Space.Host)
