"""The logical mesh laid on the physical chips: what :func:`shardviz.physical` returns.

Each mesh axis's rings (the devices that vary along that axis, the others fixed) are placed
on the target's chips: a ring that *closes* has every member one link from the next, the
last one included (over a wraparound link, or around a square); a *line* reaches its
members one link apart but has to double back from the last to the first; a ring that
*jumps* has members that are not neighbours (several hops between them). On GPUs a ring is
inside one host (NVLink) or crosses hosts (the network).

The load on each physical link is the ledger routed onto the links; the rule
(:data:`LINK_RULE`) is stated once here and printed by the views. Plain data: computed by
:mod:`shardviz.analysis.estimate.physical`, drawn by :mod:`shardviz.render.physical`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from shardviz.model import display
from shardviz.model._codec import JsonMixin
from shardviz.model.hardware import Target
from shardviz.model.mesh import MeshLayout

#: How bytes become link loads, in words (the views print it).
LINK_RULE = (
    "each collective's bytes per device follow the ring model of the ledger: in a ring "
    "(all-gather, reduce-scatter, all-reduce) every device sends its moved bytes to the next "
    "member of its group (the last to the first); a ring group on several GPU hosts (or TPU "
    "slices) runs in two levels, as the estimate times it: a ring inside each host, and every "
    "member sending its own 1/n of the data (twice for an all-reduce) to each other host "
    "over its own network link; in an all-to-all it sends an equal share to "
    "every other member; in a collective-permute each source sends its input to its target. "
    "Each transfer takes the shortest route (x, then y, then z; a wraparound link where it is "
    "shorter; GPUs: one NVLink hop inside a host, one network hop between hosts), and every "
    "link on it carries those bytes, times the collective's runs per step. So the links "
    "together carry the ledger's bytes times the hops each byte travels: exactly the "
    "ledger's bytes when every transfer is between neighbours."
)

#: How a ring lies on the chips, best first.
RING_SHAPES: tuple[str, ...] = ("ring", "nvlink", "line", "jumps", "hosts", "slices")

#: What each shape means, for the views.
SHAPE_WORDS: dict[str, str] = {
    "ring": "closes: every member one link from the next, the last one included",
    "nvlink": "inside one host: every hop one NVLink",
    "line": "a line: neighbours, but the last member is several hops back from the first",
    "jumps": "jumps: members that are not neighbours, several hops apart",
    "hosts": "crosses hosts: a ring in each host; each GPU sends its share on over the network",
    "slices": "crosses slices: a ring in each slice; each chip sends its share on over DCN",
}


@dataclass(frozen=True)
class PhysicalChip:
    """One device on its chip: ``chip`` its coordinates (TPU ``(x, y[, z])``; GPU
    ``(local index,)``), its host and slice, and its coordinates in the mesh."""

    device: int
    chip: tuple[int, ...]
    host: int
    slice: int = 0
    mesh_coords: tuple[int, ...] = ()


@dataclass(frozen=True)
class LinkLoad:
    """One physical link and the bytes it carries per step (both directions added).

    ``a`` and ``b`` are its ends: ``(slice, *chip)`` for a TPU ICI link (``kind`` ``"ici"``,
    or ``"wrap"`` for a wraparound link), ``(slice, host, gpu)`` for an NVLink pair, ``(slice,
    host)`` for the network between two GPU hosts, ``(slice,)`` for DCN between slices.
    ``by_axis`` splits the bytes by the mesh axes of the collectives that sent them.
    ``crosses_hosts``: its ends are on different hosts.
    """

    a: tuple[int, ...]
    b: tuple[int, ...]
    kind: str
    bytes: int = 0
    by_axis: tuple[tuple[str, int], ...] = ()
    crosses_hosts: bool = False

    @property
    def label(self) -> str:
        """``(1,2)–(1,3)`` (TPU chips), ``host 0 gpu 3–host 0 gpu 5`` (NVLink), ``host 0–host
        1`` (network), ``slice 0–slice 1`` (DCN); the slice left out inside one."""

        def end(e: tuple[int, ...]) -> str:
            if self.kind == "dcn":
                return f"slice {e[0]}"
            sl = f"slice {e[0]} " if e[0] else ""
            if self.kind == "network":
                return f"{sl}host {e[1]}"
            if self.kind == "nvlink":
                return f"{sl}host {e[1]} gpu {e[2]}"
            return sl + "(" + ",".join(str(v) for v in e[1:]) + ")"

        return f"{end(self.a)}–{end(self.b)}"

    @property
    def top_axis(self) -> str:
        """The axis that sends the most over it (``""`` when nothing does)."""
        return max(self.by_axis, key=lambda x: x[1])[0] if self.by_axis else ""


@dataclass(frozen=True)
class Ring:
    """One ring of a mesh axis: its devices in mesh order (over several hosts or slices,
    host by host: each host's members in mesh order, as the two-level rule of
    :data:`LINK_RULE` visits them), the hops from each to the next (the last to the first),
    how it lies (one of :data:`RING_SHAPES`), whether a hop uses a wraparound link, and the
    hosts and slices it spans."""

    devices: tuple[int, ...]
    hops: tuple[int, ...]
    shape: str
    wraps: bool = False
    hosts: int = 1
    slices: int = 1


@dataclass(frozen=True)
class AxisRings:
    """One mesh axis on the chips: its rings, the worst shape among them, and what its
    collectives put on the links per step (``link_bytes``) against the ledger's bytes
    (``ledger_bytes``, summed over devices)."""

    axis: str
    size: int
    rings: tuple[Ring, ...]
    shape: str
    ledger_bytes: int = 0
    link_bytes: int = 0

    @property
    def closes(self) -> bool:
        """Whether every ring closes (on TPU: over neighbour links; on GPU: in one host)."""
        return self.shape in ("ring", "nvlink")

    @property
    def wraps(self) -> bool:
        return any(r.wraps for r in self.rings)

    @property
    def words(self) -> str:
        return SHAPE_WORDS.get(self.shape, self.shape)


@dataclass(frozen=True)
class PhysicalLayout(JsonMixin, display.Shown):
    """A report's mesh on its target's chips, and the ledger's load on each link.

    Attributes:
        function: the report's function, for titles.
        target: the topology the chips belong to.
        mesh: the logical mesh (device ids in mesh order).
        chips: every device of the mesh on its chip.
        links: the physical links: on TPU every link of the slices used (loaded or not),
            on GPU the NVLink pairs and host pairs that carry bytes.
        axes: each mesh axis of size 2 or more, on the chips.
        ledger_bytes: the ledger's moved bytes summed over devices, times runs per step.
        link_bytes: the bytes on all links together (see :data:`LINK_RULE`).
        cross_host_bytes: bytes on links between hosts.
        network_bytes: bytes on the network between GPU hosts or on DCN between slices,
            summed over devices.
        device_chip_bytes: the most bytes one device sends per step over chip links (ICI,
            NVLink): what the busiest device puts on its own links.
        device_network_bytes: the most bytes one device sends per step over the network or
            DCN (its own network link): ``network_bytes`` is the sum over devices.
        collective_seconds: the estimate's communication seconds per step (``None``: none).
        notes: how the devices were placed, what was assumed.
    """

    #: What a document read back may hold (see :mod:`shardviz.model._codec`): the views draw
    #: every chip of the target's slices and every link.
    DOCUMENT_LIMITS: ClassVar[dict[str, int | tuple[int, int]]] = {
        "chips": 16_384, "mesh.devices": 16_384, "links": 262_144, "axes": 64,
        "target.shape": (1, 3), "target.chips": 16_384,
    }  # fmt: skip

    function: str
    target: Target
    mesh: MeshLayout
    chips: tuple[PhysicalChip, ...]
    links: tuple[LinkLoad, ...]
    axes: tuple[AxisRings, ...]
    ledger_bytes: int = 0
    link_bytes: int = 0
    cross_host_bytes: int = 0
    network_bytes: int = 0
    device_chip_bytes: int = 0
    device_network_bytes: int = 0
    collective_seconds: float | None = None
    notes: tuple[str, ...] = ()

    def busiest(self, n: int = 5) -> tuple[LinkLoad, ...]:
        """The ``n`` links that carry the most bytes (loaded ones only), busiest first."""
        loaded = [x for x in self.links if x.bytes > 0]
        return tuple(sorted(loaded, key=lambda x: (-x.bytes, x.a, x.b))[:n])

    def axis(self, name: str) -> AxisRings:
        """The rings of mesh axis ``name``."""
        for a in self.axes:
            if a.axis == name:
                return a
        raise KeyError(name)

    @property
    def max_link_bytes(self) -> int:
        return max((x.bytes for x in self.links), default=0)
