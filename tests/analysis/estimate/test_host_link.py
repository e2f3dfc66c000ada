"""Host transfers timed on a chip's host link, by hand: the larger direction's bytes per step
over the link's one-way bandwidth, hidden when that fits under compute."""

from __future__ import annotations

import pytest

from shardviz.analysis.estimate.host_link import host_link
from shardviz.model.offload import HostTransfer

MB = 1_000_000


def _t(direction: str, nbytes: int, runs: int = 1) -> HostTransfer:
    return HostTransfer("t", "copy-start", direction, nbytes, runs)  # type: ignore[arg-type]


def test_the_larger_direction_sets_the_time() -> None:
    link = host_link([_t("to host", 2 * MB, runs=4), _t("to device", 3 * MB)], 1e9, 0.1)
    assert (link.to_host_bytes, link.to_device_bytes) == (8 * MB, 3 * MB)
    assert link.seconds == pytest.approx(8e-3)
    assert link.hides and link.exposed_seconds == 0.0
    assert "can hide under compute" in link.text


def test_what_compute_cannot_cover_is_exposed() -> None:
    link = host_link([_t("to host", 10 * MB)], 1e9, 4e-3)
    assert link.exposed_seconds == pytest.approx(6e-3) and link.hides is False
    assert "more than compute" in link.text


def test_no_transfers_or_no_link_gives_nothing_and_unknown_compute_says_so() -> None:
    assert host_link([], 1e9, 1.0) is None
    assert host_link([_t("to host", MB)], 0.0, 1.0) is None
    link = host_link([_t("to host", MB)], 1e9, None)
    assert link.hides is None and "whether it hides is unknown" in link.text


def test_a_memory_bound_step_hides_the_link_under_its_hbm_time_never_under_compute() -> None:
    # Notebook 12's act-offload on a v5e: 128 KiB each way, compute 4.65 µs, HBM 90.7 µs.
    link = host_link([_t("to host", 131_072), _t("to device", 131_072)], 15e9, 90.7e-6, "memory")
    assert link.hides and "can hide under the step's HBM time (90.7 µs)" in link.text
    assert "compute" not in link.text
    over = host_link([_t("to host", 10 * MB)], 1e9, 4e-3, "memory")
    assert "6 ms more than the step's HBM time (4 ms) can hide" in over.text


def test_the_link_is_said_in_the_units_its_figure_is_published_in() -> None:
    # 15e9 B/s is the v5e sheet's 15 GB/s, never "14 GiB/s" beside it.
    link = host_link([_t("to host", MB)], 15e9, 1.0)
    assert "at 15 GB/s each way" in link.text and "GiB/s" not in link.text


def test_bandwidths_read_in_decimal_units_with_three_digits() -> None:
    from shardviz.model.units import format_bandwidth

    assert format_bandwidth(15e9) == "15 GB/s"
    assert format_bandwidth(8.19e11) == "819 GB/s"
    assert format_bandwidth(3.35e12) == "3.35 TB/s"
    assert format_bandwidth(8e8) == "800 MB/s"
    assert format_bandwidth(0) == "0 B/s"
