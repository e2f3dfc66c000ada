"""Targets: hardware wired into a topology, named (``"v5e:4x4"``), sized, or read off devices.

- :func:`target_for` makes one from a preset name, a topology name or a ``Hardware``, for a
  number of devices (what CPU fake devices should be estimated as);
- :func:`target_of_mesh` reads it off a mesh whose devices are real TPU/GPU devices or a
  deviceless TPU topology's (they carry their chip coordinates).

No jax import: devices arrive as :class:`~shardviz.model.mesh.Device` model objects.
"""

from __future__ import annotations

import math
import re
from collections import Counter

from shardviz.errors import HardwareError, problem
from shardviz.model.hardware import Hardware, Target
from shardviz.model.hardware_presets import PRESET_NAMES, hardware, preset_key
from shardviz.model.mesh import MeshLayout

_TOPOLOGY = re.compile(r"^\s*([^:]+?)\s*:\s*(\d+(?:\s*x\s*\d+)*)\s*$", re.IGNORECASE)
#: ``2xv6e:16x16``: slices of one shape joined by the data-centre network (MaxText's
#: ``num_slices``), the count before the chip's name.
_SLICES = re.compile(r"^\s*(\d+)\s*x\s*(?=[a-z])", re.IGNORECASE)


def _factor_shapes(n: int, dims: int) -> list[tuple[int, ...]]:
    """Every way to write ``n`` as a product of ``dims`` ascending factors."""
    if dims == 1:
        return [(n,)]
    out = []
    for a in range(1, n + 1):
        if n % a == 0:
            out += [(a, *rest) for rest in _factor_shapes(n // a, dims - 1) if rest[0] >= a]
    return out


def standard_shape(hw: Hardware, chips: int) -> tuple[int, ...]:
    """The slice (TPU) or hosts x GPUs (GPU) a preset uses for ``chips`` chips.

    TPU: the most square (cubic) shape, smaller axes first and size-1 axes last, as Cloud TPU
    names its slices (v5e: 2x4, 4x4, 4x8, ... 16x16; v5p: 2x2x1, 2x2x2, 2x2x4, 2x4x4, 4x4x4).
    GPU: ``(1, chips)`` up to a host, else whole hosts.
    """
    if chips < 1:
        raise ValueError("chips must be at least 1")
    if hw.kind == "gpu" or hw.kind == "cpu":
        per = hw.devices_per_host
        if chips <= per:
            return (1, chips)
        if chips % per:
            raise HardwareError(
                problem(
                    f"target for {chips} {hw.name} devices",
                    f"{chips} is not a whole number of {per}-GPU hosts",
                    f"use a multiple of {per}, or give hosts x GPUs as e.g. '{hw.preset}:2x{per}'",
                )
            )
        return (chips // per, per)
    dims = max(hw.torus_dims, 1)
    shapes = _factor_shapes(chips, dims)
    pod = sorted(hw.pod_shape) if hw.pod_shape else None
    if pod:
        shapes = [s for s in shapes if all(a <= b for a, b in zip(sorted(s), pod, strict=True))]
    if not shapes:
        raise HardwareError(
            problem(
                f"target for {chips} {hw.name} chips",
                f"no {dims}-D slice of {chips} chips fits the {hw.name} pod {hw.pod_shape}",
                "use a chip count that factors into the pod, e.g. a power of two",
            )
        )
    best = min(shapes, key=lambda s: (max(s) / min(s), s))
    return tuple(sorted(n for n in best if n > 1)) + tuple(1 for n in best if n == 1)


def _num_hosts(hw: Hardware, shape: tuple[int, ...]) -> int:
    if hw.kind == "gpu":
        return shape[0]
    chips = math.prod(shape)
    hs = hw.host_shape
    if hs and len(hs) == len(shape) and all(n % h == 0 for n, h in zip(shape, hs, strict=True)):
        return chips // math.prod(hs)
    return max(1, math.ceil(chips / hw.devices_per_host))


def make_target(
    hw: Hardware, shape: tuple[int, ...], num_slices: int = 1, name: str = ""
) -> Target:
    """A :class:`Target` of ``num_slices`` slices of ``shape`` with the hardware's wraparound rule."""
    shape = tuple(int(n) for n in shape)
    gpu = hw.kind != "tpu"
    hosts = _num_hosts(hw, shape) * num_slices
    chips = math.prod(shape) * num_slices
    key = hw.preset or hw.name.lower().replace(" ", "")
    text = "x".join(str(n) for n in shape)
    return Target(
        hardware=hw,
        name=name or (f"{num_slices}x{key}:{text}" if num_slices > 1 else f"{key}:{text}"),
        shape=shape,
        wraparound=tuple(False for _ in shape) if gpu else hw.wraps(shape),
        num_hosts=hosts,
        devices_per_host=shape[1] if gpu else max(1, chips // hosts),
        num_slices=num_slices,
        devices_per_chip=hw.devices_per_chip,
    )


def split_slices(spec: str) -> tuple[int, str]:
    """``"2xv6e:16x16"`` -> ``(2, "v6e:16x16")``; a name without a count is one slice."""
    m = _SLICES.match(spec)
    return (int(m.group(1)), spec[m.end() :]) if m else (1, spec)


def _unknown(spec: object) -> HardwareError:
    return HardwareError(
        problem(
            f"target {spec!r}",
            "not a known hardware or topology name",
            f"use a preset ({', '.join(PRESET_NAMES)}), a topology such as 'v5e:4x4', "
            "'v5p:2x2x2' or 'h100:2x8' (hosts x GPUs), or a shardviz.Hardware",
        )
    )


def _parse_topology(spec: str) -> Target:
    slices, rest = split_slices(spec)
    if slices > 1:
        one = _parse_topology(rest)
        if one.hardware.kind != "tpu":
            raise HardwareError(
                problem(
                    f"topology {spec!r}",
                    "only TPU slices are joined by DCN as 'N x slice'",
                    "give GPU clusters as hosts x GPUs ('h100:4x8')",
                )
            )
        return make_target(one.hardware, one.shape, num_slices=slices)
    m = _TOPOLOGY.match(spec)
    if not m:
        raise _unknown(spec)
    key = preset_key(m.group(1))
    if key is None:
        raise _unknown(spec)
    hw = hardware(key)
    shape = tuple(int(n) for n in re.split(r"\s*x\s*", m.group(2).lower()))
    if hw.kind == "gpu" and len(shape) == 1:
        shape = (1, shape[0])  # "h100:8": one host of 8, as shardviz.capture.topology names it
    want = 2 if hw.kind == "gpu" else hw.torus_dims
    if len(shape) != want or any(n < 1 for n in shape):
        example = "2x8 (hosts x GPUs)" if hw.kind == "gpu" else ("4x4" if want == 2 else "2x2x2")
        raise HardwareError(
            problem(
                f"topology {spec!r}",
                f"{hw.name} topologies have {want} sizes, got {len(shape)}",
                f"write it like '{key}:{example}'",
            )
        )
    pod = sorted(hw.pod_shape)
    if pod and any(a > b for a, b in zip(sorted(shape), pod, strict=True)):
        raise HardwareError(
            problem(
                f"topology {spec!r}",
                f"larger than one {hw.name} pod {hw.pod_shape}",
                "use a slice within the pod; slices beyond it are joined by DCN: name "
                f"them so ('2x{key}:{'x'.join(map(str, hw.pod_shape))}'), or give the "
                "preset name and a device count",
            )
        )
    return make_target(hw, shape, name=f"{key}:{'x'.join(map(str, shape))}")


def target_for(spec: str | Hardware | Target, n_devices: int | None = None) -> Target:
    """The target a name (or ``Hardware``) means for a mesh of ``n_devices`` devices.

    - ``"v5e"`` (any preset name) with 16 devices: the standard ``v5e:4x4`` slice; beyond one
      pod, whole pods joined by DCN (512 v5e chips: 2 x ``v5e:16x16``).
    - ``"v5e:4x4"``, ``"v5p:2x2x2"``: that slice, wraparound by the hardware's rule
      (v5e/v6e: axes of 16; v4/v5p: whole 4x4x4 cubes). ``n_devices`` may be smaller.
    - ``"h100:2x8"``: 2 hosts of 8 GPUs (``"h100:8"``: one host); ``"h100"`` with 16
      devices means the same as ``"h100:2x8"``.
    - a :class:`Hardware` of your own: its standard shape for ``n_devices``.

    Raises:
        HardwareError: unknown name, or a topology smaller than ``n_devices``.
    """
    if isinstance(spec, Target):
        target = spec
    elif isinstance(spec, str) and ":" in spec:
        target = _parse_topology(spec)
    else:
        hw = spec if isinstance(spec, Hardware) else None
        if hw is None:
            if not isinstance(spec, str) or preset_key(spec) is None:
                raise _unknown(spec)
            hw = hardware(spec)
        if n_devices is None:
            raise HardwareError(
                problem(
                    f"target {hw.name}",
                    "the number of devices is needed to pick a topology",
                    "pass n_devices, or name a topology such as 'v5e:4x4'",
                )
            )
        chips = -(-n_devices // hw.devices_per_chip)  # TPU7x: two devices a chip
        pod = math.prod(hw.pod_shape) if hw.kind == "tpu" and hw.pod_shape else None
        if pod and chips > pod:
            if chips % pod:
                raise HardwareError(
                    problem(
                        f"target for {chips} {hw.name} chips",
                        f"more than one {pod}-chip pod but not a whole number of pods",
                        f"use a multiple of {pod * hw.devices_per_chip} devices, or at most "
                        f"{pod * hw.devices_per_chip}",
                    )
                )
            return make_target(hw, hw.pod_shape, num_slices=chips // pod)
        return make_target(hw, standard_shape(hw, chips))
    if n_devices is not None and n_devices > target.devices:
        raise HardwareError(
            problem(
                f"target {target.name}",
                f"it holds {target.devices} devices but the mesh has {n_devices}",
                "name a larger topology, or give the preset name alone to size it to the mesh",
            )
        )
    return target


def _preset_of_device_kind(kind: str) -> str | None:
    k = kind.lower()
    if "h100" in k:
        return "h100"
    if "a100" in k:
        return "a100"
    if re.search(r"tpu\s*v?7", k):  # jax's device_kind "TPU7x"
        return "tpu7x"
    m = re.search(r"tpu\s*(v\d+)\s*(lite|e|p)?", k)
    if not m:
        return None
    gen, flavour = m.group(1), m.group(2) or ""
    if gen == "v5":
        return "v5e" if flavour in ("lite", "e") else "v5p"
    if gen == "v6":
        return "v6e"
    if gen == "v4":
        return "v4"
    return None


def target_of_mesh(mesh: MeshLayout | None) -> Target | None:
    """The target a mesh's own devices describe, or ``None`` (CPU, unknown kinds, no mesh).

    TPU devices must carry ``coords``: the slice shape is the smallest box holding the mesh's
    chips (a mesh on part of a slice sees only that part, so wraparound is judged on it),
    hosts are the distinct ``process_index`` values, slices the distinct ``slice_index``.
    """
    if mesh is None or not mesh.devices:
        return None
    kinds = {d.kind for d in mesh.devices}
    if len(kinds) != 1:
        return None
    key = _preset_of_device_kind(next(iter(kinds)))
    if key is None:
        return None
    hw = hardware(key)
    devices = mesh.devices
    hosts = len({(d.slice_index, d.process_index) for d in devices})
    if hw.kind == "gpu":
        per_host = max(Counter((d.slice_index, d.process_index) for d in devices).values())
        return Target(hw, f"{key}:{hosts}x{per_host}", (hosts, per_host), (False, False),
                      num_hosts=hosts, devices_per_host=per_host)  # fmt: skip
    if any(d.coords is None for d in devices):
        return None
    dims = hw.torus_dims
    chips = Counter((d.slice_index, tuple((d.coords or ())[:dims])) for d in devices)
    per_chip = max(chips.values())
    shape = tuple(
        max(c[a] for _, c in chips) - min(c[a] for _, c in chips) + 1 for a in range(dims)
    )
    slices = len({s for s, _ in chips})
    per_host = max(Counter((d.slice_index, d.process_index) for d in devices).values())
    return Target(
        hardware=hw,
        name=(f"{slices}x" if slices > 1 else "") + f"{key}:{'x'.join(map(str, shape))}",
        shape=shape,
        wraparound=hw.wraps(shape),
        num_hosts=hosts,
        devices_per_host=max(1, per_host // per_chip),
        num_slices=slices,
        devices_per_chip=per_chip,
    )
