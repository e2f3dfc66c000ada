"""The predicted step: ops one after another, each at its roofline, plus what the schedule
leaves exposed of every transfer; checked on hand-built schedules and a compiled one."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shardviz.analysis.estimate.predict import op_seconds, predict_step
from shardviz.model import Collective, OpWork

PEAK, BW = 1e12, 1e9  # 1 TFLOP/s, 1 GB/s: a matmul of 1e9 flops takes 1 ms, 1e6 bytes 1 ms


def collective(name: str, seconds: float) -> Collective:
    c = Collective(name, "all-gather", "bf16", (1,), "bf16", (8,), 2, 16, 14, 8,
                   ((0, 1, 2, 3, 4, 5, 6, 7),), ("data",))  # fmt: skip
    return dataclasses.replace(c, estimated_seconds=seconds)


def test_each_op_takes_its_compute_or_its_memory_time_whichever_is_longer() -> None:
    assert op_seconds(OpWork("mm", 2e9, 1e6), PEAK, BW) == pytest.approx(2e-3)
    assert op_seconds(OpWork("add", 1e6, 3e6), PEAK, BW) == pytest.approx(3e-3)
    assert op_seconds(OpWork("offload", 0, 1e6, host_bytes=1e6), PEAK, BW) == pytest.approx(2e-3)


def test_an_async_collective_is_hidden_by_the_ops_in_flight_beside_it() -> None:
    ops = (
        OpWork("a", 1e9, 0, runs=4, in_flight=("ag",)),  # 1 ms x 4 beside the gather
        OpWork("b", 1e9, 0, runs=4),  # 1 ms x 4, nothing in flight
    )
    # The gather takes 1.5 ms per run, 4 runs: 6 ms, of which 4 ms hidden.
    p = predict_step(ops, (collective("ag", 1.5e-3),), {"ag": 4}, PEAK, BW)
    assert p is not None
    assert p.ops_seconds == pytest.approx(8e-3)
    assert p.exposed_seconds == pytest.approx(2e-3)
    assert p.seconds == pytest.approx(10e-3)
    assert p.exposed == (("ag", pytest.approx(2e-3)),)
    # Fully hidden when it takes less than the ops beside it.
    hidden = predict_step(ops, (collective("ag", 0.5e-3),), {"ag": 4}, PEAK, BW)
    assert hidden is not None and hidden.exposed_seconds == 0 and hidden.seconds == 8e-3


def test_a_synchronous_collective_and_a_combined_ones_parts_are_exposed_whole() -> None:
    ops = (OpWork("a", 1e9, 0),)
    parts = (collective("ar#0", 1e-3), collective("ar#1", 2e-3), collective("sync", 4e-3))
    p = predict_step(ops, parts, None, PEAK, BW)
    assert p is not None and p.exposed_seconds == pytest.approx(7e-3)
    assert dict(p.exposed) == {"sync": pytest.approx(4e-3), "ar": pytest.approx(3e-3)}


def test_a_prefetch_is_a_transfer_hidden_like_a_collective() -> None:
    ops = (
        OpWork("cs", 0, 2e6, transfer=True),  # 2 ms of copying
        OpWork("n", 1e9, 0, in_flight=("cs",)),  # 1 ms beside it
    )
    p = predict_step(ops, (), None, PEAK, BW)
    assert p is not None and p.ops_seconds == pytest.approx(1e-3)
    assert p.exposed_seconds == pytest.approx(1e-3)


def test_no_schedule_no_prediction() -> None:
    assert predict_step((), (collective("ag", 1.0),), None, PEAK, BW) is None


@given(
    st.lists(
        st.tuples(
            st.floats(0, 1e10), st.floats(0, 1e7), st.integers(1, 64), st.booleans(),
            st.sampled_from(((), ("c",), ("c", "d"))),
        ),
        min_size=1, max_size=12,
    ),
    st.floats(0, 1.0), st.floats(0, 1.0),
)  # fmt: skip
def test_the_prediction_lies_between_the_ops_alone_and_everything_one_after_another(
    rows, c_seconds, d_seconds
) -> None:
    ops = tuple(OpWork(f"op{k}", f, b, n, t, flying) for k, (f, b, n, t, flying) in enumerate(rows))
    p = predict_step(ops, (collective("c", c_seconds), collective("d", d_seconds)), None, PEAK, BW)
    assert p is not None
    serial = sum(op_seconds(o, PEAK, BW) * o.runs for o in ops) + c_seconds + d_seconds
    assert p.ops_seconds - 1e-12 <= p.seconds <= serial * (1 + 1e-9) + 1e-12


def test_host_bytes_cross_the_host_link_when_its_bandwidth_is_known() -> None:
    # 1 MB over a 1e8 B/s host link: 10 ms, longer than its 1 MB of HBM at BW.
    op = OpWork("offload", 0, 1e6, host_bytes=1e6)
    assert op_seconds(op, PEAK, BW, host_bandwidth=1e8) == pytest.approx(1e6 / 1e8)
    assert op_seconds(op, PEAK, BW, host_bandwidth=1e8) > op_seconds(op, PEAK, BW)


def test_matmuls_at_a_chips_sustained_fraction_of_the_peak_take_longer_and_hide_more() -> None:
    """At half the peak a compute-bound op takes twice as long (a memory-bound one does
    not change), the compute total stays at the peak (the bound's term), and a transfer
    beside the slower op hides under more of it."""
    mm, add = OpWork("mm", 2e9, 1e6), OpWork("add", 1e6, 3e6)
    assert op_seconds(mm, PEAK, BW, efficiency=0.5) == pytest.approx(4e-3)
    assert op_seconds(add, PEAK, BW, efficiency=0.5) == pytest.approx(3e-3)
    ops = (OpWork("mm", 2e9, 0, in_flight=("ag",)),)
    full = predict_step(ops, (collective("ag", 3e-3),), None, PEAK, BW)
    half = predict_step(ops, (collective("ag", 3e-3),), None, PEAK, BW, efficiency=0.5)
    assert full is not None and half is not None
    assert (full.ops_seconds, full.exposed_seconds) == (pytest.approx(2e-3), pytest.approx(1e-3))
    assert (half.ops_seconds, half.exposed_seconds) == (pytest.approx(4e-3), 0.0)
    assert half.compute_seconds == full.compute_seconds == pytest.approx(2e-3)
