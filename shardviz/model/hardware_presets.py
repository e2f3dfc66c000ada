"""Published figures of common accelerators, each with the public document it comes from.

``hardware("v5e")`` returns a :class:`~shardviz.model.hardware.Hardware`; build your own
``Hardware(...)`` for anything not here. Numbers are per chip (per GPU), bytes and bytes/s.
"""

from __future__ import annotations

import re

from shardviz.errors import HardwareError, problem
from shardviz.model.hardware import Hardware

GiB = 1024**3

# Public sources, named once and cited next to each number below.
BOOK = "How to Scale Your Model (jax-ml/scaling-book)"
BOOK_TPU_TABLE = f"{BOOK}, tpus.md, 'TPU Specs' chip table"
BOOK_ICI_TABLE = f"{BOOK}, tpus.md, 'TPU Specs' interconnect table"
BOOK_DCN = f"{BOOK}, tpus.md: DCN ~6.25e9 B/s per TPU (12.5e9 on v6e, 3.125e9 on v5e)"
BOOK_HOP = f"{BOOK}, sharding.md, 'A note on ICI latency': about 1 us per hop"
BOOK_WRAP_2D = f"{BOOK}, tpus.md: v5e/v6e pods are a 16x16 2D torus, wraparound only on axes of 16"
BOOK_WRAP_3D = (
    f"{BOOK}, tpus.md: v4/v5p slices of whole 4x4x4 cubes wrap (optical switches); "
    "smaller ones (e.g. 2x2x4) do not"
)
BOOK_GPU_NET = (
    f"{BOOK}, gpus.md: H100 GPU egress 450e9 B/s over NVLink; one 400 Gb/s ConnectX-7 "
    "NIC per GPU, 400e9 B/s per 8-GPU node"
)
LIBTPU_HOSTS = (
    "libtpu 0.0.42 deviceless topologies: 4 chips per host process (2x2 or 2x2x1 blocks); "
    "the book's tpus.md notes Cloud TPU VMs expose 4 chips each"
)
CLOUD_V5E = "cloud.google.com/tpu/docs/v5e: 16 GB HBM2 per chip, 256-chip pod, 2D torus"
CLOUD_V5P = "cloud.google.com/tpu/docs/v5p: 95 GB HBM2e at 2765 GBps per chip"
CLOUD_V6E = "cloud.google.com/tpu/docs/v6e: 32 GB HBM per chip"
CLOUD_V4 = "cloud.google.com/tpu/docs/v4: 32 GiB HBM2 per chip; 275 teraflops (bf16 or int8)"
CLOUD_V5E_INT8 = "cloud.google.com/tpu/docs/v5e: peak compute per chip (Int8) 393 TOPs"
CLOUD_V6E_INT8 = "cloud.google.com/tpu/docs/v6e: peak compute per chip (Int8) 1836 TOPs"
CLOUD_TPU7X = (
    "cloud.google.com/tpu/docs/tpu7x, table of v5p, v6e and TPU7x: per chip BF16 459 / 918 / "
    "2307 TFLOPs, FP8 459 / 918 / 4614 TFLOPs, HBM 95 / 32 / 192 GiB at 2765 / 1638 / 7380 "
    "GB/s, 2 / 1 / 2 TensorCores, bidirectional ICI 1200 / 800 / 1200 GB/s, DCN 50 / 100 / "
    "100 Gb/s; 9216 chips per TPU7x pod; 4 chips per VM"
)
TPU7X_LINKS = (
    f"{CLOUD_TPU7X}: TPU7x has v5p's ICI per chip over the same 3D torus of 6 links, so "
    f"v5p's per-link figure ({BOOK_ICI_TABLE})"
)
TPU7X_WRAP = f"{CLOUD_TPU7X} (TPU7x shares v5p's 3D torus of 4x4x4 cubes); as v5p, {BOOK_WRAP_3D}"
H100_SHEET = (
    "NVIDIA H100 Tensor Core GPU datasheet, H100 SXM: BF16 1,979 TFLOPS with sparsity "
    "(half without), FP8 and INT8 3,958 with sparsity (half without), 80GB HBM3, "
    "3.35TB/s, NVLink 900GB/s"
)
A100_SHEET = (
    "NVIDIA A100 Tensor Core GPU datasheet, A100 80GB SXM: BF16 312 TFLOPS dense "
    "(624 with sparsity), INT8 624 TOPS dense, no FP8, 80GB HBM2e, 2,039GB/s, NVLink 600GB/s"
)
DGX_A100_NET = "NVIDIA DGX A100 datasheet: 8 single-port ConnectX-6 200Gb/s HDR InfiniBand"
BOOK_PCIE = (
    f"{BOOK}, tpus.md, 'Networking' and Questions 3 and 6: PCIe typically 1.5e10 bytes/s "
    "between a TPU chip and its host's DRAM"
)
BOOK_PCIE_V6E = (
    f"{BOOK}, tpus.md, 'Networking' (its footnote to the PCIe figure): Trillium (TPU v6e) has "
    "32GB/s, about twice v5's 1.5e10 bytes/s"
)
FIT_V6E = (
    "fitted on the measured steps of three published runs on v6e-256, Llama 3.1 8B and 70B "
    "and Gemma 3 12B (tpu-recipes training/trillium; benchmarks/fidelity.py --fit, runs 8b, "
    "70b, gemma3-12b; the other runs' errors apart in benchmarks/README.md)"
)
H100_PCIE = "NVIDIA H100 Tensor Core GPU datasheet, H100 SXM: PCIe Gen5 128GB/s (both ways)"
A100_PCIE = "NVIDIA A100 Tensor Core GPU datasheet, A100 80GB SXM: PCIe Gen4 64GB/s (both ways)"
NCCL_HOP = (
    "the-dsvolk.github.io/ai-perf/ai-infra/nccl-perf.html, NCCL protocol table: about 1 us "
    "per hop with the LL protocol (2 us LL128, 6 us Simple); the smallest is used as a floor"
)


def _v5e() -> Hardware:
    return Hardware(
        name="TPU v5e",
        kind="tpu",
        preset="v5e",
        peak_flops_bf16=1.97e14,  # BOOK_TPU_TABLE (Cloud docs: 197 TFLOPs)
        hbm_bytes=16 * GiB,  # CLOUD_V5E; the book: "TPU v5e has 16GiB of HBM"
        hbm_bandwidth=8.1e11,  # BOOK_TPU_TABLE
        ici_link_bandwidth=4.5e10,  # BOOK_ICI_TABLE, one way
        ici_link_bandwidth_bidi=9e10,  # BOOK_ICI_TABLE, both ways
        torus_dims=2,
        wraparound="axes-of-16",  # BOOK_WRAP_2D
        pod_shape=(16, 16),  # BOOK_TPU_TABLE, pod size
        host_shape=(2, 2),  # LIBTPU_HOSTS
        devices_per_host=4,  # LIBTPU_HOSTS
        network_bandwidth_per_device=3.125e9,  # BOOK_DCN
        hop_latency=1e-6,  # BOOK_HOP
        host_bandwidth=1.5e10,  # BOOK_PCIE
        peak_flops_int8=3.93e14,  # CLOUD_V5E_INT8 (no fp8 figure)
        sources={
            "peak_flops_int8": CLOUD_V5E_INT8,
            "host_bandwidth": BOOK_PCIE,
            "peak_flops_bf16": BOOK_TPU_TABLE,
            "hbm_bytes": CLOUD_V5E,
            "hbm_bandwidth": BOOK_TPU_TABLE,
            "ici_link_bandwidth": BOOK_ICI_TABLE,
            "ici_link_bandwidth_bidi": BOOK_ICI_TABLE,
            "wraparound": BOOK_WRAP_2D,
            "pod_shape": BOOK_TPU_TABLE,
            "host_shape": LIBTPU_HOSTS,
            "devices_per_host": LIBTPU_HOSTS,
            "network_bandwidth_per_device": BOOK_DCN,
            "hop_latency": BOOK_HOP,
        },
    )


def _v6e() -> Hardware:
    return Hardware(
        name="TPU v6e",
        kind="tpu",
        preset="v6e",
        peak_flops_bf16=9.2e14,  # BOOK_TPU_TABLE
        hbm_bytes=32 * GiB,  # CLOUD_V6E (book table: 32GB)
        hbm_bandwidth=1.6e12,  # BOOK_TPU_TABLE
        ici_link_bandwidth=9e10,  # BOOK_ICI_TABLE, one way
        ici_link_bandwidth_bidi=1.8e11,  # BOOK_ICI_TABLE, both ways
        torus_dims=2,
        wraparound="axes-of-16",  # BOOK_WRAP_2D
        pod_shape=(16, 16),  # BOOK_TPU_TABLE
        host_shape=(2, 2),  # LIBTPU_HOSTS
        devices_per_host=4,  # LIBTPU_HOSTS
        network_bandwidth_per_device=1.25e10,  # BOOK_DCN
        hop_latency=1e-6,  # BOOK_HOP
        host_bandwidth=3.2e10,  # BOOK_PCIE_V6E
        peak_flops_fp8=9.18e14,  # CLOUD_TPU7X: the same as bf16
        matmul_efficiency=0.714,  # FIT_V6E
        peak_flops_int8=1.836e15,  # CLOUD_V6E_INT8
        sources={
            "peak_flops_fp8": CLOUD_TPU7X,
            "peak_flops_int8": CLOUD_V6E_INT8,
            "host_bandwidth": BOOK_PCIE_V6E,
            "matmul_efficiency": FIT_V6E,
            "peak_flops_bf16": BOOK_TPU_TABLE,
            "hbm_bytes": CLOUD_V6E,
            "hbm_bandwidth": BOOK_TPU_TABLE,
            "ici_link_bandwidth": BOOK_ICI_TABLE,
            "ici_link_bandwidth_bidi": BOOK_ICI_TABLE,
            "wraparound": BOOK_WRAP_2D,
            "pod_shape": BOOK_TPU_TABLE,
            "host_shape": LIBTPU_HOSTS,
            "devices_per_host": LIBTPU_HOSTS,
            "network_bandwidth_per_device": BOOK_DCN,
            "hop_latency": BOOK_HOP,
        },
    )


def _v5p() -> Hardware:
    return Hardware(
        name="TPU v5p",
        kind="tpu",
        preset="v5p",
        peak_flops_bf16=4.59e14,  # BOOK_TPU_TABLE (Cloud docs: 459 TFLOPs)
        hbm_bytes=95 * GiB,  # CLOUD_V5P (book table rounds to 96GB)
        hbm_bandwidth=2.765e12,  # CLOUD_V5P (book table: 2.8e12)
        ici_link_bandwidth=9e10,  # BOOK_ICI_TABLE, one way
        ici_link_bandwidth_bidi=1.8e11,  # BOOK_ICI_TABLE, both ways
        torus_dims=3,
        wraparound="full-cubes",  # BOOK_WRAP_3D
        pod_shape=(16, 20, 28),  # BOOK_TPU_TABLE, pod size
        host_shape=(2, 2, 1),  # BOOK_TPU_TABLE host size; LIBTPU_HOSTS
        devices_per_host=4,  # LIBTPU_HOSTS
        network_bandwidth_per_device=6.25e9,  # BOOK_DCN
        hop_latency=1e-6,  # BOOK_HOP
        host_bandwidth=1.5e10,  # BOOK_PCIE; the book gives no other figure for v5p
        peak_flops_fp8=4.59e14,  # CLOUD_TPU7X: the same as bf16 (no int8 figure)
        sources={
            "peak_flops_fp8": CLOUD_TPU7X,
            "host_bandwidth": BOOK_PCIE,
            "peak_flops_bf16": BOOK_TPU_TABLE,
            "hbm_bytes": CLOUD_V5P,
            "hbm_bandwidth": CLOUD_V5P,
            "ici_link_bandwidth": BOOK_ICI_TABLE,
            "ici_link_bandwidth_bidi": BOOK_ICI_TABLE,
            "wraparound": BOOK_WRAP_3D,
            "pod_shape": BOOK_TPU_TABLE,
            "host_shape": BOOK_TPU_TABLE,
            "devices_per_host": LIBTPU_HOSTS,
            "network_bandwidth_per_device": BOOK_DCN,
            "hop_latency": BOOK_HOP,
        },
    )


def _v4() -> Hardware:
    return Hardware(
        name="TPU v4",
        kind="tpu",
        preset="v4",
        peak_flops_bf16=2.75e14,  # BOOK_TPU_TABLE ("TPU v4p")
        hbm_bytes=32 * GiB,  # CLOUD_V4 (book table: 32GB)
        hbm_bandwidth=1.2e12,  # BOOK_TPU_TABLE
        ici_link_bandwidth=4.5e10,  # BOOK_ICI_TABLE, one way
        ici_link_bandwidth_bidi=9e10,  # BOOK_ICI_TABLE, both ways
        torus_dims=3,
        wraparound="full-cubes",  # BOOK_WRAP_3D
        pod_shape=(16, 16, 16),  # BOOK_TPU_TABLE, pod size
        host_shape=(2, 2, 1),  # BOOK_TPU_TABLE host size; LIBTPU_HOSTS
        devices_per_host=4,  # LIBTPU_HOSTS
        network_bandwidth_per_device=6.25e9,  # BOOK_DCN (the per-TPU default)
        hop_latency=1e-6,  # BOOK_HOP
        host_bandwidth=1.5e10,  # BOOK_PCIE; the book gives no other figure for v4
        peak_flops_int8=2.75e14,  # CLOUD_V4: bf16 or int8
        sources={
            "peak_flops_int8": CLOUD_V4,
            "host_bandwidth": BOOK_PCIE,
            "peak_flops_bf16": BOOK_TPU_TABLE,
            "hbm_bytes": CLOUD_V4,
            "hbm_bandwidth": BOOK_TPU_TABLE,
            "ici_link_bandwidth": BOOK_ICI_TABLE,
            "ici_link_bandwidth_bidi": BOOK_ICI_TABLE,
            "wraparound": BOOK_WRAP_3D,
            "pod_shape": BOOK_TPU_TABLE,
            "host_shape": BOOK_TPU_TABLE,
            "devices_per_host": LIBTPU_HOSTS,
            "network_bandwidth_per_device": BOOK_DCN,
            "hop_latency": BOOK_HOP,
        },
    )


def _tpu7x() -> Hardware:
    return Hardware(
        name="TPU7x",
        kind="tpu",
        preset="tpu7x",
        peak_flops_bf16=2.307e15,  # CLOUD_TPU7X
        peak_flops_fp8=4.614e15,  # CLOUD_TPU7X (no int8 figure)
        hbm_bytes=192 * GiB,  # CLOUD_TPU7X
        hbm_bandwidth=7.38e12,  # CLOUD_TPU7X
        ici_link_bandwidth=9e10,  # TPU7X_LINKS, one way
        ici_link_bandwidth_bidi=1.8e11,  # TPU7X_LINKS, both ways
        torus_dims=3,
        wraparound="full-cubes",  # TPU7X_WRAP
        pod_shape=(16, 24, 24),  # CLOUD_TPU7X: 9216 chips, 144 cubes of 4x4x4
        host_shape=(2, 2, 1),  # LIBTPU_HOSTS; CLOUD_TPU7X: 4 chips per VM
        devices_per_host=4,  # CLOUD_TPU7X: 4 chips per VM
        devices_per_chip=2,  # CLOUD_TPU7X: 2 TensorCores, each a jax device
        network_bandwidth_per_device=1.25e10,  # CLOUD_TPU7X: 100 Gb/s per chip
        hop_latency=1e-6,  # BOOK_HOP
        host_bandwidth=1.5e10,  # BOOK_PCIE; no TPU7x figure is published
        sources={
            "host_bandwidth": BOOK_PCIE,
            "peak_flops_bf16": CLOUD_TPU7X,
            "peak_flops_fp8": CLOUD_TPU7X,
            "hbm_bytes": CLOUD_TPU7X,
            "hbm_bandwidth": CLOUD_TPU7X,
            "ici_link_bandwidth": TPU7X_LINKS,
            "ici_link_bandwidth_bidi": TPU7X_LINKS,
            "wraparound": TPU7X_WRAP,
            "pod_shape": CLOUD_TPU7X,
            "host_shape": LIBTPU_HOSTS,
            "devices_per_host": CLOUD_TPU7X,
            "devices_per_chip": CLOUD_TPU7X,
            "network_bandwidth_per_device": CLOUD_TPU7X,
            "hop_latency": BOOK_HOP,
        },
    )


def _h100() -> Hardware:
    return Hardware(
        name="NVIDIA H100 SXM",
        kind="gpu",
        preset="h100",
        peak_flops_bf16=9.895e14,  # H100_SHEET: 1,979 TFLOPS sparse / 2 (book gpus.md: 9.9e14)
        hbm_bytes=80 * GiB,  # H100_SHEET: 80GB
        hbm_bandwidth=3.35e12,  # H100_SHEET: 3.35TB/s
        nvlink_bandwidth=4.5e11,  # H100_SHEET 900GB/s total = 450GB/s each way; BOOK_GPU_NET
        nvlink_bandwidth_bidi=9e11,  # H100_SHEET: 900GB/s
        devices_per_host=8,  # BOOK_GPU_NET: 8 GPUs per node (DGX/HGX H100)
        network_bandwidth_per_device=5e10,  # BOOK_GPU_NET: 400 Gb/s = 50e9 B/s per GPU
        hop_latency=1e-6,  # NCCL_HOP
        host_bandwidth=6.4e10,  # H100_PCIE, one way
        peak_flops_fp8=1.979e15,  # H100_SHEET: 3,958 sparse / 2
        peak_flops_int8=1.979e15,  # H100_SHEET: 3,958 sparse / 2
        sources={
            "peak_flops_fp8": H100_SHEET,
            "peak_flops_int8": H100_SHEET,
            "host_bandwidth": H100_PCIE,
            "peak_flops_bf16": H100_SHEET,
            "hbm_bytes": H100_SHEET,
            "hbm_bandwidth": H100_SHEET,
            "nvlink_bandwidth": H100_SHEET,
            "nvlink_bandwidth_bidi": H100_SHEET,
            "devices_per_host": BOOK_GPU_NET,
            "network_bandwidth_per_device": BOOK_GPU_NET,
            "hop_latency": NCCL_HOP,
        },
    )


def _a100() -> Hardware:
    return Hardware(
        name="NVIDIA A100 SXM",
        kind="gpu",
        preset="a100",
        peak_flops_bf16=3.12e14,  # A100_SHEET: 312 TFLOPS dense
        hbm_bytes=80 * GiB,  # A100_SHEET: 80GB
        hbm_bandwidth=2.039e12,  # A100_SHEET: 2,039GB/s
        nvlink_bandwidth=3e11,  # A100_SHEET 600GB/s total = 300GB/s each way
        nvlink_bandwidth_bidi=6e11,  # A100_SHEET: 600GB/s
        devices_per_host=8,  # DGX_A100_NET: 8 GPUs, one NIC each
        network_bandwidth_per_device=2.5e10,  # DGX_A100_NET: 200 Gb/s = 25e9 B/s per GPU
        hop_latency=1e-6,  # NCCL_HOP
        host_bandwidth=3.2e10,  # A100_PCIE, one way
        peak_flops_int8=6.24e14,  # A100_SHEET: 624 dense (no fp8)
        sources={
            "peak_flops_int8": A100_SHEET,
            "host_bandwidth": A100_PCIE,
            "peak_flops_bf16": A100_SHEET,
            "hbm_bytes": A100_SHEET,
            "hbm_bandwidth": A100_SHEET,
            "nvlink_bandwidth": A100_SHEET,
            "nvlink_bandwidth_bidi": A100_SHEET,
            "devices_per_host": DGX_A100_NET,
            "network_bandwidth_per_device": DGX_A100_NET,
            "hop_latency": NCCL_HOP,
        },
    )


_PRESETS = {
    "v5e": _v5e,
    "v5p": _v5p,
    "v6e": _v6e,
    "v4": _v4,
    "tpu7x": _tpu7x,
    "h100": _h100,
    "a100": _a100,
}

#: Other spellings users and jax use for the presets (lower case, spaces and dashes removed).
_ALIASES = {
    "v5litepod": "v5e",
    "v5lite": "v5e",
    "trillium": "v6e",
    "v6lite": "v6e",
    "v4p": "v4",
    "v5": "v5p",
    "7x": "tpu7x",  # "tpu7x" with the "tpu" prefix taken off, as every name is
    "v7x": "tpu7x",
    "v7": "tpu7x",
    "ironwood": "tpu7x",
}

PRESET_NAMES: tuple[str, ...] = tuple(_PRESETS)


def preset_key(name: str) -> str | None:
    """The preset a name means (``"TPU v5e"``, ``"tpu-v5e"``, ``"H100"`` -> its key), or None."""
    key = re.sub(r"[\s_\-]+", "", name.strip().lower())
    for prefix in ("tpu", "nvidia"):
        if key.startswith(prefix) and len(key) > len(prefix):
            key = key[len(prefix) :]
    key = _ALIASES.get(key, key)
    for gpu in ("h100", "a100"):
        if key.startswith(gpu):
            return gpu
    return key if key in _PRESETS else None


def hardware(name: str) -> Hardware:
    """The published figures of a known accelerator.

    Args:
        name: ``"v5e"``, ``"v5p"``, ``"v6e"``, ``"v4"``, ``"tpu7x"``, ``"h100"`` or ``"a100"`` (any case;
            ``"TPU v5e"`` and ``"tpu-v5e"`` work too).

    Raises:
        HardwareError: for a name that is none of these.
    """
    key = preset_key(name) if isinstance(name, str) else None
    if key is None:
        raise HardwareError(
            problem(
                f"hardware({name!r})",
                "no preset of that name",
                f"use one of {', '.join(PRESET_NAMES)}, or build your own "
                "shardviz.Hardware(name=..., kind=..., peak_flops_bf16=..., ...)",
            )
        )
    return _PRESETS[key]()
