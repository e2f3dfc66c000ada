"""Host memory beside HBM: leaves' memory kinds, the compiler's host figures (TPU, GPU
fixtures) and shardviz's own accounting on CPU, where the compiler counts host bytes as
device bytes."""

from __future__ import annotations

import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz as sv
from shardviz.capture.host_memory import with_host
from shardviz.model import LeafBytes, MemoryReport
from shardviz.model.program import (
    CPU_PEAK_LESS_HOST,
    HOST_FROM_COMPILER,
    HOST_FROM_SHARDINGS,
)

OFFLOAD = Path(__file__).parent.parent / "fixtures" / "offload"
MiB = 1 << 20


def _mesh():
    return jax.make_mesh((8,), ("data",), axis_types=(jax.sharding.AxisType.Auto,))


def _host_step(w, opt):
    """``opt`` arrives in pinned host memory, is updated on the device and goes back."""
    o = jax.device_put(opt, jax.memory.Space.Device) + w
    return w * 2, jax.device_put(o, jax.memory.Space.Host)


@pytest.fixture(scope="module")
def placed():
    mesh = _mesh()
    w = jax.device_put(jnp.ones((64, 256)), NamedSharding(mesh, P("data")))
    opt = jax.device_put(
        jnp.zeros((64, 256)), NamedSharding(mesh, P(None), memory_kind="pinned_host")
    )
    return w, opt


@pytest.fixture(scope="module")
def cpu_report(placed):
    return sv.explain(_host_step, *placed, run=False)


def test_a_layout_carries_its_memory_kind(placed):
    w, opt = placed
    assert sv.layout(w).memory_kind == "device" and not sv.layout(w).on_host
    assert sv.layout(opt).memory_kind == "pinned_host" and sv.layout(opt).on_host


def test_tree_host_and_hbm_bytes_per_device_are_hand_counted(placed):
    tree = sv.layout_tree({"w": placed[0], "opt": placed[1]})
    # w: 64 x 256 f32 split 8 ways = 8 KiB per device; opt: replicated 64 KiB on host.
    assert set(tree.hbm_bytes_per_device.values()) == {8 * 256 * 4}
    assert set(tree.host_bytes_per_device.values()) == {64 * 256 * 4}


def test_cpu_compiler_counts_host_arguments_as_device_bytes(placed):
    """The fact shardviz's CPU accounting rests on (jax 0.10.2)."""
    ma = jax.jit(_host_step).lower(*placed).compile().memory_analysis()
    assert ma.host_argument_size_in_bytes == 0 and ma.host_output_size_in_bytes == 0
    assert ma.argument_size_in_bytes == 8 * 256 * 4 + 64 * 256 * 4


def test_cpu_report_counts_host_bytes_from_the_shardings(cpu_report):
    m = cpu_report.memory
    assert cpu_report.arguments["opt"].memory_kind == "pinned_host"
    assert {x.path: x.memory_kind for x in m.by_leaf} == {"w": "device", "opt": "pinned_host"}
    assert m.host_argument_bytes == 64 * 256 * 4
    # The second output (opt + w, split as w is) goes back to host: 8 KiB per device.
    assert m.host_output_bytes == 8 * 256 * 4
    assert m.host_bytes == 64 * 256 * 4 + 8 * 256 * 4
    assert m.host_source == HOST_FROM_SHARDINGS
    # The HBM peak leaves the host arguments and outputs out of the compiler's sum.
    total = m.argument_bytes + m.output_bytes - m.alias_bytes + m.temp_bytes
    assert m.peak_bytes == total - m.host_bytes
    assert m.peak_definition == CPU_PEAK_LESS_HOST


def test_cpu_report_shows_host_memory_in_text_and_html(cpu_report):
    text, html = str(cpu_report), cpu_report._repr_html_()
    assert "host memory per device 72 KiB (73,728 B): argument 64 KiB · output 8 KiB" in text
    assert "from shardviz's accounting from the shardings' memory kinds" in text
    assert "on host: opt (opt, pinned_host) 64 KiB" in text
    assert "by role: opt 64 KiB (1, 64 KiB on host) · w 8 KiB (1)" in text
    assert 'class="sv-host-mem" data-bytes="73728"' in html
    assert 'data-memory="pinned_host"' in html


def test_a_program_without_host_memory_is_unchanged():
    m = MemoryReport(1, 2, 0, 3, 0, 6, by_leaf=(LeafBytes("x", "x", 1),))
    assert with_host(m, "cpu") is m
    assert with_host(m, "tpu", (0, 0, 0, 0)) is m
    assert m.host_bytes == 0


def _fixture(name: str) -> dict:
    return json.loads((OFFLOAD / f"{name}.json").read_text())["memory_analysis"]


def _compiler_host(ma: dict) -> tuple[int, int, int, int]:
    return tuple(ma[f"host_{f}_size_in_bytes"] for f in ("argument", "output", "alias", "temp"))


def _leaves(opt_bytes: int) -> tuple[tuple[LeafBytes, ...], tuple[LeafBytes, ...]]:
    args = (
        LeafBytes("ws", "ws", opt_bytes),
        LeafBytes("x", "x", 64 * 512 * 4),
        LeafBytes("opt", "opt", opt_bytes, "pinned_host"),
    )
    outs = (
        LeafBytes("out/0", "output", opt_bytes),
        LeafBytes("out/1", "output", opt_bytes, "pinned_host"),
    )
    return args, outs


def test_tpu_host_figures_are_the_compilers_and_agree_with_the_leaves():
    ma = _fixture("v5e_offload")
    opt = 4 * 512 * 512 * 4  # the fixture's optimizer state: L x D x D f32
    args, outs = _leaves(opt)
    m = MemoryReport(0, 0, 0, 0, 0, 0, by_leaf=args, out_leaves=outs)
    got = with_host(m, "tpu", _compiler_host(ma))
    assert (got.host_argument_bytes, got.host_output_bytes) == (opt, opt) == (4 * MiB, 4 * MiB)
    assert got.host_source == HOST_FROM_COMPILER and got.host_mismatch == ""
    # The device figure leaves the host argument out: ws (4 MiB) + x (128 KiB).
    assert ma["argument_size_in_bytes"] == opt + 64 * 512 * 4


def test_a_host_argument_the_compiler_keeps_in_hbm_is_reported():
    """The h100 fixture's ``opt`` has no host memory kind once compiled (jax's deviceless GPU
    devices list no memories and NamedSharding drops the kind): set against leaves that say
    pinned_host, the compiler's 0 B of host arguments is the difference reported."""
    ma = _fixture("h100_offload")
    opt = 4 * 512 * 512 * 4
    args, outs = _leaves(opt)
    m = MemoryReport(0, 0, 0, 0, 0, 0, peak_definition="GPU", by_leaf=args, out_leaves=outs)
    got = with_host(m, "gpu", _compiler_host(ma))
    assert got.host_argument_bytes == 0 and got.host_output_bytes == opt
    assert ma["argument_size_in_bytes"] == 2 * opt + 64 * 512 * 4  # opt counted on the device
    assert got.host_mismatch == (
        "inputs placed in host memory by their shardings: 4 MiB (4,194,304 B) per device; "
        "the compiler keeps 0 B (0 B) of inputs on host"
    )


def test_cpu_peak_rule_other_than_the_sum_is_left_alone():
    args, outs = _leaves(100)
    m = MemoryReport(0, 0, 0, 0, 0, 500, peak_definition="other", by_leaf=args, out_leaves=outs)
    got = with_host(m, "cpu")
    assert got.peak_bytes == 500 and got.host_bytes == 200
    assert got.peak_definition == "other"


def test_host_kinds_of_a_numpy_free_layout_default_to_device():
    layout = sv.layout(jax.ShapeDtypeStruct((8,), np.float32, sharding=NamedSharding(_mesh(), P())))
    assert layout.memory_kind == "device"


def test_tree_and_array_views_show_host_memory(placed):
    tree = sv.layout_tree({"w": placed[0], "opt": placed[1]})
    text, html = str(tree), tree._repr_html_()
    line = "per device (largest): 8 KiB in HBM · 64 KiB in host memory (opt)"
    assert line in text and line in html
    assert "replicated, pinned_host" in text and "replicated, pinned_host" in html
    assert "64 KiB in pinned_host memory per device" in str(sv.layout(placed[1]))
    plain = sv.layout_tree({"w": placed[0]})
    assert "host memory" not in str(plain) and "host memory" not in plain._repr_html_()


def test_host_figures_survive_json(cpu_report):
    back = type(cpu_report).from_json(cpu_report.to_json())
    assert back.memory == cpu_report.memory
    assert back.arguments["opt"].memory_kind == "pinned_host"


def test_mark_sharding_places_in_host_memory():
    x = sv.mark_sharding(jnp.ones((16, 4)), _mesh(), ("data", None), memory_kind="pinned_host")
    assert x.sharding.memory_kind == "pinned_host"
    assert sv.layout(x).on_host


@pytest.mark.parametrize("kind", ["hbm", "HOST", 5])
def test_a_memory_kind_the_backend_lacks_names_the_ones_it_has(kind):
    with pytest.raises(sv.ShardvizError) as err:
        sv.mark_sharding(jnp.ones((16, 4)), _mesh(), ("data", None), name="cache",
                         memory_kind=kind)  # fmt: skip
    msg = str(err.value)
    assert msg.startswith("cache:") and f"memory kind {kind!r} is not one the CPU devices" in msg
    assert "'device', 'pinned_host', 'unpinned_host'" in msg
    assert "memory_kind='pinned_host'" in msg


def test_gpu_peak_counts_host_so_the_hbm_peak_is_the_default_space():
    """h100 fixture: the compiler's peak is argument + output + temp + its host output (to
    within 0.02%); the buffer assignment's default space is the HBM figure."""
    ma = _fixture("h100_offload")
    device_sum = sum(ma[f"{f}_size_in_bytes"] for f in ("argument", "output", "temp"))
    peak = ma["peak_memory_in_bytes"]
    assert abs(peak - device_sum - ma["host_output_size_in_bytes"]) / peak < 2e-4
    from shardviz.model.program import GPU_HBM_PEAK

    m = MemoryReport(0, 0, 0, 0, 0, peak, compiler_peak_bytes=peak,
                     peak_definition="the GPU compiler's own peak",
                     by_space=(("default", device_sum), ("cmem", OPT_BYTES)))  # fmt: skip
    got = with_host(m, "gpu", _compiler_host(ma), offloaded=4 * 64 * 512 * 4)
    assert (got.peak_bytes, got.peak_definition) == (device_sum, GPU_HBM_PEAK)
    assert got.host_bytes == OPT_BYTES + 4 * 64 * 512 * 4


OPT_BYTES = 4 * 512 * 512 * 4


def test_offloaded_buffers_the_compilers_host_temp_holds_count_once():
    """libtpu with jax 0.10.2 counts act-offload's stacked layer inputs in its host temp (128
    KiB, its host memory space 128 KiB): the program's own host buffers are not added again.
    A compiler whose host temp leaves them out (smaller) gets them added."""
    m = MemoryReport(0, 0, 0, 0, 0, 1000, peak_definition="tpu")
    held = with_host(m, "tpu", (0, 0, 0, 128 * 1024), offloaded=128 * 1024)
    assert held.host_bytes == 128 * 1024 and held.offloaded_bytes == 0
    apart = with_host(m, "tpu", (0, 0, 0, 0), offloaded=128 * 1024)
    assert apart.host_bytes == 128 * 1024 and apart.offloaded_bytes == 128 * 1024
