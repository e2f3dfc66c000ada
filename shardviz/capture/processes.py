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

from shardviz.model import HostFigures


def is_multi_process() -> bool:
    return jax.process_count() > 1


def local_device() -> Any:
    """The device a one-device reference runs on: this process's first."""
    return jax.local_devices()[0]


def own_devices(devices: list[Any]) -> list[Any]:
    """The ones of ``devices`` this process holds (another host's cannot be read from here)."""
    me = jax.process_index()
    return [d for d in devices if int(d.process_index) == me]


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
    return [float(v) for v in gathered_rows(values).max(axis=0)]


def gathered_rows(values: list[float]) -> np.ndarray:
    """Every process's ``values`` as rows ``[process, value]`` (a collective with several
    processes; one row with one)."""
    row = np.asarray(values, np.float64)
    if not is_multi_process():
        return row.reshape(1, -1)
    from jax.experimental import multihost_utils

    return np.asarray(multihost_utils.process_allgather(row)).reshape(-1, len(values))


def host_figures(step_seconds: float, live_peak: int | None, device_ids: list[int]) -> tuple:
    """Each process's step time and live peak (from all of them) and its devices among
    ``device_ids``; empty with one process."""
    if not is_multi_process():
        return ()
    rows = gathered_rows([float(jax.process_index()), step_seconds, float(live_peak or -1)])
    owner = {d.id: d.process_index for d in jax.devices()}
    return tuple(
        HostFigures(
            process=int(p),
            devices=tuple(i for i in device_ids if owner.get(i) == int(p)),
            step_seconds=float(step),
            peak_bytes_in_use=int(peak) if peak >= 0 else None,
        )
        for p, step, peak in sorted(rows.tolist())
    )
