"""Arrays as plain data: which device holds which tile, and pytrees of such arrays."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Literal

from shardviz.model import display
from shardviz.model._codec import JsonMixin
from shardviz.model.mesh import MeshLayout

#: One spec entry per array dim: the mesh axes that dim is split over, in order. ``()`` means
#: the dim is not split (replicated along it).
SpecEntry = tuple[str, ...]
Spec = tuple[SpecEntry, ...]

Kind = Literal["replicated", "tiled", "partially_tiled"]

#: jax's memory kinds that are host memory (on CPU, TPU and GPU alike); ``device`` is the
#: accelerator's own memory (HBM).
HOST_KINDS = ("pinned_host", "unpinned_host")
DEVICE_KIND = "device"


def format_spec(spec: Spec | None) -> str:
    """A spec in jax's spelling, e.g. ``P('data', None)`` or ``P(('data', 'model'),)``."""
    if spec is None:
        return "(not a named sharding)"
    parts = []
    for entry in spec:
        if not entry:
            parts.append("None")
        elif len(entry) == 1:
            parts.append(repr(entry[0]))
        else:
            parts.append("(" + ", ".join(repr(a) for a in entry) + ")")
    if len(parts) == 1:
        return f"P({parts[0]},)"  # jax's own spelling keeps the tuple comma
    return "P(" + ", ".join(parts) + ")"


def format_index(index: tuple[slice, ...]) -> str:
    """An index in numpy's spelling, e.g. ``[0:4, :]``."""
    return "[" + ", ".join(f"{s.start}:{s.stop}" for s in index) + "]"


@dataclass(frozen=True)
class Tile:
    """The part of an array one device holds.

    ``index`` has one ``slice(start, stop)`` per dim (never ``None`` bounds); ``replica_id``
    numbers the devices that hold the same tile, 0 first.
    """

    device_id: int
    index: tuple[slice, ...]
    shape: tuple[int, ...]
    nbytes: int
    replica_id: int = 0

    @property
    def key(self) -> tuple[tuple[int, int], ...]:
        """The index as a hashable key: equal for devices holding the same tile."""
        return tuple((s.start, s.stop) for s in self.index)


@dataclass(frozen=True)
class ArrayLayout(JsonMixin):
    """How one array (real or hypothetical) is split across the devices of a mesh.

    ``spec`` is the partition spec on the mesh's axis names (``None`` when the sharding is not
    a named one); ``tiles`` has one entry per device, in the mesh's device order.
    ``memory_kind`` is where each device keeps its tile: ``device`` (HBM), or host memory
    (``pinned_host``, ``unpinned_host``) attached to that device.
    """

    name: str
    shape: tuple[int, ...]
    dtype: str
    itemsize: int
    spec: Spec | None
    mesh: MeshLayout
    tiles: tuple[Tile, ...]
    memory_kind: str = DEVICE_KIND

    @property
    def on_host(self) -> bool:
        """Whether its tiles live in host memory rather than in the device's HBM."""
        return self.memory_kind in HOST_KINDS

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        """Bytes of the whole (global) array."""
        return self.size * self.itemsize

    @property
    def spec_str(self) -> str:
        return format_spec(self.spec)

    @cached_property
    def distinct_tiles(self) -> tuple[tuple[Tile, ...], ...]:
        """Tiles grouped by index: each group is the devices holding one piece, replica 0 first."""
        groups: dict[tuple, list[Tile]] = {}
        for t in self.tiles:
            groups.setdefault(t.key, []).append(t)
        return tuple(
            tuple(sorted(g, key=lambda t: (t.replica_id, t.device_id))) for g in groups.values()
        )

    @property
    def num_distinct_tiles(self) -> int:
        return len(self.distinct_tiles)

    @property
    def replication(self) -> int:
        """How many devices hold each element (devices / distinct tiles for even shardings)."""
        return len(self.tiles) // max(1, self.num_distinct_tiles)

    @property
    def kind(self) -> Kind:
        """GSPMD's three kinds: one tile for all, one tile per device, or tiles on groups."""
        n = self.num_distinct_tiles
        if n == 1:
            return "replicated"
        if n == len(self.tiles):
            return "tiled"
        return "partially_tiled"

    @property
    def shard_shape(self) -> tuple[int, ...]:
        """Shape of the largest tile (all tiles share it when the dims divide evenly)."""
        if not self.tiles:
            return self.shape
        return max((t.shape for t in self.tiles), key=math.prod)

    @property
    def bytes_per_device(self) -> dict[int, int]:
        """Device id -> bytes of this array that device holds."""
        return {t.device_id: t.nbytes for t in self.tiles}

    @property
    def max_bytes_per_device(self) -> int:
        return max((t.nbytes for t in self.tiles), default=0)

    def tile(self, device_id: int) -> Tile:
        """The tile a device holds."""
        for t in self.tiles:
            if t.device_id == device_id:
                return t
        raise KeyError(f"device {device_id} holds no part of {self.name!r}")

    def __str__(self) -> str:
        return display.render(self, "text")

    def _repr_html_(self) -> str:
        return display.render(self, "html")


@dataclass(frozen=True)
class TreeLayout(JsonMixin):
    """Every array leaf of a pytree (e.g. parameters plus optimizer state), by leaf path."""

    leaves: tuple[ArrayLayout, ...]

    def __iter__(self) -> Iterator[ArrayLayout]:
        return iter(self.leaves)

    def __len__(self) -> int:
        return len(self.leaves)

    def __getitem__(self, path: str) -> ArrayLayout:
        for leaf in self.leaves:
            if leaf.name == path:
                return leaf
        raise KeyError(path)

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(leaf.name for leaf in self.leaves)

    @cached_property
    def device_ids(self) -> tuple[int, ...]:
        """Every device holding part of some leaf, sorted."""
        return tuple(sorted({t.device_id for leaf in self.leaves for t in leaf.tiles}))

    @cached_property
    def bytes_per_device(self) -> dict[int, int]:
        """Device id -> bytes of all leaves that device holds."""
        out = dict.fromkeys(self.device_ids, 0)
        for leaf in self.leaves:
            for t in leaf.tiles:
                out[t.device_id] += t.nbytes
        return out

    @cached_property
    def host_bytes_per_device(self) -> dict[int, int]:
        """Device id -> bytes of the leaves kept in host memory for that device."""
        out = dict.fromkeys(self.device_ids, 0)
        for leaf in self.leaves:
            if leaf.on_host:
                for t in leaf.tiles:
                    out[t.device_id] += t.nbytes
        return out

    @cached_property
    def hbm_bytes_per_device(self) -> dict[int, int]:
        """Device id -> bytes of the leaves in that device's own memory (HBM)."""
        host = self.host_bytes_per_device
        return {d: b - host[d] for d, b in self.bytes_per_device.items()}

    @property
    def global_bytes(self) -> int:
        """Bytes of all leaves counted once (as if on one device)."""
        return sum(leaf.nbytes for leaf in self.leaves)

    @property
    def total_bytes(self) -> int:
        """Bytes held across all devices, replicas counted each time."""
        return sum(self.bytes_per_device.values())

    @property
    def mesh(self) -> MeshLayout | None:
        """The mesh all leaves share, or ``None`` if they live on different meshes."""
        meshes = {leaf.mesh for leaf in self.leaves}
        return meshes.pop() if len(meshes) == 1 else None

    def __str__(self) -> str:
        return display.render(self, "text")

    def _repr_html_(self) -> str:
        return display.render(self, "html")
