"""Hardware presets against their public sources, targets and their wraparound rules.

Each expected number is written here a second time, next to the source it comes from, so a
typo in either place fails.
"""

from __future__ import annotations

import pytest

import shardviz as sv
from shardviz.analysis.estimate import hardware, target_for
from shardviz.errors import HardwareError, ShardvizError
from shardviz.model import Hardware, Target
from shardviz.model.hardware_presets import PRESET_NAMES
from shardviz.model.targets import standard_shape

GiB = 1024**3

# (preset, field, value, source). Book = "How to Scale Your Model", jax-ml/scaling-book.
PUBLISHED = [
    # tpus.md "TPU Specs" chip table: bf16 FLOP/s, HBM bandwidth
    ("v5e", "peak_flops_bf16", 1.97e14, "book tpus.md chip table"),
    ("v5e", "hbm_bandwidth", 8.1e11, "book tpus.md chip table"),
    ("v6e", "peak_flops_bf16", 9.2e14, "book tpus.md chip table"),
    ("v6e", "hbm_bandwidth", 1.6e12, "book tpus.md chip table"),
    ("v5p", "peak_flops_bf16", 4.59e14, "book tpus.md chip table"),
    ("v4", "peak_flops_bf16", 2.75e14, "book tpus.md chip table (v4p)"),
    ("v4", "hbm_bandwidth", 1.2e12, "book tpus.md chip table (v4p)"),
    # Cloud TPU docs: HBM capacity, v5p bandwidth
    ("v5e", "hbm_bytes", 16 * GiB, "cloud.google.com/tpu/docs/v5e: 16 GB"),
    ("v6e", "hbm_bytes", 32 * GiB, "cloud.google.com/tpu/docs/v6e: 32 GB"),
    ("v5p", "hbm_bytes", 95 * GiB, "cloud.google.com/tpu/docs/v5p: 95 GB"),
    ("v5p", "hbm_bandwidth", 2.765e12, "cloud.google.com/tpu/docs/v5p: 2765 GBps"),
    ("v4", "hbm_bytes", 32 * GiB, "cloud.google.com/tpu/docs/v4: 32 GiB"),
    # tpus.md interconnect table: ICI per link, one way and both ways
    ("v5e", "ici_link_bandwidth", 4.5e10, "book tpus.md ICI table"),
    ("v5e", "ici_link_bandwidth_bidi", 9e10, "book tpus.md ICI table"),
    ("v6e", "ici_link_bandwidth", 9e10, "book tpus.md ICI table"),
    ("v6e", "ici_link_bandwidth_bidi", 1.8e11, "book tpus.md ICI table"),
    ("v5p", "ici_link_bandwidth", 9e10, "book tpus.md ICI table"),
    ("v5p", "ici_link_bandwidth_bidi", 1.8e11, "book tpus.md ICI table"),
    ("v4", "ici_link_bandwidth", 4.5e10, "book tpus.md ICI table (v4p)"),
    ("v4", "ici_link_bandwidth_bidi", 9e10, "book tpus.md ICI table (v4p)"),
    # tpus.md: DCN per TPU
    ("v5e", "network_bandwidth_per_device", 3.125e9, "book tpus.md DCN"),
    ("v6e", "network_bandwidth_per_device", 12.5e9, "book tpus.md DCN"),
    ("v5p", "network_bandwidth_per_device", 6.25e9, "book tpus.md DCN"),
    # sharding.md: about 1 us per ICI hop
    ("v5e", "hop_latency", 1e-6, "book sharding.md ICI latency"),
    # NVIDIA datasheets (dense bf16 = half the sparse figure)
    ("h100", "peak_flops_bf16", 1979e12 / 2, "NVIDIA H100 SXM datasheet"),
    ("h100", "hbm_bytes", 80 * GiB, "NVIDIA H100 SXM datasheet: 80GB"),
    ("h100", "hbm_bandwidth", 3.35e12, "NVIDIA H100 SXM datasheet: 3.35TB/s"),
    ("h100", "nvlink_bandwidth_bidi", 900e9, "NVIDIA H100 SXM datasheet: NVLink 900GB/s"),
    ("h100", "nvlink_bandwidth", 450e9, "book gpus.md: 450GB/s GPU egress"),
    ("h100", "network_bandwidth_per_device", 400e9 / 8, "book gpus.md: 400 Gb/s NIC per GPU"),
    ("h100", "devices_per_host", 8, "book gpus.md: 8 GPUs per node"),
    ("a100", "peak_flops_bf16", 312e12, "NVIDIA A100 datasheet: 312 TFLOPS"),
    ("a100", "hbm_bytes", 80 * GiB, "NVIDIA A100 80GB SXM datasheet"),
    ("a100", "hbm_bandwidth", 2.039e12, "NVIDIA A100 80GB SXM datasheet: 2,039GB/s"),
    ("a100", "nvlink_bandwidth_bidi", 600e9, "NVIDIA A100 datasheet: NVLink 600GB/s"),
    ("a100", "network_bandwidth_per_device", 200e9 / 8, "DGX A100: 200 Gb/s HDR per GPU"),
]


@pytest.mark.parametrize(("preset", "name", "value", "source"), PUBLISHED)
def test_preset_matches_its_source(preset, name, value, source):
    hw = hardware(preset)
    assert getattr(hw, name) == pytest.approx(value), source
    assert hw.source(name), f"{preset}.{name} names no source"


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_every_number_names_its_source(preset):
    hw = hardware(preset)
    numbers = ["peak_flops_bf16", "hbm_bytes", "hbm_bandwidth", "hop_latency",
               "network_bandwidth_per_device", "devices_per_host"]  # fmt: skip
    numbers += (
        ["ici_link_bandwidth", "ici_link_bandwidth_bidi", "wraparound"] if hw.kind == "tpu" else []
    )
    numbers += ["nvlink_bandwidth", "nvlink_bandwidth_bidi"] if hw.kind == "gpu" else []
    for name in numbers:
        assert hw.source(name), f"{preset}.{name}"


def test_bidirectional_is_twice_one_way():
    for preset in PRESET_NAMES:
        hw = hardware(preset)
        one, both = (
            (hw.ici_link_bandwidth, hw.ici_link_bandwidth_bidi)
            if hw.kind == "tpu"
            else (hw.nvlink_bandwidth, hw.nvlink_bandwidth_bidi)
        )
        assert both == pytest.approx(2 * one)


def test_dcn_per_host():
    # tpus.md's older text: DCN about 2.5e10 B/s per 8-chip v5e host = 3.125e9 per chip.
    assert hardware("v5e").network_bandwidth_per_device * 8 == pytest.approx(2.5e10)
    assert hardware("h100").network_bandwidth_per_host == pytest.approx(400e9)  # gpus.md


@pytest.mark.parametrize("name", ["v5e", "V5E", "TPU v5e", "tpu-v5e", " v5litepod "])
def test_names_are_forgiving(name):
    assert hardware(name).preset == "v5e"


def test_gpu_names():
    assert hardware("H100").preset == "h100"
    assert hardware("NVIDIA A100").preset == "a100"
    assert sv.hardware("v6e").name == "TPU v6e"


def test_unknown_name_lists_the_known_ones():
    with pytest.raises(HardwareError) as err:
        hardware("v7x")
    assert isinstance(err.value, ShardvizError) and isinstance(err.value, ValueError)
    msg = str(err.value)
    for name in PRESET_NAMES:
        assert name in msg
    assert "Fix:" in msg


def test_user_hardware_round_trips_and_estimates():
    mine = Hardware(
        name="My chip", kind="tpu", peak_flops_bf16=1e15, hbm_bytes=64 * GiB, hbm_bandwidth=3e12,
        hop_latency=2e-6, devices_per_host=4, ici_link_bandwidth=1e11,
        ici_link_bandwidth_bidi=2e11, torus_dims=2, wraparound="axes-of-16", pod_shape=(16, 16),
        host_shape=(2, 2), sources={"peak_flops_bf16": "my measurement"},
    )  # fmt: skip
    assert Hardware.from_json(mine.to_json()) == mine
    t = target_for(mine, 16)
    assert t.shape == (4, 4) and t.hardware is mine
    assert Target.from_json(t.to_json()) == t


def test_bad_hardware_fields_are_refused():
    with pytest.raises(ValueError):
        Hardware("x", "fpga", 1, 1, 1, 0, 1)
    with pytest.raises(ValueError):
        Hardware("x", "tpu", 1, 1, 1, 0, 1, wraparound="sometimes")


class TestTargets:
    def test_standard_v5e_slices_follow_cloud_tpu_names(self):
        hw = hardware("v5e")
        got = {n: standard_shape(hw, n) for n in (1, 4, 8, 16, 32, 64, 128, 256)}
        assert got == {1: (1, 1), 4: (2, 2), 8: (2, 4), 16: (4, 4), 32: (4, 8), 64: (8, 8),
                       128: (8, 16), 256: (16, 16)}  # fmt: skip

    def test_standard_v5p_slices_follow_cloud_tpu_names(self):
        hw = hardware("v5p")
        got = {n: standard_shape(hw, n) for n in (4, 8, 32, 64, 128, 256)}
        assert got == {4: (2, 2, 1), 8: (2, 2, 2), 32: (2, 4, 4), 64: (4, 4, 4),
                       128: (4, 4, 8), 256: (4, 8, 8)}  # fmt: skip

    def test_v5e_16_devices_is_a_4x4_without_wraparound(self):
        t = target_for("v5e", 16)
        assert t.name == "v5e:4x4"
        assert t.wraparound == (False, False)
        assert t.label == "TPU v5e 4x4 (16 chips, 4 hosts)"

    @pytest.mark.parametrize(
        ("name", "wraps"),
        [
            # tpus.md: v5e/v6e wrap on axes of 16 (an 8x16 on its long axis) ...
            ("v5e:16x16", (True, True)),
            ("v5e:8x16", (False, True)),
            ("v6e:4x4", (False, False)),
            # ... v4/v5p on whole 4x4x4 cubes; a 2x2x4 has none.
            ("v5p:4x4x4", (True, True, True)),
            ("v4:4x4x8", (True, True, True)),
            ("v5p:2x2x4", (False, False, False)),
            ("v5p:2x2x2", (False, False, False)),
        ],
    )
    def test_wraparound_rule(self, name, wraps):
        assert target_for(name).wraparound == wraps

    def test_beyond_a_pod_is_several_slices_over_dcn(self):
        t = target_for("v5e", 512)
        assert t.num_slices == 2 and t.shape == (16, 16)
        assert "DCN" in t.label

    def test_gpu_hosts(self):
        assert target_for("h100", 16).shape == (2, 8)
        assert target_for("h100:2x8").label == "NVIDIA H100 SXM 2x8 (16 GPUs, 2 hosts)"
        assert target_for("h100:8").shape == (1, 8)
        assert target_for("a100", 4).shape == (1, 4)
        with pytest.raises(HardwareError):
            target_for("h100", 12)

    def test_bad_targets(self):
        with pytest.raises(HardwareError, match="Fix:"):
            target_for("v5e:4x4", 32)  # more devices than chips
        with pytest.raises(HardwareError):
            target_for("v5e:2x2x2")  # v5e is 2-D
        with pytest.raises(HardwareError):
            target_for("v5e:32x32")  # beyond the pod
        with pytest.raises(HardwareError):
            target_for("v5e")  # no size
        with pytest.raises(HardwareError):
            target_for("quantum:4x4")
