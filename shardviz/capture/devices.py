"""Fake CPU devices, the embedded default: set them up before jax's backend starts."""

from __future__ import annotations

import jax

from shardviz.errors import DeviceSetupError, problem


def _backend_started() -> bool:
    # JAX 0.10: xla_bridge keeps the started backends; there is no public query for this.
    from jax._src import xla_bridge

    return bool(xla_bridge.backends_are_initialized())


def use_cpu_devices(n: int) -> list[jax.Device]:
    """Give jax ``n`` fake CPU devices, so sharding can be explored on any laptop.

    Call it first, before anything asks jax for devices. Calling it again with the same count
    is harmless. On a machine with GPUs or TPUs, jax keeps using those by default; the fake
    CPU devices are then only used when asked for (``jax.devices("cpu")``).

    Returns:
        The CPU devices.

    Raises:
        DeviceSetupError: if jax already started with another number of CPU devices.
    """
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise DeviceSetupError(
            problem(
                "use_cpu_devices",
                f"the device count must be a positive whole number, got {n!r}",
                "pass e.g. use_cpu_devices(8)",
            )
        )
    if _backend_started():
        have = len(jax.devices("cpu"))
        if have == n:
            return jax.devices("cpu")
        raise DeviceSetupError(
            problem(
                "use_cpu_devices",
                f"jax's backend already started with {have} CPU device(s), and the count cannot "
                f"change to {n} in a running process",
                "in a notebook restart the kernel and call shardviz.use_cpu_devices"
                f"({n}) in the first cell; in a script call it before anything touches jax "
                "devices or arrays",
            )
        )
    jax.config.update("jax_num_cpu_devices", n)
    return jax.devices("cpu")


def device_count() -> int:
    """Number of devices of jax's default backend."""
    return jax.device_count()
