"""The GPU target descriptions shardviz ships (no jax): each published figure lands in the
field XLA's GPU compiler reads. (The live deviceless compiles that use them are in
tests/capture/test_backends_live.py and tests/explainer/test_targets.py.)"""

from __future__ import annotations

import re

import pytest

from shardviz.capture.gpu_targets import GPU_SPECS, target_config

# (field, value) as published: NVIDIA's H100 and A100 whitepapers / datasheets and the CUDA
# programming guide's compute-capability table (see shardviz/capture/gpu_targets.py).
PUBLISHED = {
    "h100": {
        "core_count": 132,
        "fpus_per_core": 128,
        "memory_bandwidth": 3_350_000_000_000,
        "l2_cache_size": 50 * 2**20,
        "clock_rate_ghz": 1.98,
        "device_memory_size": 80 * 2**30,
        "shared_memory_per_core": 228 * 1024,
    },
    "a100": {
        "core_count": 108,
        "fpus_per_core": 64,
        "memory_bandwidth": 2_039_000_000_000,
        "l2_cache_size": 40 * 2**20,
        "clock_rate_ghz": 1.41,
        "device_memory_size": 80 * 2**30,
        "shared_memory_per_core": 164 * 1024,
    },
}


def fields(text: str) -> dict[str, float]:
    return {k: float(v) for k, v in re.findall(r"(\w+): ([\d.]+)", text)}


@pytest.mark.parametrize("gpu", sorted(GPU_SPECS))
def test_published_figures_reach_the_compiler(gpu: str) -> None:
    text = target_config(gpu)
    got = fields(text)
    for key, want in PUBLISHED[gpu].items():
        assert got[key] == pytest.approx(want), key
    major, minor = GPU_SPECS[gpu].compute_capability
    assert f"cuda_compute_capability {{ major: {major} minor: {minor} }}" in text
    assert (major, minor) == {"h100": (9, 0), "a100": (8, 0)}[gpu]
    assert 'platform_name: "CUDA"' in text
    assert f'device_description_str: "{GPU_SPECS[gpu].name}"' in text
    # Balanced braces: one gpu_device_info block and its nested messages.
    assert text.count("{") == text.count("}") == 4
