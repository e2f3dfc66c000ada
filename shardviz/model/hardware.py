"""Accelerators and the topologies they are wired into, as plain data.

:class:`Hardware` holds one chip's published figures (peak FLOP/s, HBM, link bandwidths) with
the public source of each; :class:`Target` is that hardware wired into one physical topology
(a TPU slice such as ``v5e:4x4``, or GPU hosts such as ``h100:2x8``). Estimates of time and
memory are made against a target. Presets live in :mod:`shardviz.model.hardware_presets`; users can
build their own. No jax import.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from shardviz.model._codec import JsonMixin

#: Matmul operand precisions with a peak of their own (:meth:`Hardware.peak_for`).
NARROW_PRECISIONS: tuple[str, ...] = ("fp8", "int8")

#: How a TPU generation's slices get wraparound links (see :attr:`Hardware.wraparound`).
WRAPAROUND_RULES: tuple[str, ...] = ("axes-of-16", "full-cubes", "none")


@dataclass(frozen=True)
class Hardware(JsonMixin):
    """One accelerator's figures, per chip, and how its chips are networked.

    Bandwidths are bytes/s. ``ici_link_bandwidth`` is one ICI link in one direction;
    ``ici_link_bandwidth_bidi`` both directions of it (what a ring with wraparound can use).
    ``nvlink_bandwidth`` is one GPU's NVLink egress in one direction. The network between hosts
    (DCN between TPU slices, InfiniBand between GPU hosts) is given per device, one direction:
    ``network_bandwidth_per_device``. ``hop_latency`` is the fixed cost of one hop of a
    collective, whatever its size (the latency floor). ``host_bandwidth`` is one chip's link
    to its host's memory (PCIe / host DMA), one direction: what offloaded values and
    arguments in host memory cross.

    ``wraparound`` says which TPU slices have wraparound links: ``"axes-of-16"`` (v5e, v6e:
    an axis of 16 chips wraps), ``"full-cubes"`` (v4, v5p: slices made of whole 4x4x4 cubes
    wrap on every axis, smaller ones on none) or ``"none"``. ``host_shape`` is the block of
    chips one host process drives, as jax numbers them. ``sources`` maps a field name to the
    public document its number comes from.

    ``peak_flops_fp8`` and ``peak_flops_int8``: the matrix units' peak on fp8 and int8
    operands, where the chip's documents give one (``None``: not published; such matmuls
    are timed at the bf16 peak, and the estimate says so). :meth:`peak_for` picks by
    precision.

    ``matmul_efficiency``: the fraction of those peaks a training step's matmuls sustain on
    this chip, where published runs measured on it show one (its source names them);
    ``None``: not known, and the predicted step times matmuls at the peak. The lower bound
    and MFU always take the peak.
    """

    name: str
    kind: str
    peak_flops_bf16: float
    hbm_bytes: int
    hbm_bandwidth: float
    hop_latency: float
    devices_per_host: int
    network_bandwidth_per_device: float | None = None
    ici_link_bandwidth: float | None = None
    ici_link_bandwidth_bidi: float | None = None
    torus_dims: int = 0
    wraparound: str = "none"
    pod_shape: tuple[int, ...] = ()
    host_shape: tuple[int, ...] = ()
    nvlink_bandwidth: float | None = None
    nvlink_bandwidth_bidi: float | None = None
    host_bandwidth: float | None = None
    peak_flops_fp8: float | None = None
    peak_flops_int8: float | None = None
    matmul_efficiency: float | None = None
    #: jax devices per chip: 2 on TPU7x, whose two TensorCores jax lists as two devices
    #: (v4's and v5p's join as one megacore device). Peaks and bandwidths stay per chip.
    devices_per_chip: int = 1
    preset: str = ""
    sources: dict[str, str] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        if self.kind not in ("tpu", "gpu", "cpu"):
            raise ValueError(f"Hardware.kind must be 'tpu', 'gpu' or 'cpu', got {self.kind!r}")
        if self.wraparound not in WRAPAROUND_RULES:
            raise ValueError(
                f"Hardware.wraparound must be one of {WRAPAROUND_RULES}, got {self.wraparound!r}"
            )
        for name in ("peak_flops_bf16", "hbm_bandwidth", "devices_per_host", "devices_per_chip"):
            if not getattr(self, name) > 0:
                raise ValueError(f"Hardware.{name} must be positive, got {getattr(self, name)}")
        for name in ("peak_flops_fp8", "peak_flops_int8"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise ValueError(f"Hardware.{name} must be positive or None, got {value}")
        eff = self.matmul_efficiency
        if eff is not None and not 0 < eff <= 1:
            raise ValueError(f"Hardware.matmul_efficiency must be in (0, 1] or None, got {eff}")
        if self.hbm_bytes < 0 or self.hop_latency < 0:
            raise ValueError("Hardware.hbm_bytes and hop_latency must not be negative")

    @property
    def network_bandwidth_per_host(self) -> float | None:
        """DCN (TPU) or InfiniBand (GPU) egress of one host, one direction, bytes/s."""
        if self.network_bandwidth_per_device is None:
            return None
        return self.network_bandwidth_per_device * self.devices_per_host

    def wraps(self, shape: tuple[int, ...]) -> tuple[bool, ...]:
        """Which axes of a slice of this ``shape`` have wraparound links."""
        if self.wraparound == "axes-of-16":
            return tuple(n == 16 for n in shape)
        if self.wraparound == "full-cubes":
            whole = all(n % 4 == 0 for n in shape) and len(shape) == 3
            return tuple(whole for _ in shape)
        return tuple(False for _ in shape)

    def published_peak(self, precision: str) -> float | None:
        """The chip's own peak for ``precision`` (``"fp8"``, ``"int8"``), ``None`` where its
        documents give none."""
        return {"fp8": self.peak_flops_fp8, "int8": self.peak_flops_int8}.get(precision)

    def peak_for(self, precision: str = "") -> float:
        """Peak FLOP/s of matmuls whose operands are ``precision`` (``"fp8"``, ``"int8"``;
        anything else, or a precision without a published figure: the bf16 peak)."""
        return self.published_peak(precision) or self.peak_flops_bf16

    def peaks(self, share: int = 1) -> dict[str, float]:
        """Peak FLOP/s by matmul precision (``""``: bf16 and wider), each split ``share``
        ways (the devices of one chip)."""
        out = {"": self.peak_flops_bf16 / share}
        for precision in NARROW_PRECISIONS:
            out[precision] = self.peak_for(precision) / share
        return out

    def source(self, name: str) -> str:
        """Where the number in field ``name`` comes from (``""`` when not recorded)."""
        return self.sources.get(name, "")


@dataclass(frozen=True)
class Target(JsonMixin):
    """Hardware wired into one topology: what an estimate is made for.

    For a TPU, ``shape`` is the slice's chips along the physical axes (x, y[, z]) and
    ``wraparound`` says which of those axes close into a ring; ``num_slices`` slices are joined
    by DCN. For GPUs, ``shape`` is ``(hosts, gpus per host)``: NVLink inside a host, the
    network between hosts. ``devices_per_chip`` is how many jax devices share one chip (2 on
    TPU7x, and on a v4 topology jax lists per core). ``placement`` says how a mesh's devices
    were put on the chips when they carry no coordinates themselves (empty when they do).
    """

    hardware: Hardware
    name: str
    shape: tuple[int, ...]
    wraparound: tuple[bool, ...]
    num_hosts: int
    devices_per_host: int
    num_slices: int = 1
    devices_per_chip: int = 1
    placement: str = ""

    def __post_init__(self) -> None:
        if len(self.wraparound) != len(self.shape):
            raise ValueError("Target.wraparound needs one flag per axis of shape")
        if any(n < 1 for n in self.shape) or self.num_slices < 1 or self.devices_per_chip < 1:
            raise ValueError(f"Target {self.name!r}: sizes must be at least 1")

    @property
    def kind(self) -> str:
        return self.hardware.kind

    @property
    def chips_per_slice(self) -> int:
        return math.prod(self.shape)

    @property
    def chips(self) -> int:
        """Chips (GPUs) in the whole target, over all slices."""
        return self.chips_per_slice * self.num_slices

    @property
    def devices(self) -> int:
        """jax devices in the whole target."""
        return self.chips * self.devices_per_chip

    @property
    def shape_text(self) -> str:
        return "x".join(str(n) for n in self.shape)

    @property
    def label(self) -> str:
        """A human name, e.g. ``TPU v5e 4x4 (16 chips, 4 hosts)``."""
        unit = ("GPU" if self.kind == "gpu" else "chip") + ("" if self.chips == 1 else "s")
        hosts = f"{self.num_hosts} host" + ("" if self.num_hosts == 1 else "s")
        slices = f"{self.num_slices} x " if self.num_slices > 1 else ""
        tail = ", DCN between slices" if self.num_slices > 1 else ""
        devices = f"{self.devices} devices, " if self.devices_per_chip > 1 else ""
        return (
            f"{slices}{self.hardware.name} {self.shape_text} ({self.chips} {unit}, {devices}"
            f"{hosts}{tail})"
        )

    def with_placement(self, placement: str) -> Target:
        """The same target with a note on how the mesh was placed on it."""
        return replace(self, placement=placement)

    def __str__(self) -> str:
        return self.label
