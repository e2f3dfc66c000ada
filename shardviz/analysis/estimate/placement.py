"""Where each of a mesh's devices sits on a target: chip coordinates, host and slice.

Real TPU devices (and a deviceless topology's) carry their chip's ``coords``; GPUs their
host (``process_index``). CPU fake devices carry neither, so they are put on the target in a
stated order, and the placement says so, for the views to show.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from shardviz.errors import HardwareError, problem
from shardviz.model.hardware import Target
from shardviz.model.mesh import Device, MeshLayout

AXIS_NAMES = ("x", "y", "z")


@dataclass(frozen=True)
class Site:
    """One device's place: its chip's coordinates in the slice (TPU; ``(local index,)`` on a
    GPU host), its host, slice, and core on the chip."""

    chip: tuple[int, ...]
    host: int
    slice: int = 0
    core: int = 0


@dataclass(frozen=True)
class Placement:
    """Device id -> :class:`Site`, and how it was decided (``assumed`` is ``""`` when the
    devices said where they are)."""

    sites: dict[int, Site] = field(hash=False)
    assumed: str = ""

    def __getitem__(self, device_id: int) -> Site:
        return self.sites[device_id]


def chip_of_index(i: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    """The chip jax numbers ``i`` in a slice of ``shape``: x fastest, then y, then z."""
    out = []
    for n in shape:
        out.append(i % n)
        i //= n
    return tuple(out)


def _host_of_chip(chip: tuple[int, ...], target: Target) -> int:
    hs = target.hardware.host_shape
    if not hs or len(hs) != len(chip) or any(n % h for n, h in zip(target.shape, hs, strict=True)):
        return 0
    block = [c // h for c, h in zip(chip, hs, strict=True)]
    blocks = [n // h for n, h in zip(target.shape, hs, strict=True)]
    host = 0
    for b, n in zip(reversed(block), reversed(blocks), strict=True):
        host = host * n + b
    return host


def _from_devices(devices: tuple[Device, ...], target: Target) -> Placement | None:
    if target.kind == "tpu":
        if any(d.coords is None for d in devices):
            return None
        dims = len(target.shape)
        return Placement({
            d.id: Site(tuple((d.coords or ())[:dims]), d.process_index, d.slice_index, d.core_on_chip)
            for d in devices
        })  # fmt: skip
    if target.kind == "gpu" and all(d.platform in ("gpu", "cuda", "rocm") for d in devices):
        local: dict[tuple[int, int], int] = {}
        sites = {}
        for d in sorted(devices, key=lambda d: d.id):
            key = (d.slice_index, d.process_index)
            local[key] = local.get(key, -1) + 1
            sites[d.id] = Site((local[key],), d.process_index, d.slice_index)
        return Placement(sites)
    return None


def _assumed_note(target: Target) -> str:
    if target.kind != "tpu":
        per = target.shape[1]
        return (
            f"CPU devices placed on {target.label} in id order: device i on host i // {per}, "
            f"GPU i % {per}"
        )
    coords = []
    stride = 1
    for name, n in zip(AXIS_NAMES, target.shape, strict=False):
        coords.append(f"{name} = (i // {stride}) % {n}" if stride > 1 else f"{name} = i % {n}")
        stride *= n
    slices = f", slice i // {stride}" if target.num_slices > 1 else ""
    per = target.devices_per_chip
    chip = "i" if per == 1 else f"c = i // {per}"
    if per > 1:
        coords = [c.replace("i", "c") for c in coords]
        slices = slices.replace("i", "c")
    each = "one device per chip" if per == 1 else f"{per} devices per chip, core i % {per}"
    return (
        f"CPU devices placed on {target.label} in jax's device-id order for that topology: "
        f"the {'i-th device' if per == 1 else 'i-th device on chip ' + chip} at "
        f"{', '.join(coords)}{slices} ({each}); on real chips jax.make_mesh may order them "
        "differently"
    )


def place(mesh: MeshLayout, target: Target) -> Placement:
    """Where the mesh's devices sit on ``target``.

    From the devices themselves when they carry coordinates (TPU) or are GPUs; otherwise the
    i-th device (by id) goes on the chip jax numbers i in that topology, x fastest, one
    device per chip, and ``assumed`` says so.

    Raises:
        HardwareError: the mesh has more devices than the target.
    """
    placed = _from_devices(mesh.devices, target)
    if placed is not None:
        return placed
    if mesh.size > target.devices:
        raise HardwareError(
            problem(
                f"placing a {mesh.size}-device mesh on {target.label}",
                f"the target has only {target.devices} devices",
                "name a larger target, or give the preset name alone to size it to the mesh",
            )
        )
    per_chip = target.devices_per_chip  # TPU7x: a chip's two cores are devices 2c, 2c + 1
    per_slice = target.chips_per_slice
    sites = {}
    for i, dev_id in enumerate(sorted(mesh.device_ids)):
        slice_, k = divmod(i // per_chip, per_slice)
        if target.kind != "tpu":
            host, local = divmod(k, target.shape[1])
            sites[dev_id] = Site((local,), slice_ * target.shape[0] + host, slice_)
        else:
            chip = chip_of_index(k, target.shape)
            hosts_per_slice = max(1, target.num_hosts // target.num_slices)
            sites[dev_id] = Site(
                chip, slice_ * hosts_per_slice + _host_of_chip(chip, target), slice_,
                i % per_chip,
            )  # fmt: skip
    return Placement(sites, _assumed_note(target))
