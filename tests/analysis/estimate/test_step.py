"""estimate_report on hand-built reports: bound, MFU and headroom arithmetic, notes, wiring."""

from __future__ import annotations

import dataclasses
import math

import pytest

from shardviz.analysis.estimate import estimate_report, hardware, target_for, with_estimate
from shardviz.model import (
    Collective,
    Cost,
    Device,
    Estimate,
    MemoryReport,
    MeshLayout,
    Report,
    TreeLayout,
)
from tests.render.report_fixtures import dp_report

GiB = 1024**3
V5E_PEAK, V5E_HBM_BW = 1.97e14, 8.1e11


def mesh(n: int = 8, shape: tuple[int, ...] = (2, 4), **dev) -> MeshLayout:
    return MeshLayout(("data", "model"), shape, tuple(Device(i, **dev) for i in range(n)))


def memory(peak: int, compiler_peak: int | None = None) -> MemoryReport:
    return MemoryReport(peak, 0, 0, 0, 0, peak, compiler_peak)


def report(
    flops: float | None = None,
    bytes_accessed: float | None = None,
    collectives: tuple[Collective, ...] = (),
    peak: int = GiB,
    layout: MeshLayout | None = None,
    cost: Cost | None = None,
    platform: str = "cpu",
) -> Report:
    return Report(
        function="step",
        platform=platform,
        mesh=layout or mesh(),
        arguments=TreeLayout(()),
        outputs=TreeLayout(()),
        collectives=collectives,
        intermediates=(),
        memory=memory(peak),
        cost=cost or Cost(flops, bytes_accessed, None, None),
    )


def all_gather(name: str, nbytes: int, groups, **kw) -> Collective:
    n = len(groups[0])
    return Collective(name, "all-gather", "bf16", (1,), "bf16", (1,), nbytes // n, nbytes, 0, n,
                      tuple(tuple(g) for g in groups), ("model",), **kw)  # fmt: skip


MODEL = ((0, 1, 2, 3), (4, 5, 6, 7))


class TestArithmetic:
    def test_compute_bound(self):
        est, _ = estimate_report(report(V5E_PEAK, V5E_HBM_BW / 2), "v5e")
        assert est.compute_seconds == pytest.approx(1.0)
        assert est.memory_seconds == pytest.approx(0.5)
        assert est.step_seconds == pytest.approx(1.0)
        assert est.bound == "compute"
        assert est.mfu == pytest.approx(1.0)

    def test_memory_bound_caps_mfu(self):
        est, _ = estimate_report(report(V5E_PEAK, 2 * V5E_HBM_BW), "v5e")
        assert est.bound == "memory"
        assert est.step_seconds == pytest.approx(2.0)
        assert est.mfu == pytest.approx(0.5)

    def test_communication_bound(self):
        # 8 devices on a v5e 2x4: the 'model' groups are 2x2 blocks (lines of 2 along x and y).
        big = all_gather("ag", 10**10, MODEL)
        est, colls = estimate_report(report(V5E_PEAK / 1000, 0.0, (big,)), "v5e")
        assert est.bound == "communication"
        assert est.collective_seconds == pytest.approx(colls[0].estimated_seconds)
        assert est.step_seconds == est.collective_seconds
        assert est.mfu == pytest.approx(est.compute_seconds / est.collective_seconds)
        assert colls[0].estimate_formula

    def test_does_not_fit(self):
        est, _ = estimate_report(report(1.0, 1.0, peak=int(21.3 * GiB)), "v5e")
        assert est.hbm_bytes == 16 * GiB
        assert est.hbm_headroom_bytes == 16 * GiB - int(21.3 * GiB)
        assert est.fits is False
        assert est.fit_text == "does not fit: needs 21.3 GiB of 16 GiB"

    def test_fits(self):
        est, _ = estimate_report(report(1.0, 1.0, peak=10 * GiB), "h100")
        assert est.fits is True
        assert est.hbm_headroom_bytes == 70 * GiB
        assert est.fit_text == "fits: 10 GiB of 80 GiB"

    def test_the_reports_peak_is_the_one_against_hbm(self):
        """Not the compiler's own figure when it differs (TPU's also counts on-chip VMEM)."""
        r = dataclasses.replace(report(1.0, 1.0), memory=memory(GiB, 3 * GiB))
        est, _ = estimate_report(r, "v5e")
        assert est.peak_bytes == GiB
        assert est.hbm_headroom_bytes == est.hbm_bytes - GiB

    def test_global_cost_divided_by_devices_is_said(self):
        r = report(cost=Cost(None, None, 8 * V5E_PEAK, 8 * V5E_HBM_BW))
        est, _ = estimate_report(r, "v5e")
        assert est.compute_seconds == pytest.approx(1.0)
        assert est.memory_seconds == pytest.approx(1.0)
        assert any("global flops / 8 devices" in n for n in est.notes)

    def test_no_cost_leaves_compute_unknown(self):
        r = dataclasses.replace(report(), cost=None)
        est, _ = estimate_report(r, "v5e")
        assert est.compute_seconds is None and est.mfu is None
        assert est.bound == "communication"
        assert any("compute time unknown" in n for n in est.notes)

    def test_labelled_an_estimate(self):
        est, _ = estimate_report(report(V5E_PEAK, 0.0), "v5e")
        text = str(est)
        assert text.startswith("estimate on TPU v5e 2x4 (8 chips, 2 hosts)")
        assert "estimated step >= 1 s (compute-bound" in text


class TestMfu:
    """MFU from the model flops (matmuls, recomputation once), HFU from the hardware's."""

    def cost(self, hardware: float, model: float, loops=()) -> Cost:
        return Cost(hardware, 0.0, None, None, matmul_flops_per_device=model,
                    model_flops_per_device=model, loops=loops)  # fmt: skip

    def test_mfu_counts_the_model_flops_and_hfu_the_hardwares(self):
        # Compute-bound: 1.2 s of hardware flops, of which the model's are 0.9 s' worth.
        est, _ = estimate_report(report(cost=self.cost(1.2 * V5E_PEAK, 0.9 * V5E_PEAK)), "v5e")
        assert est.bound == "compute"
        assert est.step_seconds == pytest.approx(1.2)
        assert est.hfu == pytest.approx(1.0)
        assert est.mfu == pytest.approx(0.75)
        assert est.model_flops == pytest.approx(0.9 * V5E_PEAK)
        assert est.hardware_flops == pytest.approx(1.2 * V5E_PEAK)
        assert est.peak_flops_per_second == V5E_PEAK

    def test_mfu_at_a_measured_step(self):
        est, _ = estimate_report(report(cost=self.cost(V5E_PEAK, 0.5 * V5E_PEAK)), "v5e")
        assert est.mfu_at(2.0) == pytest.approx(0.25)
        assert est.hfu_at(2.0) == pytest.approx(0.5)
        assert est.mfu_at(0.0) is None
        # The published convention: 6 x params x tokens per device per step, at a step time.
        params, tokens = 8.03e9, 4 * 8192
        e = dataclasses.replace(est, model_flops=6 * params * tokens)
        assert e.mfu_at(4.55) == pytest.approx(6 * params * tokens / (V5E_PEAK * 4.55))

    def test_without_a_matmul_count_mfu_falls_back_to_the_compilers_flops_and_says_so(self):
        est, _ = estimate_report(report(V5E_PEAK, 0.0), "v5e")
        assert est.mfu == pytest.approx(est.hfu)
        assert any("no matmul count" in n for n in est.notes)

    def test_a_loop_of_unknown_count_makes_the_estimate_a_lower_bound(self):
        from shardviz.model import Frame, Loop, Source

        where = Source((Frame("/x/train.py", 41, "step"),))
        unknown = Loop("while.8", "body", "cond", None, None, 1, source=where)
        known = Loop("while.3", "body3", "cond3", 4, 4, 4)
        est, _ = estimate_report(report(cost=self.cost(1.0, 1.0, (known, unknown))), "v5e")
        assert est.lower_bound == ("train.py:41",)
        assert "lower bound" in str(est) and "train.py:41" in str(est)
        est, _ = estimate_report(report(cost=self.cost(1.0, 1.0, (known,))), "v5e")
        assert est.lower_bound == ()

    def test_a_kernel_not_counted_is_named_and_the_estimate_is_not_a_bound(self):
        from shardviz.model import KernelUse

        counted = KernelUse("splash_mha_fwd", "tpu_custom_call", 2, 4.1e12, 4.1e12, "counted")
        missing = KernelUse("splash_mha_bwd", "tpu_custom_call", 3, None, None, "not counted")
        cost = dataclasses.replace(self.cost(V5E_PEAK, V5E_PEAK), kernels=(counted, missing))
        est, _ = estimate_report(report(cost=cost), "v5e")
        sentence = "3 calls of `splash_mha_bwd` not counted: flops and time for them are missing"
        assert est.uncounted == (sentence,)
        assert not est.bounded and est.not_a_bound == f"not a bound: {sentence}"
        # No sign claims a bound; the summary and the text name the kernel.
        assert ">=" not in est.summary and "<=" not in est.summary
        assert "not a bound: 1 kernel not counted" in est.summary
        assert f"  not a bound: {sentence}" in str(est).splitlines()
        # Every kernel counted: a bound as before, nothing said.
        cost = dataclasses.replace(cost, kernels=(counted,))
        est, _ = estimate_report(report(cost=cost), "v5e")
        assert est.uncounted == () and est.bounded and est.not_a_bound == ""
        assert "estimated step >= " in est.summary and "not a bound" not in str(est)

    def test_a_kernel_counted_at_its_costliest_makes_the_estimate_no_bound(self):
        # A `bounded` kernel (a condition on data could not be read, every grid step counted)
        # may count too many flops: the step is then not a lower bound either.
        from shardviz.model import KernelUse

        costliest = KernelUse("splash_mha_fwd", "tpu_custom_call", 2, 4.1e12, 4.1e12, "bounded")
        missing = KernelUse("splash_mha_bwd", "tpu_custom_call", 1, None, None, "not counted")
        cost = dataclasses.replace(self.cost(V5E_PEAK, V5E_PEAK), kernels=(costliest,))
        est, _ = estimate_report(report(cost=cost), "v5e")
        sentence = (
            "2 calls of `splash_mha_fwd` counted at their costliest, every grid step as if it "
            "computed: flops and time for them may be high"
        )
        assert est.uncounted == () and est.overcounted == (sentence,)
        assert not est.bounded and est.not_a_bound == f"not a bound: {sentence}"
        assert ">=" not in est.summary
        assert "not a bound: 1 kernel counted at its costliest" in est.summary
        assert f"  not a bound: {sentence}" in str(est).splitlines()
        cost = dataclasses.replace(cost, kernels=(costliest, missing))
        est, _ = estimate_report(report(cost=cost), "v5e")
        assert est.why_not_a_bound == "1 kernel not counted and 1 kernel counted at its costliest"
        assert Estimate.from_json(est.to_json()) == est

    def test_small_mfus_keep_their_digits(self):
        est, _ = estimate_report(report(cost=self.cost(V5E_PEAK, 1e-4 * V5E_PEAK)), "v5e")
        assert "MFU <= 0.01%" in est.summary


class TestCollectives:
    def test_trip_counts_multiply(self):
        c = all_gather("ag", 10**8, MODEL)
        once, colls = estimate_report(report(1.0, 1.0, (c,)), "v5e")
        looped, _ = estimate_report(report(1.0, 1.0, (c,)), "v5e", trip_counts={"ag": 12})
        assert looped.collective_seconds == pytest.approx(12 * once.collective_seconds)
        assert any("counted once" in n for n in once.notes)
        unknown, _ = estimate_report(report(1.0, 1.0, (c,)), "v5e", trip_counts={"ag": None})
        assert unknown.collective_seconds == pytest.approx(once.collective_seconds)
        assert any("loop count unknown for ag" in n for n in unknown.notes)

    def test_combined_parts_share_one_latency_floor(self):
        tiny = dict(kind="all-reduce")
        parts = tuple(
            dataclasses.replace(
                all_gather(f"ar#{k}", 64, MODEL), combined=(k, 2), in_bytes=64, **tiny
            )
            for k in range(2)
        )
        alone = dataclasses.replace(parts[0], combined=None, name="ar")
        _, colls = estimate_report(report(1.0, 1.0, parts), "v5e")
        _, (single,) = estimate_report(report(1.0, 1.0, (alone,)), "v5e")
        total = sum(c.estimated_seconds for c in colls)
        assert total == pytest.approx(single.estimated_seconds)  # latency-bound: one floor
        assert colls[0].estimated_seconds == pytest.approx(colls[1].estimated_seconds)

    def test_cpu_devices_are_placed_and_it_is_said(self):
        c = all_gather("ag", 10**8, MODEL)
        r = with_estimate(report(1.0, 1.0, (c,)), "v5e")
        assert "jax's device-id order" in r.target.placement
        assert any("device-id order" in n for n in r.estimate.notes)
        assert any("compiled for CPU" in n for n in r.estimate.notes)


class TestWiring:
    def test_no_target_on_cpu_changes_nothing(self):
        r = dp_report()
        est, colls = estimate_report(r)
        assert est is None and colls == r.collectives
        assert with_estimate(r) is r
        assert all(c.estimated_seconds is None for c in r.collectives)

    def test_with_estimate_fills_the_report_and_round_trips(self):
        r = with_estimate(dp_report(), "v5e")
        assert isinstance(r.estimate, Estimate)
        assert r.target.name == "v5e:2x4"
        assert all(
            c.estimated_seconds is not None and c.estimated_seconds > 0 for c in r.collectives
        )
        assert Report.from_json(r.to_json()) == r

    @pytest.mark.parametrize("target", ["h100", "a100", "v5p", "v6e", "v4", "v5e:4x4", "h100:1x8"])
    def test_every_preset_estimates_the_dp_report(self, target):
        r = with_estimate(dp_report(), target)
        assert r.estimate.step_seconds > 0
        assert math.isfinite(r.estimate.step_seconds)
        assert r.estimate.bound in ("compute", "memory", "communication")

    def test_a_hardware_of_your_own(self):
        mine = dataclasses.replace(
            hardware("v5e"), name="v5e at half clock", peak_flops_bf16=V5E_PEAK / 2
        )
        est, _ = estimate_report(report(V5E_PEAK, 0.0), mine)
        assert est.compute_seconds == pytest.approx(2.0)
        assert est.target.startswith("v5e at half clock")

    def test_target_read_off_tpu_devices_with_two_cores_per_chip(self):
        # v4 as libtpu lists it: two devices (cores) per chip, a 2x2x1 slice of 8 devices.
        devs = tuple(
            Device(2 * c + core, 0, "tpu", "TPU v4", coords=(c % 2, c // 2, 0), core_on_chip=core)
            for c in range(4)
            for core in range(2)
        )
        layout = MeshLayout(("data", "model"), (2, 4), devs)
        est, _ = estimate_report(report(2.75e14, 0.0, layout=layout, platform="tpu"))
        assert est is not None
        assert est.compute_seconds == pytest.approx(2.0)  # half a chip's peak per device
        assert est.hbm_bytes == 16 * GiB
        assert est.target == "TPU v4 2x2x1 (4 chips, 8 devices, 1 host)"

    def test_named_target_smaller_than_the_mesh_is_refused(self):
        from shardviz.errors import HardwareError

        with pytest.raises(HardwareError):
            estimate_report(report(1.0, 1.0, layout=mesh(16, (4, 4))), "v5e:2x2")

    def test_target_for_matches_the_mesh_size(self):
        assert target_for("v5e", 8).name == "v5e:2x4"


def test_estimates_need_no_jax():
    from tests.without_jax import run_without_jax

    out = run_without_jax(
        """
        import shardviz as sv
        from shardviz.analysis.estimate import with_estimate, target_for
        from tests.render.report_fixtures import dp_report
        r = with_estimate(dp_report(), "v5e")
        print(sv.hardware("h100").name, r.estimate.bound, target_for("v5p", 64).name)
        """
    )
    assert out.split()[:3] == ["NVIDIA", "H100", "SXM"]
    assert out.split()[-1] == "v5p:4x4x4"


def test_a_cpu_cluster_of_your_own_uses_the_switched_model():
    from shardviz.model import Hardware

    cpu = Hardware("My CPU box", "cpu", 1e12, 64 * GiB, 1e11, 1e-5, 4, 1.25e9)
    r = with_estimate(report(1e12, 0.0, (all_gather("ag", 10**8, MODEL),)), cpu)
    assert r.target.shape == (2, 4)
    assert r.collectives[0].estimated_seconds > 0
    assert r.estimate.compute_seconds == pytest.approx(1.0)


def test_a_program_on_one_device_with_no_mesh_is_estimated_on_one_chip():
    r = dataclasses.replace(report(V5E_PEAK, 0.0), mesh=None)
    est, _ = estimate_report(r, "h100")
    assert est is not None and est.target.startswith("NVIDIA H100")
    assert est.compute_seconds == pytest.approx(V5E_PEAK / hardware("h100").peak_flops_bf16)
