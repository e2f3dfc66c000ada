"""The collective formulas against the worked examples of "How to Scale Your Model"
(jax-ml/scaling-book: sharding.md, tpus.md, gpus.md), and rules that hold for every size."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shardviz.analysis.estimate import collective_time, place, target_for
from shardviz.analysis.estimate.collectives import (
    AxisSpan,
    switched_all_to_all,
    switched_gather,
    torus_all_to_all,
    torus_gather,
)
from shardviz.model import Collective, Device, MeshLayout

US = 1e-6
V5E_ICI = 4.5e10  # one way per link (tpus.md interconnect table)
V4_ICI = 4.5e10
H100_NVLINK = 450e9  # GPU egress one way (gpus.md)
H100_NIC = 50e9  # 400 Gb/s per GPU (gpus.md)
HOP = 1e-6  # sharding.md: about 1 us per hop

# sharding.md, Pop Quiz 2: AllGather_Y([E_Y, F]) -> [E, F] on a v5e mesh {'X': 8, 'Y': 4},
# E = 2048, F = 8192 in bf16: 34e6 bytes gathered per device, over an axis of 4.
POP_QUIZ_BYTES = 2 * 2048 * 8192
SMALL_BYTES = 2 * 256 * 256  # the same quiz with E = F = 256


def ring(n: int, axis: int = 0, stride: int = 1) -> AxisSpan:
    return AxisSpan(axis, n, True, stride)


def line(n: int, axis: int = 0, stride: int = 1) -> AxisSpan:
    return AxisSpan(axis, n, False, stride)


class TestBookTpu:
    def test_pop_quiz_with_wraparound_is_bytes_over_bidirectional_bandwidth(self):
        t = torus_gather(POP_QUIZ_BYTES, [ring(4)], V5E_ICI, HOP)
        assert t.seconds == pytest.approx(POP_QUIZ_BYTES / 9e10)
        assert t.seconds == pytest.approx(377 * US, rel=0.02)  # the book rounds V to 34e6
        assert not t.latency_bound

    def test_pop_quiz_without_wraparound_takes_three_one_way_hops(self):
        # v5e wraps only on axes of 16: an axis of 4 is a line, 3 hops of 8.4e6 / 4.5e10.
        t = torus_gather(POP_QUIZ_BYTES, [line(4)], V5E_ICI, HOP)
        assert t.seconds == pytest.approx(3 * (POP_QUIZ_BYTES / 4) / V5E_ICI)
        assert t.seconds == pytest.approx(560 * US, rel=0.01)

    def test_pop_quiz_small_arrays_are_latency_bound(self):
        # 32 kB shards take 0.7 us a hop, under the 1 us floor: 3 hops, 3 us.
        t = torus_gather(SMALL_BYTES, [line(4)], V5E_ICI, HOP)
        assert t.latency_bound
        assert t.seconds == pytest.approx(3 * US)
        assert t.bandwidth_seconds == pytest.approx(3 * 32768 / V5E_ICI)

    def test_latency_bound_below_45_kB_per_hop(self):
        # sharding.md: on v5e any buffer under 4.5e10 * 1e-6 = 45 kB per hop is latency-bound.
        n = 4
        assert torus_gather(44e3 * n, [line(n)], V5E_ICI, HOP).latency_bound
        assert not torus_gather(46e3 * n, [line(n)], V5E_ICI, HOP).latency_bound

    def test_question_2_allgather_over_x_on_a_full_v4_cube(self):
        # sharding.md Q2: AllGather_X([B_X, D_Y]) on a v4p 4x4x4 (wraparound everywhere),
        # B = 1024, D = 4096 bf16: 2BD / Y bytes gathered -> 2BD / (9e10 * Y) = 23 us.
        v = 2 * 1024 * 4096 / 4
        t = torus_gather(v, [ring(4)], V4_ICI, HOP)
        assert t.seconds == pytest.approx(23 * US, rel=0.02)

    def test_question_2_allgather_over_two_axes_adds_their_bandwidth(self):
        # ... and AllGather_XY: 2BD / (2 * 9e10) = 46 us, latency floor 4 us far below.
        v = 2 * 1024 * 4096
        t = torus_gather(v, [ring(4, 0), ring(4, 1)], V4_ICI, HOP)
        assert t.seconds == pytest.approx(v / (2 * 9e10))
        assert t.seconds == pytest.approx(46 * US, rel=0.02)
        assert t.latency_seconds == pytest.approx(4 * US)

    def test_question_3_tiny_gather_on_a_ring_of_4_is_two_hops(self):
        # sharding.md Q3: 256 bytes gathered over a wrapped axis of 4: 2 hops, about 2 us.
        t = torus_gather(256, [ring(4)], V4_ICI, HOP)
        assert t.latency_bound
        assert t.seconds == pytest.approx(2 * US)

    def test_all_to_all_on_a_ring_is_a_quarter_of_the_allgather(self):
        # sharding.md: an AllToAll costs 1/4 of an AllGather of the same array on a ring.
        n, array = 8, 64e6
        a2a = torus_all_to_all(array / n, [ring(n)], V5E_ICI, 0.0)
        ag = torus_gather(array, [ring(n)], V5E_ICI, 0.0)
        assert a2a.seconds == pytest.approx(ag.seconds / 4)


class TestBookTpuOnAMesh:
    """The pop quiz through :func:`collective_time`, on CPU devices placed on v5e slices."""

    def gather(self, groups, nbytes: int, kind: str = "all-gather") -> Collective:
        n = len(groups[0])
        return Collective(
            "ag", kind, "bf16", (1,), "bf16", (1,), nbytes // n if kind == "all-gather" else nbytes,
            nbytes, 0, n, tuple(tuple(g) for g in groups), ("y",),
        )  # fmt: skip

    def mesh(self, x: int, y: int) -> MeshLayout:
        # mesh axis 'y' (last, fastest) lies along physical x in jax's device order
        return MeshLayout(("x", "y"), (y, x), tuple(Device(i) for i in range(x * y)))

    def test_axis_of_4_on_a_4x4_is_a_line(self):
        target = target_for("v5e:4x4")
        groups = [list(range(4 * r, 4 * r + 4)) for r in range(4)]
        t = collective_time(
            self.gather(groups, POP_QUIZ_BYTES), place(self.mesh(4, 4), target), target
        )
        assert t.seconds == pytest.approx(560 * US, rel=0.01)
        assert t.link == "ICI"
        assert "x4 line" in t.formula

    def test_axis_of_16_on_a_16x16_is_a_ring(self):
        target = target_for("v5e:16x16")
        groups = [list(range(16 * r, 16 * r + 16)) for r in range(16)]
        t = collective_time(
            self.gather(groups, POP_QUIZ_BYTES), place(self.mesh(16, 16), target), target
        )
        assert t.seconds == pytest.approx(POP_QUIZ_BYTES / 9e10)
        assert "x16 ring" in t.formula

    def test_all_reduce_is_twice_the_gather(self):
        target = target_for("v5e:4x4")
        groups = [list(range(4 * r, 4 * r + 4)) for r in range(4)]
        placement = place(self.mesh(4, 4), target)
        ag = collective_time(self.gather(groups, POP_QUIZ_BYTES), placement, target)
        ar = collective_time(self.gather(groups, POP_QUIZ_BYTES, "all-reduce"), placement, target)
        assert ar.seconds == pytest.approx(2 * ag.seconds)

    def test_permute_across_a_4x4_matches_question_5(self):
        # tpus.md Q5: bf16[8, 128, 8192] from (0,0) to (3,3) on a v5e 4x4 (no wraparound):
        # 6 hops (the first byte after 6 us), two ports at 4.5e10: 1.7e7 / 9e10 = 188 us.
        target = target_for("v5e:4x4")
        nbytes = 2 * 8 * 128 * 8192
        c = Collective("cp", "collective-permute", "bf16", (1,), "bf16", (1,), nbytes, nbytes,
                       nbytes, 2, ((0, 15),), (), pairs=((0, 15),))  # fmt: skip
        t = collective_time(c, place(self.mesh(4, 4), target), target)
        assert t.seconds == pytest.approx(nbytes / 9e10)
        assert t.seconds == pytest.approx(188 * US, rel=0.01)
        assert "6 hops over 2 axes" in t.formula


class TestBookGpu:
    def test_pop_quiz_1_allgather_in_an_h100_node(self):
        # gpus.md Pop Quiz 1: AllGather(bf16[B_X, F]), B = 1024, F = 16384 on 8xH100: 65 us.
        v = 2 * 1024 * 16384
        t = switched_gather(v, 8, 1, H100_NVLINK, H100_NIC, HOP)
        assert t.seconds == pytest.approx(v * 7 / (8 * 450e9))
        assert t.seconds == pytest.approx(65 * US, rel=0.03)

    def test_quiz_2_allgather_of_512_MB_in_a_node(self):
        # gpus.md Quiz 2 Q3: bf16[4096, 65536] gathered in an 8xH100 node: about 1.04 ms.
        v = 2 * 4096 * 65536
        assert switched_gather(v, 8, 1, H100_NVLINK, H100_NIC, HOP).seconds == pytest.approx(
            1.04e-3, rel=0.02
        )

    def test_two_nodes_are_bound_by_the_node_level(self):
        # gpus.md Quiz 4 Q5: over exactly 2 nodes the node level (B/514e9) is slower than the
        # network (B/800e9).
        v = 1e9
        t = switched_gather(v, 8, 2, H100_NVLINK, H100_NIC, HOP)
        assert t.seconds == pytest.approx(v * 7 / (8 * 450e9))
        assert v * 1 / (2 * 8 * H100_NIC) < t.seconds

    def test_many_nodes_are_bound_by_node_egress(self):
        # gpus.md: beyond the node, about bytes / 400e9 (node egress), (M-1)/M of it exactly.
        v, nodes = 1e9, 32
        t = switched_gather(v, 8, nodes, H100_NVLINK, H100_NIC, HOP)
        assert t.seconds == pytest.approx(v * (nodes - 1) / (nodes * 400e9))

    def test_all_to_all_in_a_node(self):
        # gpus.md: B (N-1) / (W N^2) for an array of B bytes over N GPUs of a node.
        array, n = 8e9, 8
        t = switched_all_to_all(array / n, n, 1, H100_NVLINK, H100_NIC, HOP)
        assert t.seconds == pytest.approx(array * (n - 1) / (H100_NVLINK * n**2))

    def test_group_with_one_gpu_per_host_gets_one_nic(self):
        # gpus.md: the outer reduction is cheaper by the nodes the inner axis spans; a group
        # with one GPU on each host shares the node's egress with 7 other groups.
        v = 1e9
        t = switched_gather(v, 1, 4, H100_NVLINK, H100_NIC, HOP)
        assert t.seconds == pytest.approx(v * 3 / (4 * H100_NIC))

    def test_collective_time_on_h100_hosts(self):
        target = target_for("h100:2x8")
        mesh = MeshLayout(("data", "model"), (2, 8), tuple(Device(i) for i in range(16)))
        placement = place(mesh, target)
        nbytes = 2**30
        model = Collective("ag", "all-gather", "bf16", (1,), "bf16", (1,), nbytes // 8, nbytes,
                           0, 8, (tuple(range(8)), tuple(range(8, 16))), ("model",))  # fmt: skip
        data = Collective("ag2", "all-gather", "bf16", (1,), "bf16", (1,), nbytes // 2, nbytes,
                          0, 2, tuple((i, i + 8) for i in range(8)), ("data",))  # fmt: skip
        inside, across = (
            collective_time(model, placement, target),
            collective_time(data, placement, target),
        )
        assert inside.link == "NVLink"
        assert across.link == "NVLink + InfiniBand"
        assert inside.seconds == pytest.approx(nbytes * 7 / (8 * H100_NVLINK))
        assert across.seconds == pytest.approx(nbytes / (2 * H100_NIC))


sizes = st.integers(min_value=2, max_value=32)
volumes = st.floats(min_value=0, max_value=1e11, allow_nan=False)


class TestProperties:
    @given(n=sizes, v1=volumes, v2=volumes, wrap=st.booleans())
    def test_time_grows_with_bytes(self, n, v1, v2, wrap):
        lo, hi = sorted((v1, v2))
        span = AxisSpan(0, n, wrap)
        assert (
            torus_gather(lo, [span], V5E_ICI, HOP).seconds
            <= torus_gather(hi, [span], V5E_ICI, HOP).seconds
        )

    @given(n=sizes, v=volumes, wrap=st.booleans(), stride=st.integers(1, 4))
    def test_never_below_the_latency_floor(self, n, v, wrap, stride):
        span = AxisSpan(0, n, wrap, stride)
        hops = n // 2 if wrap else n - 1
        assert torus_gather(v, [span], V5E_ICI, HOP).seconds >= hops * stride * HOP * (1 - 1e-12)

    @given(n=sizes, v=volumes)
    def test_a_ring_is_never_slower_than_a_line(self, n, v):
        assert (
            torus_gather(v, [ring(n)], V5E_ICI, HOP).seconds
            <= torus_gather(v, [line(n)], V5E_ICI, HOP).seconds
        )

    @given(n=sizes, m=sizes, v=st.floats(min_value=1, max_value=1e11))
    def test_a_second_axis_only_adds_bandwidth(self, n, m, v):
        one = torus_gather(v, [ring(n)], V5E_ICI, 0.0)
        two = torus_gather(v, [ring(n, 0), ring(m, 1)], V5E_ICI, 0.0)
        assert two.bandwidth_seconds < one.bandwidth_seconds

    @given(k=st.integers(1, 8), hosts=st.integers(1, 64), v=volumes)
    def test_gpu_gather_never_below_its_latency(self, k, hosts, v):
        t = switched_gather(v, k, hosts, H100_NVLINK, H100_NIC, HOP)
        assert t.seconds >= HOP * ((k - 1) + (hosts - 1)) - 1e-15
        assert math.isfinite(t.seconds)
