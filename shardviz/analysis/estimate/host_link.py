"""Time of the host <-> device transfers over a chip's host link (PCIe / host DMA), and
whether it hides under the step's compute.

Per device: the link carries each direction at ``Hardware.host_bandwidth`` at once (PCIe is
full duplex), so the transfers take the larger direction's bytes per step over it. They are
asynchronous copies the compiler overlaps with the ops scheduled beside them: they hide
when that time fits under the step's own work, the longest of its compute, its HBM time and
its communication (the other parts of the bound, which overlap as the bound assumes; a
memory-bound step hides them under its HBM time, never "under compute"), and what does not
fit is exposed. Model in, numbers out (no jax).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from shardviz.model.offload import HostTransfer
from shardviz.model.units import format_bandwidth, format_bytes, format_seconds

#: What the transfers hide under, in words, by the part of the step that is longest.
UNDER_WORDS = {
    "compute": "compute",
    "memory": "the step's HBM time",
    "communication": "the step's communication",
}


@dataclass(frozen=True)
class HostLink:
    """The host transfers of one step on one device, timed on a host link."""

    to_host_bytes: int
    to_device_bytes: int
    bandwidth: float
    seconds: float
    #: The time they can hide under (the longest of compute, HBM time and communication);
    #: ``None``: unknown.
    overlap_seconds: float | None
    #: Which part that is: ``compute``, ``memory`` (HBM time) or ``communication``.
    under: str = "compute"

    @property
    def under_words(self) -> str:
        """``compute`` or ``the step's HBM time``: what the transfers hide under."""
        return UNDER_WORDS.get(self.under, self.under)

    @property
    def exposed_seconds(self) -> float | None:
        """What does not fit under the step's own work (0 when it all hides)."""
        if self.overlap_seconds is None:
            return None
        return max(0.0, self.seconds - self.overlap_seconds)

    @property
    def hides(self) -> bool | None:
        """Whether the transfers can hide under the step's own work (``None``: unknown)."""
        exposed = self.exposed_seconds
        return None if exposed is None else exposed == 0.0

    @property
    def text(self) -> str:
        """``host link: 512 KiB to host + 512 KiB to device per step, 35 µs at 15 GB/s each
        way; can hide under the step's HBM time (90.7 µs)``."""
        head = (
            f"host link: {format_bytes(self.to_host_bytes)} to host + "
            f"{format_bytes(self.to_device_bytes)} to device per step, "
            f"{format_seconds(self.seconds)} at {format_bandwidth(self.bandwidth)} each way"
        )
        if self.overlap_seconds is None:
            return head + "; compute time unknown, so whether it hides is unknown"
        under = f"{self.under_words} ({format_seconds(self.overlap_seconds)})"
        if self.hides:
            return head + f"; can hide under {under}"
        return head + f"; {format_seconds(self.exposed_seconds or 0.0)} more than {under} can hide"


def host_link(
    transfers: Sequence[HostTransfer],
    bandwidth: float,
    overlap_seconds: float | None,
    under: str = "compute",
) -> HostLink | None:
    """The transfers timed on a link of ``bandwidth`` bytes/s each way, hiding under
    ``overlap_seconds`` of the step's ``under`` (``compute`` or ``memory``); ``None``
    without any."""
    if not transfers or bandwidth <= 0:
        return None
    out = sum(t.bytes_per_step for t in transfers if t.direction == "to host")
    back = sum(t.bytes_per_step for t in transfers if t.direction == "to device")
    return HostLink(out, back, bandwidth, max(out, back) / bandwidth, overlap_seconds, under)
