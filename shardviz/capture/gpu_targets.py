"""GPU target descriptions for compiling without the GPU (XLA's ``GpuTargetConfigProto``).

XLA's GPU compiler reads the device's properties (SM count, shared memory, registers,
bandwidth, compute capability) from the driver; a deviceless compile takes them from a
target description instead. jax ships none, so shardviz writes its own from each GPU's
published specifications. Each figure names where it is published:

- [H100-WP] NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022), tables 1-3
  (H100 SXM5: 132 SMs, 128 FP32 cores per SM, 50 MB L2, 80 GB HBM3 at 3.35 TB/s,
  1.98 GHz boost for the SMs);
- [A100-WP] NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020), tables 1-3, and the
  A100 80GB datasheet (2021) (A100 SXM4 80GB: 108 SMs, 64 FP32 cores per SM, 40 MB L2,
  80 GB HBM2e at 2,039 GB/s, 1.41 GHz boost);
- [CUDA-CC] CUDA C++ Programming Guide, "Compute Capabilities", table of technical
  specifications per compute capability (threads per block 1024, warp 32, threads per SM 2048,
  65,536 32-bit registers per SM and per block, 48 KB static shared memory per block, shared
  memory per SM 228 KB on 9.0 and 164 KB on 8.0 with 1 KB reserved per block when opted in,
  grid limits 2^31-1 x 65,535 x 65,535).
- [JAX-CUDA] the CUDA 12 and cuDNN 9 versions jax 0.10's CUDA wheels are built against.
"""

from __future__ import annotations

from dataclasses import dataclass

KIB = 1024
GIB = 1024**3


@dataclass(frozen=True)
class GpuSpec:
    """The properties XLA's GPU compiler needs, for one GPU model."""

    name: str  # what the driver calls it (device_kind)
    compute_capability: tuple[int, int]
    sm_count: int
    fp32_cores_per_sm: int
    memory_bytes: int
    memory_bandwidth: float  # bytes/s
    l2_bytes: int
    clock_ghz: float
    shared_memory_per_sm: int
    shared_memory_per_block_optin: int


#: Per GPU model, from the sources in the module docstring.
GPU_SPECS: dict[str, GpuSpec] = {
    "h100": GpuSpec(
        name="NVIDIA H100 80GB HBM3",
        compute_capability=(9, 0),  # [CUDA-CC]
        sm_count=132,  # [H100-WP] H100 SXM5
        fp32_cores_per_sm=128,  # [H100-WP]
        memory_bytes=80 * GIB,  # [H100-WP] 80 GB HBM3
        memory_bandwidth=3.35e12,  # [H100-WP] 3.35 TB/s
        l2_bytes=50 * 1024 * KIB,  # [H100-WP] 50 MB
        clock_ghz=1.98,  # [H100-WP] boost clock
        shared_memory_per_sm=228 * KIB,  # [CUDA-CC] 9.0
        shared_memory_per_block_optin=227 * KIB,  # [CUDA-CC] 9.0
    ),
    "a100": GpuSpec(
        name="NVIDIA A100-SXM4-80GB",
        compute_capability=(8, 0),  # [CUDA-CC]
        sm_count=108,  # [A100-WP]
        fp32_cores_per_sm=64,  # [A100-WP]
        memory_bytes=80 * GIB,  # [A100-WP] 80 GB HBM2e
        memory_bandwidth=2.039e12,  # [A100-WP] 2,039 GB/s (80GB SXM)
        l2_bytes=40 * 1024 * KIB,  # [A100-WP] 40 MB
        clock_ghz=1.41,  # [A100-WP] boost clock
        shared_memory_per_sm=164 * KIB,  # [CUDA-CC] 8.0
        shared_memory_per_block_optin=163 * KIB,  # [CUDA-CC] 8.0
    ),
}

# The same on every supported compute capability ([CUDA-CC]).
_THREADS_PER_BLOCK = 1024
_WARP = 32
_THREADS_PER_SM = 2048
_REGISTERS = 65536
_STATIC_SHARED_PER_BLOCK = 48 * KIB
_GRID = (2**31 - 1, 65535, 65535)
_CUDA = (12, 8, 0)  # [JAX-CUDA]
_CUDNN = (9, 8, 0)  # [JAX-CUDA]


def target_config(gpu: str) -> str:
    """The ``GpuTargetConfigProto`` text for ``gpu`` (a key of :data:`GPU_SPECS`)."""
    s = GPU_SPECS[gpu]
    major, minor = s.compute_capability
    info = {
        "threads_per_block_limit": _THREADS_PER_BLOCK,
        "threads_per_warp": _WARP,
        "shared_memory_per_block": _STATIC_SHARED_PER_BLOCK,
        "shared_memory_per_core": s.shared_memory_per_sm,
        "threads_per_core_limit": _THREADS_PER_SM,
        "core_count": s.sm_count,
        "fpus_per_core": s.fp32_cores_per_sm,
        "block_dim_limit_x": _GRID[0],
        "block_dim_limit_y": _GRID[1],
        "block_dim_limit_z": _GRID[2],
        "memory_bandwidth": int(s.memory_bandwidth),
        "l2_cache_size": s.l2_bytes,
        "clock_rate_ghz": s.clock_ghz,
        "device_memory_size": s.memory_bytes,
        "shared_memory_per_block_optin": s.shared_memory_per_block_optin,
    }
    lines = ["gpu_device_info {"]
    lines += [f"  {k}: {v}" for k, v in info.items()]
    lines += [
        f"  cuda_compute_capability {{ major: {major} minor: {minor} }}",
        f"  registers_per_core_limit: {_REGISTERS}",
        f"  registers_per_block_limit: {_REGISTERS}",
        "}",
        'platform_name: "CUDA"',
        "dnn_version_info {{ major: {} minor: {} patch: {} }}".format(*_CUDNN),
        "runtime_version {{ major: {} minor: {} patch: {} }}".format(*_CUDA),
        f'device_description_str: "{s.name}"',
    ]
    return "\n".join(lines) + "\n"
