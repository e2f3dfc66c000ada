"""The device mesh as plain data: named axes, their sizes, and the devices in mesh order."""

from __future__ import annotations

import math
import unicodedata
from collections import OrderedDict
from dataclasses import dataclass
from functools import cached_property

from shardviz.model import display
from shardviz.model._codec import JsonMixin
from shardviz.model.device_order import device_order


def axis_name_problem(name: object) -> str | None:
    """What is wrong with ``name`` as a mesh axis name, or ``None``: names reach the XLA
    compiler inside its text, which aborts the whole process on a non-ASCII or control
    character (``absl::CUnescape``), so only printable ASCII is taken."""
    if not isinstance(name, str) or not name:
        return f"axis names must be non-empty strings, got {name!r}"
    odd = sorted({c for c in name if not (" " <= c <= "~")})
    if odd:
        shown = ", ".join(repr(c) for c in odd[:3])
        return (
            f"axis name {name!r} has character(s) {shown} the XLA compiler cannot take "
            "(it aborts the process on non-ASCII and control characters)"
        )
    return None


def ascii_hint(name: str) -> str:
    """``name`` with what XLA cannot take replaced (``données`` -> ``donnees``)."""
    plain = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    plain = "".join(c for c in plain if " " <= c <= "~")
    return plain or "axis"


@dataclass(frozen=True)
class Device:
    """One device: its id (what jax calls ``device.id``), host process, platform and kind.

    TPU devices also know where they sit: ``coords`` are the chip's physical (x, y, z) in the
    slice, ``core_on_chip`` the core when jax lists several per chip, ``slice_index`` the
    slice in a multi-slice job. Other devices leave ``coords`` as ``None``.
    """

    id: int
    process_index: int = 0
    platform: str = "cpu"
    kind: str = "cpu"
    coords: tuple[int, ...] | None = None
    core_on_chip: int = 0
    slice_index: int = 0


@dataclass(frozen=True)
class MeshLayout(JsonMixin):
    """A logical mesh of devices with named axes.

    ``devices`` lists the devices in row-major mesh order, so the device at mesh coordinate
    ``(i, j)`` of a ``(2, 4)`` mesh is ``devices[i * 4 + j]``. A mesh with no axes holds one
    device (an array placed on a single device).
    """

    axis_names: tuple[str, ...]
    axis_sizes: tuple[int, ...]
    devices: tuple[Device, ...]
    axis_types: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if len(self.axis_names) != len(self.axis_sizes):
            raise ValueError("axis_names and axis_sizes differ in length")
        if math.prod(self.axis_sizes) != len(self.devices):
            raise ValueError(
                f"mesh shape {self.axis_sizes} holds {math.prod(self.axis_sizes)} devices, "
                f"got {len(self.devices)}"
            )

    @property
    def shape(self) -> OrderedDict[str, int]:
        """Axis name -> size, in mesh order."""
        return OrderedDict(zip(self.axis_names, self.axis_sizes, strict=True))

    @property
    def size(self) -> int:
        """Number of devices."""
        return len(self.devices)

    @property
    def ndim(self) -> int:
        return len(self.axis_names)

    @property
    def device_ids(self) -> tuple[int, ...]:
        """Device ids in row-major mesh order."""
        return tuple(d.id for d in self.devices)

    @cached_property
    def _coords(self) -> dict[int, tuple[int, ...]]:
        out = {}
        for flat, dev in enumerate(self.devices):
            coord = []
            for size in reversed(self.axis_sizes):
                coord.append(flat % size)
                flat //= size
            out[dev.id] = tuple(reversed(coord))
        return out

    @cached_property
    def _by_id(self) -> dict[int, Device]:
        return {d.id: d for d in self.devices}

    def coords(self, device_id: int) -> tuple[int, ...]:
        """Mesh coordinate of a device, one index per axis."""
        return self._coords[device_id]

    def device(self, device_id: int) -> Device:
        """The :class:`Device` with this id."""
        return self._by_id[device_id]

    def axis_size(self, name: str) -> int:
        return self.axis_sizes[self.axis_names.index(name)]

    @property
    def process_indices(self) -> tuple[int, ...]:
        """The distinct host processes, sorted."""
        return tuple(sorted({d.process_index for d in self.devices}))

    @property
    def num_processes(self) -> int:
        return len(self.process_indices)

    def reordered(self, order: object, where: str = "MeshLayout.reordered") -> MeshLayout:
        """The same devices and axes in another order: ``order`` lists device ids in the
        new row-major mesh order (a permutation of :attr:`device_ids`); ``where`` names the
        call in the message (``"reordered_mesh"``).

        Raises:
            MeshError: ``order`` is not a permutation of the mesh's device ids.
        """
        ids = device_order(order, self.device_ids, where)
        by_id = self._by_id
        return MeshLayout(
            self.axis_names, self.axis_sizes, tuple(by_id[i] for i in ids), self.axis_types
        )

    def __str__(self) -> str:
        return display.render(self, "text")

    def _repr_html_(self) -> str:
        return display.render(self, "html")
