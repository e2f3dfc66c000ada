"""Hardware presets against their public sources, targets and their wraparound rules.

Each expected number is written here a second time, next to the source it comes from, so a
typo in either place fails.
"""

from __future__ import annotations

import math

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
    # Peaks by operand precision: Cloud TPU docs and the datasheets (dense = sparse / 2)
    ("v5e", "peak_flops_int8", 393e12, "cloud.google.com/tpu/docs/v5e: Int8 393 TOPs"),
    ("v6e", "peak_flops_int8", 1836e12, "cloud.google.com/tpu/docs/v6e: Int8 1836 TOPs"),
    ("v6e", "peak_flops_fp8", 918e12, "cloud.google.com/tpu/docs/tpu7x table: v6e FP8 918"),
    ("v5p", "peak_flops_fp8", 459e12, "cloud.google.com/tpu/docs/tpu7x table: v5p FP8 459"),
    ("v4", "peak_flops_int8", 275e12, "cloud.google.com/tpu/docs/v4: bf16 or int8"),
    ("h100", "peak_flops_fp8", 3958e12 / 2, "NVIDIA H100 SXM datasheet: FP8 3,958 sparse"),
    ("h100", "peak_flops_int8", 3958e12 / 2, "NVIDIA H100 SXM datasheet: INT8 3,958 sparse"),
    ("a100", "peak_flops_int8", 624e12, "NVIDIA A100 datasheet: INT8 624 TOPS dense"),
    # Ironwood: cloud.google.com/tpu/docs/tpu7x
    ("tpu7x", "peak_flops_bf16", 2307e12, "cloud.google.com/tpu/docs/tpu7x: BF16 2307"),
    ("tpu7x", "peak_flops_fp8", 4614e12, "cloud.google.com/tpu/docs/tpu7x: FP8 4614"),
    ("tpu7x", "hbm_bytes", 192 * GiB, "cloud.google.com/tpu/docs/tpu7x: 192 GiB"),
    ("tpu7x", "hbm_bandwidth", 7380e9, "cloud.google.com/tpu/docs/tpu7x: 7380 GB/s"),
    ("tpu7x", "network_bandwidth_per_device", 100e9 / 8, "tpu7x docs: DCN 100 Gb/s per chip"),
    ("tpu7x", "devices_per_chip", 2, "tpu7x docs: two TensorCores, each a jax device"),
    ("tpu7x", "devices_per_host", 4, "tpu7x docs: 4-chip VM"),
]

# cloud.google.com/tpu/docs/tpu7x compares v5p, v6e and TPU7x in one table, per chip: bf16
# and fp8 TFLOP/s, HBM GiB and GB/s, bidirectional ICI GB/s, DCN Gb/s, chips per pod.
CLOUD_TABLE = {
    "v5p": (459, 459, 95, 2765, 1200, 50, 8960),
    "v6e": (918, 918, 32, 1638, 800, 100, 256),
    "tpu7x": (2307, 4614, 192, 7380, 1200, 100, 9216),
}


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
    numbers += [n for n in ("peak_flops_fp8", "peak_flops_int8") if getattr(hw, n) is not None]
    numbers += ["devices_per_chip"] if hw.devices_per_chip != 1 else []
    for name in numbers:
        assert hw.source(name), f"{preset}.{name}"


@pytest.mark.parametrize("preset", sorted(CLOUD_TABLE))
def test_v5p_v6e_and_tpu7x_against_one_table(preset):
    """The three chips against the one Cloud table: the book's figures (v5p, v6e) within
    its rounding, per-link ICI times the torus's links within 15% of the per-chip figure
    (the book's per-link figures are what a link carries; Cloud's is the raw sum)."""
    bf16, fp8, hbm_gib, hbm_gbs, ici_gbs, dcn_gbits, pod = CLOUD_TABLE[preset]
    hw = hardware(preset)
    assert hw.peak_flops_bf16 == pytest.approx(bf16 * 1e12, rel=0.005)
    assert hw.peak_for("fp8") == pytest.approx(fp8 * 1e12, rel=0.005)
    assert hw.hbm_bytes == hbm_gib * GiB
    assert hw.hbm_bandwidth == pytest.approx(hbm_gbs * 1e9, rel=0.03)
    links = 2 * hw.torus_dims
    assert links * hw.ici_link_bandwidth_bidi == pytest.approx(ici_gbs * 1e9, rel=0.15)
    assert hw.network_bandwidth_per_device == pytest.approx(dcn_gbits * 1e9 / 8)
    assert math.prod(hw.pod_shape) >= pod


def test_peaks_by_precision():
    v5e, tpu7x = hardware("v5e"), hardware("tpu7x")
    assert v5e.peak_for("fp8") == v5e.peak_flops_bf16  # v5e publishes no fp8 peak
    assert v5e.peak_for("int8") == pytest.approx(393e12)
    assert tpu7x.peak_for("int8") == tpu7x.peak_flops_bf16  # no int8 figure for TPU7x
    assert tpu7x.peaks(2) == {"": 2307e12 / 2, "fp8": 4614e12 / 2, "int8": 2307e12 / 2}
    with pytest.raises(ValueError, match="peak_flops_fp8"):
        Hardware(name="x", kind="tpu", peak_flops_bf16=1.0, hbm_bytes=1, hbm_bandwidth=1.0,
                 hop_latency=0.0, devices_per_host=1, peak_flops_fp8=0.0)  # fmt: skip


@pytest.mark.parametrize("name", ["tpu7x", "TPU7x", "TPU v7x", "Ironwood", "tpu-7x"])
def test_ironwood_names(name):
    assert hardware(name).preset == "tpu7x"


def test_tpu7x_targets_count_chips_and_two_devices_each():
    """tpu-recipes name Ironwood slices by chips (4x4x8: 128 chips); jax lists each chip's
    two TensorCores as devices, so a mesh of 256 devices is those 128 chips."""
    t = target_for("tpu7x:4x4x8")
    assert (t.chips, t.devices, t.devices_per_chip, t.num_hosts) == (128, 256, 2, 32)
    assert t.wraparound == (True, True, True)  # whole 4x4x4 cubes, as v5p
    assert t.label == "TPU7x 4x4x8 (128 chips, 256 devices, 32 hosts)"
    sized = target_for("tpu7x", 256)
    assert (sized.shape, sized.chips, sized.devices) == ((4, 4, 8), 128, 256)
    assert target_for("tpu7x", 8).shape == (2, 2, 1)
    assert "devices" not in target_for("v5p:2x2x2").label


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
        hardware("v9z")
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


def test_a_chips_matmul_efficiency_slows_the_prediction_not_the_bound_or_mfu() -> None:
    """The same report estimated on a v6e whose matmuls sustain 70% of the peak and on one
    at the peak: the bound and MFU are the same, the predicted step is longer, and a note
    says at what fraction and from where."""
    import dataclasses

    from shardviz.analysis.estimate import with_estimate
    from shardviz.model.hardware_presets import hardware
    from shardviz.model.targets import target_for

    report = _a_v6e_report()
    slow = dataclasses.replace(
        hardware("v6e"), matmul_efficiency=0.7, sources={"matmul_efficiency": "three runs"}
    )
    peak = dataclasses.replace(hardware("v6e"), matmul_efficiency=None)
    at = {}
    for name, hw in (("slow", slow), ("peak", peak)):
        target = dataclasses.replace(target_for("v6e:2x4"), hardware=hw)
        at[name] = with_estimate(report, target).estimate
    a, b = at["slow"], at["peak"]
    assert a.step_seconds == b.step_seconds and a.mfu == b.mfu
    assert a.predicted_seconds > b.predicted_seconds
    assert any("matmuls at 70.0% of the peak" in n and "three runs" in n for n in a.notes)
    assert not any("of the peak, what" in n for n in b.notes)
    with pytest.raises(ValueError, match="matmul_efficiency"):
        dataclasses.replace(hardware("v6e"), matmul_efficiency=1.5)


def _a_v6e_report():
    """A hand-made report of 8 devices whose step is one compute-bound matmul."""
    from shardviz.model import Cost, Device, MemoryReport, MeshLayout, OpWork, Report, TreeLayout

    mesh = MeshLayout(("d",), (8,), tuple(Device(i) for i in range(8)))
    cost = Cost(1e12, 1e6, None, None, ops=(OpWork("mm", 1e12, 1e6),))
    return Report(
        function="step", platform="cpu", mesh=mesh, arguments=TreeLayout(()),
        outputs=TreeLayout(()), collectives=(), intermediates=(),
        memory=MemoryReport(0, 0, 0, 0, 0, 0), cost=cost,
    )  # fmt: skip
