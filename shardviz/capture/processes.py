"""What differs when a program runs as several jax processes (one per host).

Every process runs the same code, and each holds only its own devices' shards of a global
array. What shardviz checks against one device needs whole values: :func:`host_value` gathers
an array every process holds a part of (a collective: every process must call it, in the same
order, which the same code does). :func:`agreed_max` makes a figure computed from each
process's shards global. With one process both are plain reads.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np


def is_multi_process() -> bool:
    return jax.process_count() > 1


def local_device() -> Any:
    """The device a one-device reference runs on: this process's first."""
    return jax.local_devices()[0]


def host_value(x: Any) -> np.ndarray:
    """``x``'s whole value on the host, gathered from every process when it spans several."""
    if isinstance(x, jax.Array) and not x.is_fully_addressable and not x.is_fully_replicated:
        from jax.experimental import multihost_utils

        return np.asarray(multihost_utils.process_allgather(x, tiled=True))
    return np.asarray(x)


def local_pieces(got: Any, want: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """``(this process's part of got, the same part of want)`` pairs: the whole value with
    one process, each addressable shard with several."""
    if not isinstance(got, jax.Array) or got.is_fully_addressable or got.is_fully_replicated:
        return [(np.asarray(got), want)]
    return [(np.asarray(s.data), want[s.index]) for s in got.addressable_shards]


def agreed_max(values: list[float]) -> list[float]:
    """Each entry's maximum over every process (the same list in all of them)."""
    if not is_multi_process() or not values:
        return values
    from jax.experimental import multihost_utils

    everyone = np.asarray(multihost_utils.process_allgather(np.asarray(values, np.float64)))
    return [float(v) for v in everyone.reshape(-1, len(values)).max(axis=0)]
