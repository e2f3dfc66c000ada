"""Real TPU and GPU systems without the hardware: deviceless topologies to compile for.

``topology("v5e:4x4")`` asks libtpu (the ``shardviz[tpu]`` extra) for the devices of a TPU
slice; ``topology("h100:2x8")`` asks the CUDA plugin (``shardviz[gpu]``) for two hosts of
eight H100s, described by :mod:`.gpu_targets`. Their devices go into a mesh like any others
(``Mesh(topo.devices, shape, names)`` or ``jax.sharding.Mesh``); programs on them compile with
the real TPU or GPU compiler and are never run.
"""

from __future__ import annotations

import glob
import importlib.util
import math
import os
import re
from dataclasses import dataclass, replace
from typing import Any

from shardviz.capture.gpu_targets import GPU_SPECS, target_config
from shardviz.capture.hlo.compiler_log import compiler_log
from shardviz.errors import CompilerUnavailable, ShardvizError, TopologyError, problem
from shardviz.model.hardware_presets import hardware
from shardviz.model.targets import split_slices, target_for

#: TPU generations shardviz has hardware figures for (jax knows a few more, e.g. v3).
TPU_KINDS = ("v4", "v5e", "v5p", "v6e", "tpu7x")
#: Examples for error messages.
EXAMPLES = (
    '"v5e:4x4", "v5e:16x16", "v5p:2x2x2", "v6e:4x4", "v4:2x2x2", "tpu7x:2x2x1", "h100:8", '
    '"h100:2x8", "a100:8"'
)


@dataclass(frozen=True, eq=False)
class Topology:
    """A TPU slice or GPU cluster to compile for, without the hardware.

    Attributes:
        name: as given, normalised (``"v5e:4x4"``, ``"2xv6e:16x16"``, ``"h100:2x8"``).
        platform: ``"tpu"`` or ``"gpu"``.
        kind: the chip (``"v5e"``, ``"h100"``...), the key of :func:`shardviz.hardware`.
        devices: the jax devices (deviceless: they compile, they do not run), in jax's order.
        num_hosts: hosts (processes) the devices belong to.
        shape: the physical shape (chips along x, y[, z] of one slice for TPU; hosts x GPUs
            for GPU).
    """

    name: str
    platform: str
    kind: str
    devices: tuple[Any, ...]
    num_hosts: int
    shape: tuple[int, ...]

    @property
    def label(self) -> str:
        """What the views print: ``TPU v5e 4x4 (16 chips, 4 hosts)`` (the target's label)."""
        try:
            return self.target.label
        except ShardvizError:  # a chip shardviz has no figures for (e.g. v3)
            pass
        hosts = f"{self.num_hosts} host{'s' if self.num_hosts != 1 else ''}"
        shape = "x".join(map(str, self.shape))
        return f"{self.platform.upper()} {self.kind} {shape} ({len(self.devices)} devices, {hosts})"

    @property
    def hardware(self) -> Any:
        """The chip's :class:`~shardviz.model.Hardware` preset (``None`` if shardviz has none)."""
        try:
            return hardware(self.kind)
        except ShardvizError:
            return None

    @property
    def target(self) -> Any:
        """The :class:`~shardviz.Target` estimates on this topology are made for."""
        target = target_for(self.name)
        per_chip = len(self.devices) // max(1, target.chips)
        return replace(target, devices_per_chip=per_chip) if per_chip > 1 else target

    def __repr__(self) -> str:
        return f"<Topology {self.name}: {self.label}>"


def _missing_extra(extra: str, what: str) -> CompilerUnavailable:
    return CompilerUnavailable(
        problem(
            f"topology ({what})",
            f"compiling for {what} without the hardware needs the shardviz[{extra}] extra, "
            "which is not installed",
            f"pip install 'shardviz[{extra}]' (then restart the kernel)",
        ),
        extra,
    )


def _unknown(name: str, why: str) -> TopologyError:
    return TopologyError(
        problem(
            f"topology({name!r})",
            why,
            f"use a name like {EXAMPLES}: the chip, a colon, then the slice or cluster shape",
        )
    )


def topology(name: str) -> Topology:
    """The devices of a real TPU slice or GPU cluster, to compile for without the hardware.

    Args:
        name: a TPU slice as jax spells it (``"v5e:4x4"``, ``"v5e:16x16"``, ``"v5p:2x2x2"``,
            ``"v6e:4x4"``, ``"v4:2x2x2"``; ``"tpu7x:2x2x1"``: chips, two devices each),
            several such slices joined by the data-centre network (``"2xv6e:16x16"``; jax
            gives each device its ``slice_index``, slice by slice) or
            GPUs as ``chip:count`` for one host
            (``"h100:8"``, ``"a100:8"``) or ``chip:hostsxcount`` (``"h100:2x8"``).

    Returns:
        A :class:`Topology`; the same object for the same name.

    Raises:
        TopologyError: the name is unknown, or its extra (``shardviz[tpu]`` / ``[gpu]``) is
            not installed.
    """
    if not isinstance(name, str):
        raise TopologyError(
            problem(
                f"topology({name!r})",
                f"a topology is named by a string, got {type(name).__name__}",
                f"use a name like {EXAMPLES}",
            )
        )
    key = name.strip().lower().replace(" ", "")
    if key not in _MADE:
        _MADE[key] = _topology(key)
    return _MADE[key]


#: Every topology made in this process, by name: the same name gives the same devices.
_MADE: dict[str, Topology] = {}


def _topology(name: str) -> Topology:
    slices, one = split_slices(name)
    kind, sep, shape_text = one.partition(":")
    if not sep or not re.fullmatch(r"\d+(x\d+)*", shape_text):
        raise _unknown(name, "the name has no shape after the chip")
    shape = tuple(int(s) for s in shape_text.split("x"))
    if kind in GPU_SPECS:
        if slices > 1:
            raise _unknown(name, "GPU clusters are hosts x GPUs, not slices ('h100:4x8')")
        return _gpu(name, kind, shape)
    if re.fullmatch(r"v\d+[a-z]*|tpu\d+[a-z]*", kind):  # tpu7x: Ironwood, as jax names it
        return _tpu(name, kind, shape, slices)
    raise _unknown(name, f"{kind!r} is not a TPU or GPU shardviz knows")


def _tpu(name: str, kind: str, shape: tuple[int, ...], slices: int = 1) -> Topology:
    if importlib.util.find_spec("libtpu") is None:
        raise _missing_extra("tpu", f"TPU {kind}")
    from jax.experimental import topologies

    more = {"num_slices": slices} if slices > 1 else {}
    try:
        with compiler_log():  # libtpu's start-up log goes to the terminal, not a cell
            desc = topologies.get_topology_desc(split_slices(name)[1], "tpu", **more)
    except Exception as err:  # jax's runtime error says which part it refused
        raise _unknown(name, f"jax does not know this TPU slice ({_first_line(err)})") from err
    devices = tuple(desc.devices)
    hosts = len({(getattr(d, "slice_index", 0), d.process_index) for d in devices})  # type: ignore[attr-defined]
    return Topology(name, "tpu", kind, devices, hosts, shape)


def _gpu(name: str, kind: str, shape: tuple[int, ...]) -> Topology:
    if len(shape) > 2 or math.prod(shape) < 1:
        raise _unknown(name, "a GPU cluster is 'chip:count' or 'chip:hostsxcount'")
    hosts, per_host = (1, shape[0]) if len(shape) == 1 else shape
    if importlib.util.find_spec("jax_plugins.xla_cuda12") is None:
        raise _missing_extra("gpu", f"GPU {kind}")
    try:
        with compiler_log():  # the plugin's start-up log goes to the terminal, not a cell
            devices = tuple(_cuda_topology(kind, f"1x{hosts}x{per_host}").devices)
    except Exception as err:  # the plugin's own error says what it lacked
        raise CompilerUnavailable(
            problem(
                f"topology({name!r})",
                f"the CUDA plugin made no deviceless GPU devices ({_first_line(err)})",
                "reinstall the extra so jax and its CUDA plugin match: "
                "pip install -U 'shardviz[gpu]' (then restart the kernel)",
            ),
            "gpu",
        ) from err
    return Topology(name, "gpu", kind, devices, hosts, (hosts, per_host))


def _cuda_topology(kind: str, shape: str) -> Any:
    """The CUDA plugin's deviceless topology (slices x hosts x GPUs per host)."""
    from jax.experimental import topologies

    allow_deviceless()
    config = target_config(kind)
    try:
        return topologies.get_topology_desc("cuda", "cuda", target_config=config, topology=shape)
    except NotImplementedError:
        # The plugin failed its CUDA library check when jax started (no GPU libraries here);
        # with the check off it registers now.
        import jax_plugins.xla_cuda12 as cuda_plugin

        cuda_plugin.initialize()
        return topologies.get_topology_desc("cuda", "cuda", target_config=config, topology=shape)


def allow_deviceless() -> None:
    """Let the TPU and GPU plugins load for compiling on a machine without those devices.

    The CUDA plugin checks the installed CUDA libraries' versions when it loads and fails
    noisily without them; a deviceless compile needs none of them. libtpu locks one file for
    the whole machine, so a second process (a notebook kernel next to a script, parallel
    tests) could not compile for TPU; the lock guards a real TPU, and there is none. Where an
    NVIDIA driver or a TPU device is present, both checks stay on.
    """
    if not (os.path.exists("/proc/driver/nvidia") or os.path.exists("/dev/nvidia0")):
        os.environ.setdefault("JAX_SKIP_CUDA_CONSTRAINTS_CHECK", "1")
    if not (glob.glob("/dev/accel*") or os.path.isdir("/dev/vfio")):
        os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return text[0][:300] if text else type(err).__name__


def topology_of(devices: Any) -> Topology | None:
    """The :class:`Topology` these devices come from, if :func:`topology` made them."""
    first = next(iter(devices), None)
    if first is None:
        return None
    for topo in reversed(_MADE.values()):
        if any(d == first for d in topo.devices):
            return topo
    return None
