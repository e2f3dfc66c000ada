"""Host <-> device transfers and offload requests, parsed from saved compiles of one small
training step (tests/fixtures/offload/make_fixtures.py: L=4 scanned layers of
``sin(checkpoint_name(x @ w, "act"))`` with "act" offloaded to pinned host memory, and a
pinned_host optimizer state ``opt`` updated on the device). Bytes are hand counted:
one step's activation is 64 rows x 512 f32 per device = 128 KiB; ``opt`` is 4 x 512 x 512
f32 = 4 MiB."""

from __future__ import annotations

from pathlib import Path

import pytest

from shardviz.capture.hlo.loops import computation_runs, loops_of
from shardviz.capture.hlo.offload import host_transfers, offload_requests
from shardviz.capture.hlo.text import parse_hlo_module

OFFLOAD = Path(__file__).parent.parent / "fixtures" / "offload"
ACT = 64 * 512 * 4
OPT = 4 * 512 * 512 * 4
L = 4


def _transfers(name: str):
    module = parse_hlo_module((OFFLOAD / f"{name}.txt").read_text())
    return host_transfers(module, computation_runs(module, loops_of(module)))


def _requests(name: str):
    return offload_requests(parse_hlo_module((OFFLOAD / f"{name}.before_opt.txt").read_text()))


def _per_step(transfers, role: str, direction: str) -> int:
    return sum(t.bytes_per_step for t in transfers if t.role == role and t.direction == direction)


@pytest.mark.parametrize("name", ["v5e_offload", "h100_offload"])
def test_offloaded_activations_go_out_and_come_back_once_per_layer(name):
    ts = _transfers(name)
    assert _per_step(ts, "offload", "to host") == L * ACT
    assert _per_step(ts, "offload", "to device") == L * ACT
    out = [t for t in ts if t.role == "offload" and t.direction == "to host"]
    assert all(t.bytes == ACT and t.asynchronous for t in out)
    # The TPU peels one layer out of each loop (3 trips + 1), the GPU runs 4 trips.
    assert sorted(t.runs for t in out) == ([1, 3] if name.startswith("v5e") else [4])


def test_tpu_brings_a_pinned_host_argument_in_and_sends_the_output_back():
    ts = _transfers("v5e_offload")
    (arg,) = [t for t in ts if t.role == "argument"]
    assert (arg.direction, arg.bytes, arg.op, arg.origin, arg.where) == (
        "to device", OPT, "copy-start", "param.6", "opt"
    )  # fmt: skip
    (out,) = [t for t in ts if t.role == "output"]
    assert (out.direction, out.bytes, out.where) == ("to host", OPT, "make_fixtures.py:82")


def test_gpu_keeps_the_pinned_host_argument_in_hbm_so_nothing_brings_it_in():
    ts = _transfers("h100_offload")
    assert [t.role for t in ts if t.role != "offload"] == ["output"]


def test_gpu_offload_is_a_fusion_start_of_a_wrapped_dynamic_update_slice():
    (t,) = [
        t for t in _transfers("h100_offload") if t.direction == "to host" and t.role == "offload"
    ]
    assert t.op == "fusion-start" and t.value == "f32[1,64,512]"
    assert t.where == "make_fixtures.py:77"  # the scan over the layers


@pytest.mark.parametrize("name", ["v5e_no_tag", "h100_no_tag", "cpu_offload", "cpu_no_tag"])
def test_nothing_is_offloaded_when_no_residual_is_tagged_or_on_cpu(name):
    assert not [t for t in _transfers(name) if t.role == "offload"]


def test_cpu_moves_nothing_between_memories():
    assert _transfers("cpu_offload") == ()


@pytest.mark.parametrize("name", ["v5e_offload", "h100_offload"])
def test_requests_name_the_offloaded_value_and_the_output(name):
    reqs = _requests(name)
    assert [(r.value, r.kind, r.output, r.where) for r in reqs] == [
        ("f32[256,512]", "pinned_host", False, "make_fixtures.py:64"),  # x @ w, tagged "act"
        ("f32[4,512,512]", "pinned_host", True, "make_fixtures.py:82"),  # the host output
    ]


@pytest.mark.parametrize("name", ["v5e_no_tag", "h100_no_tag", "cpu_offload", "cpu_no_tag"])
def test_no_offload_request_when_the_tag_is_no_residual_or_on_cpu(name):
    assert [r.output for r in _requests(name)] == [True]


@pytest.mark.parametrize(
    ("name", "expected"),
    [("v5e_offload", L * ACT), ("h100_offload", L * ACT), ("v5e_no_tag", 0), ("cpu_offload", 0)],
)
def test_host_scratch_is_the_offloaded_stack(name, expected):
    """The stacked activations live in a host buffer of L x 64 x 512 f32 per device, which
    memory_analysis()'s host temp (0 in every fixture) leaves out."""
    from shardviz.capture.hlo.offload import host_scratch_bytes

    module = parse_hlo_module((OFFLOAD / f"{name}.txt").read_text())
    assert host_scratch_bytes(module) == expected


def test_the_tpu_compilers_own_dump_reads_the_same_transfers():
    # jax 0.12's dump names a tuple's element `t#k` (no get-tuple-element): the same
    # transfers are read, and each offload's origin is followed through the tuple.
    def seen(ts):
        return sorted((t.role, t.direction, t.bytes, t.runs, t.where) for t in ts)

    dumped = _transfers("v5e_offload_dumped")
    assert seen(dumped) == seen(_transfers("v5e_offload"))
    assert all(t.origin for t in dumped if t.role == "offload" and t.direction == "to host")
