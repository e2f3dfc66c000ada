"""Notebook 11's numbers add up (issue 40): exercise 11.1's parts make its one total, in the
verdict and in the explanation alike; section 8's GPU placement gives per-GPU figures whose
sum over the GPUs is the summed one, and times that are those bytes over those links."""

from __future__ import annotations

import re

import pytest

from shardviz.course import check
from shardviz.course.solutions.s11 import SOLUTIONS, WHY
from shardviz.model.units import format_seconds

pytest.importorskip("libtpu")

#: A count of bytes as the texts write it: ``4,320,415,744 B``.
BYTES = re.compile(r"(\d[\d,]*) B\b")


def _counts(text: str) -> list[int]:
    return [int(m.replace(",", "")) for m in BYTES.findall(text)]


def test_the_explanation_of_11_1_names_parts_that_make_the_answer():
    weights, grads, moments, counter, total, *_ = _counts(WHY["11.1"])
    assert weights + grads + moments + counter == total == SOLUTIONS["11.1"]
    assert "step counter" in WHY["11.1"]


def test_the_verdict_of_11_1_names_the_same_parts_and_total():
    verdict = check("11.1", SOLUTIONS["11.1"])
    assert verdict.right
    *parts, total = _counts(verdict.message)
    assert len(parts) == 4 and sum(parts) == total == SOLUTIONS["11.1"]
    assert _counts(WHY["11.1"])[:5] == [*parts, total], "verdict and explanation agree"


@pytest.fixture(scope="module")
def gpu_placement():
    """Section 8's serving step on two H100 hosts, 'model' groups straddling them: its layout
    as built and with the placement finding's order (the notebook's own sizes)."""
    jax = pytest.importorskip("jax")
    import shardviz as sv
    from shardviz.strategies import mlp

    try:
        h100 = sv.topology("h100:2x8")
    except sv.errors.ShardvizError as err:
        pytest.skip(str(err))
    megatron = {"w1": (None, "model"), "b1": ("model",), "w2": ("model", None), "b2": ()}
    shapes = jax.eval_shape(lambda k: mlp.init_params(k, 2048, 8192), jax.random.key(0))
    x = jax.eval_shape(lambda k: mlp.make_batch(k, 1024, 2048), jax.random.key(1))["x"]
    gpus = [[d for d in h100.devices if d.process_index == host] for host in (0, 1)]
    mesh = sv.Mesh([gpus[i % 2][i // 2] for i in range(16)], (2, 8), ("data", "model"))
    p = {k: sv.mark_sharding(v, mesh, megatron[k]) for k, v in shapes.items()}
    serving = sv.explain(mlp.forward, p, sv.mark_sharding(x, mesh, ("data", None)), run=False)
    (finding,) = serving.try_fixes().findings.of("placement")
    return sv.physical(serving), sv.physical(serving, order=finding.fix.devices), finding


def test_per_gpu_figures_sum_to_the_summed_ones(gpu_placement):
    before, after, _ = gpu_placement
    for layout in (before, after):
        assert layout.link_bytes == sum(x.bytes for x in layout.links) == layout.ledger_bytes
        network = [x.bytes for x in layout.links if x.kind == "network"]
        assert layout.network_bytes == sum(network)
        # every GPU sends the same share: the summed figure is 16 of the per-GPU one
        assert layout.network_bytes == 16 * layout.device_network_bytes
    assert before.device_network_bytes == 2**20 and before.device_chip_bytes == 6 * 2**20
    assert after.device_network_bytes == 0 and after.device_chip_bytes == 7 * 2**20


def test_the_times_are_the_busiest_gpus_bytes_over_its_links(gpu_placement):
    import shardviz as sv

    before, after, finding = gpu_placement
    hw = sv.hardware("h100")
    net, nv = hw.network_bandwidth_per_device, hw.nvlink_bandwidth
    assert before.collective_seconds == max(
        before.device_network_bytes / net, before.device_chip_bytes / nv
    )
    assert after.collective_seconds == after.device_chip_bytes / nv
    assert format_seconds(before.collective_seconds) == "21 µs"
    assert format_seconds(after.collective_seconds) == "16.3 µs"
    assert "21 µs -> 16.3 µs" in finding.title
    # the gain is the link's speed over the bytes' growth: 9 times faster, 7 times the bytes
    gain = before.collective_seconds / after.collective_seconds
    speed = nv / net
    growth = after.device_chip_bytes / before.device_network_bytes
    assert speed == 9 and growth == 7 and gain == pytest.approx(speed / growth)
