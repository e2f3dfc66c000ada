"""Fake CPU devices, the embedded default: set them up before jax's backend starts.

The course notebooks all begin with ``use_cpu_devices(8)``. The same notebooks run on a TPU VM
or a GPU box, unedited, when the environment variable ``SHARDVIZ_DEVICES=accelerator`` is set
before the kernel starts: then jax stays on the accelerator if it has enough devices.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

import jax

from shardviz.errors import DeviceSetupError, ShardvizWarning, problem

#: The environment variable that chooses which devices ``use_cpu_devices`` gives jax.
DEVICES_ENV = "SHARDVIZ_DEVICES"
#: Its values: fake CPU devices only (the default), or the machine's TPUs/GPUs when they suffice.
MODES = ("cpu", "accelerator")


def _backend_started() -> bool:
    # JAX 0.10: xla_bridge keeps the started backends; there is no public query for this.
    from jax._src import xla_bridge

    return bool(xla_bridge.backends_are_initialized())


def _start_backends() -> tuple[dict[str, int], dict[str, str]]:
    """Start every backend jax can (the accelerator's too): device count per platform, and
    why each platform that failed to start failed (e.g. a TPU another process holds)."""
    from jax._src import xla_bridge

    started = {name: int(b.device_count()) for name, b in xla_bridge.backends().items()}
    return started, dict(getattr(xla_bridge, "_backend_errors", {}))


def device_mode() -> str:
    """The mode ``SHARDVIZ_DEVICES`` asks for: ``"cpu"`` (unset or empty) or ``"accelerator"``."""
    raw = os.environ.get(DEVICES_ENV, "")
    mode = raw.strip().lower() or "cpu"
    if mode not in MODES:
        raise DeviceSetupError(
            problem(
                "use_cpu_devices",
                f"the environment variable {DEVICES_ENV}={raw!r} is not one of {', '.join(MODES)}",
                f"unset {DEVICES_ENV} for fake CPU devices, or set {DEVICES_ENV}=accelerator "
                "(before starting Jupyter) to use this machine's TPUs or GPUs",
            )
        )
    return mode


def choose_accelerator(started: dict[str, int], n: int) -> tuple[str | None, str]:
    """The accelerator platform with at least ``n`` devices among ``started`` (platform ->
    device count), or ``None`` and the reason why none fits."""
    accelerators = {name: count for name, count in started.items() if name != "cpu"}
    if not accelerators:
        return None, "jax found no TPU or GPU on this machine"
    name, count = max(accelerators.items(), key=lambda item: item[1])
    if count >= n:
        return name, ""
    return None, f"the {name} backend has {count} device(s), fewer than the {n} asked for"


def use_cpu_devices(n: int) -> list[jax.Device]:
    """Give jax ``n`` fake CPU devices, so sharding can be explored on any laptop.

    Call it first, before anything asks jax for devices. Calling it again with the same count
    is harmless. jax then runs on these CPU devices only, even on a machine with TPUs or GPUs,
    so a notebook gives the same results everywhere.

    To run the same code on real devices, set ``SHARDVIZ_DEVICES=accelerator`` in the
    environment (before starting Python or Jupyter): if jax finds a TPU or GPU backend with at
    least ``n`` devices, jax is left on it (``jax.devices()`` are the accelerator's, all of
    them) and no CPU device count is forced; otherwise a :class:`ShardvizWarning` says why and
    the ``n`` fake CPU devices are used.

    Returns:
        The devices jax's programs will run on: the ``n`` CPU devices, or the accelerator's.

    Raises:
        DeviceSetupError: if jax already started with another number of CPU devices, or if
            ``SHARDVIZ_DEVICES`` has an unknown value.
    """
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise DeviceSetupError(
            problem(
                "use_cpu_devices",
                f"the device count must be a positive whole number, got {n!r}",
                "pass e.g. use_cpu_devices(8)",
            )
        )
    mode = device_mode()
    if _backend_started():
        if mode == "accelerator" and jax.default_backend() != "cpu" and jax.device_count() >= n:
            return jax.devices()
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
    if mode == "cpu":
        # Only the CPU backend starts: an accelerator stays free for other processes.
        jax.config.update("jax_platforms", "cpu")
        return jax.devices("cpu")
    return _accelerator_or_cpu(n)


def _accelerator_or_cpu(n: int) -> list[Any]:
    """Start the backends; keep jax on the accelerator when it has ``n`` devices, else make
    the CPU devices the default and warn why."""
    started, errors = _start_backends()
    platform, why = choose_accelerator(started, n)
    # The backends have started, so jax_platforms no longer applies; the default platform's
    # name is still read on every lookup of the default backend (none was looked up yet).
    if platform is not None:
        jax.config.update("jax_platform_name", platform)
        return jax.devices(platform)
    failed = "; ".join(f"{name}: {err}" for name, err in sorted(errors.items()) if name != "cpu")
    if failed:
        why += f" (backends that failed to start: {failed})"
    jax.config.update("jax_platform_name", "cpu")
    warnings.warn(
        problem(
            "use_cpu_devices",
            f"{DEVICES_ENV}=accelerator, but {why}; using {n} fake CPU devices instead",
            "if another process holds the accelerator (on a TPU VM only one process can), shut "
            "down the other notebooks' kernels and restart this one; or unset "
            f"{DEVICES_ENV} to use CPU devices without this warning",
        ),
        ShardvizWarning,
        stacklevel=3,
    )
    return jax.devices("cpu")


def device_count() -> int:
    """Number of devices of jax's default backend."""
    return jax.device_count()
