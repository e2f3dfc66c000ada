"""The Explorer's memory pane with host memory: per device, HBM bytes and host bytes apart, by
role and by leaf, and whose figures the host ones are.

CPU, 8 fake devices: an optimizer leaf placed with ``memory_kind="pinned_host"`` is counted in
host memory by shardviz's accounting from the shardings (the CPU compiler counts it as device
bytes), and left out of the HBM bars. A program without host memory gets no host parts.
"""

from __future__ import annotations

import dataclasses
import json

import jax
import jax.numpy as jnp
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz as sv
from shardviz.model import Report
from shardviz.model.offload import HostTransfer
from shardviz.model.program import HOST_FROM_SHARDINGS
from shardviz.widgets.explorer.payload import (
    MEMORY_ROLES,
    VERSION,
    dumps,
    memory_payload,
    report_payload,
)
from tests.render.report_fixtures import dp_report

ROWS, COLS = 64, 256
W_SHARD = ROWS // 8 * COLS * 4  # params/w: split 8 ways over 'data'
MU_SHARD = ROWS // 8 * COLS * 4  # opt/mu: split the same way, kept on host


def _mesh():
    return jax.make_mesh((8,), ("data",), axis_types=(jax.sharding.AxisType.Auto,))


def host_step_report(key: str = "mu") -> Report:
    """``step(params, opt)`` explained: ``opt[key]`` arrives in pinned host memory, split over
    'data', and is brought to the device for the update of ``params['w']``."""
    mesh = _mesh()
    params = {"w": jax.device_put(jnp.ones((ROWS, COLS)), NamedSharding(mesh, P("data")))}
    host = NamedSharding(mesh, P("data"), memory_kind="pinned_host")
    opt = {key: jax.device_put(jnp.zeros((ROWS, COLS)), host)}

    def step(params, opt):
        mu = jax.device_put(opt[key], jax.memory.Space.Device)
        return {"w": params["w"] - 0.1 * mu}

    return sv.explain(step, params, opt, run=False)


@pytest.fixture(scope="module")
def host_report():
    return host_step_report()


@pytest.fixture(scope="module")
def host_memory(host_report):
    return report_payload(host_report)["memory"]


def test_the_report_keeps_the_optimizer_leaf_on_host(host_report):
    assert host_report.arguments["opt/mu"].on_host
    assert host_report.memory.host_source == HOST_FROM_SHARDINGS
    assert host_report.memory.host_bytes == MU_SHARD


def test_host_bytes_per_device_are_the_leafs_shard_bytes(host_report, host_memory):
    host = host_memory["host"]
    devices = host_memory["devices"]
    assert devices == list(range(8))
    assert host["totals"] == [MU_SHARD] * 8
    optimizer = MEMORY_ROLES.index("optimizer")
    for row in host["bytes"]:
        assert row[optimizer] == MU_SHARD and sum(row) == MU_SHARD
    assert host["total"] == host_report.memory.host_bytes == MU_SHARD
    # Each device's bytes are the tiles it holds of the leaf, hand-counted from the layout.
    leaf = host_report.arguments["opt/mu"]
    held = {t.device_id: t.nbytes for t in leaf.tiles}
    assert host["totals"] == [held[d] for d in devices]


def test_hbm_bars_leave_the_host_leaf_out(host_report, host_memory):
    out_shard = W_SHARD  # the output w, split as the argument is, in HBM
    for row in host_memory["bytes"]:
        assert row == [W_SHARD, out_shard, host_report.memory.temp_bytes]
    # By role, HBM has the parameter and the output (other); no optimizer bytes.
    params, optimizer = MEMORY_ROLES.index("params"), MEMORY_ROLES.index("optimizer")
    other = MEMORY_ROLES.index("other")
    for row, hbm in zip(host_memory["bytes"], host_memory["host"]["hbm_bytes"], strict=True):
        assert hbm[params] == W_SHARD and hbm[optimizer] == 0
        assert hbm[other] == out_shard + host_report.memory.temp_bytes
        assert sum(hbm) == sum(row)
    # The peak (HBM) is the CPU compiler's sum less the host leaf.
    m = host_report.memory
    assert host_memory["peak_bytes"] == m.argument_bytes + m.output_bytes + m.temp_bytes - MU_SHARD


def test_host_words_say_where_the_figures_come_from(host_report, host_memory):
    host = host_memory["host"]
    assert host["text"] == "16 KiB in HBM · 8 KiB in host memory per device"
    assert host["line"] == "host memory per device 8 KiB (8,192 B): argument 8 KiB"
    assert host["heading"] == "Host memory per device (not HBM): 8 KiB (8,192 B): argument 8 KiB"
    assert host["source"].startswith("shardviz's accounting from the shardings' memory kinds")
    assert "the CPU compiler counts host bytes as device bytes" in host["source"]
    assert host["from_compiler"] is False
    assert host["mismatch"] == ""
    assert host["leaves"] == [["opt/mu", "optimizer", "pinned_host", "8 KiB", "8 KiB (8,192 B)"]]
    assert host["transfers"] is None  # the CPU moves nothing between memories
    assert "in HBM (host memory drawn apart)" in host_memory["note"]


def test_hover_text_gives_exact_bytes_by_role_and_by_leaf(host_memory):
    host = host_memory["host"]
    assert len(host["labels"]) == 1 and set(host["label_of"]) == {0}  # one label, shared
    hover, readout = host["labels"][0]
    lines = hover.split("\n")
    assert lines[0] == "host memory 8 KiB (8,192 B) (not HBM)"
    assert "optimizer 8 KiB (8,192 B)" in lines and "params 0 B" in lines
    assert lines[-1] == "opt/mu: 8 KiB (8,192 B)"
    assert readout == "host 8 KiB: optimizer 8 KiB"
    hbm_hover = host_memory["labels"][0][0]
    assert hbm_hover.endswith(
        "by role: params 8 KiB (8,192 B) · optimizer 0 B · batch 0 B · other 8 KiB (8,192 B)"
    )


def test_same_bars_consider_the_host_bars_too(host_memory):
    assert host_memory["same"] == "same on every device (8 devices)"
    assert host_memory["host"]["scale"] == {"bytes": MU_SHARD, "text": "8 KiB"}


def test_host_transfers_are_counted_per_step(host_report):
    moves = (
        HostTransfer("copy-start", "copy-start", "to host", 1024, runs=4, role="offload"),
        HostTransfer("copy-start.1", "copy-start", "to device", 1024, runs=4, role="offload"),
        HostTransfer("copy.2", "copy", "to device", 2048, role="argument"),
    )
    report = dataclasses.replace(host_report, host_transfers=moves)
    t = memory_payload(report)["host"]["transfers"]
    assert t["to_host_bytes"] == 4096 and t["to_device_bytes"] == 4096 + 2048
    assert t["count"] == 3
    assert (
        t["text"]
        == "host transfers per device per step: 4 KiB to host · 6 KiB to device (3 transfers)"
    )
    assert [r[3] for r in t["rows"]] == ["4 KiB", "4 KiB", "2 KiB"]


def test_a_program_without_host_memory_has_no_host_parts():
    report = dp_report()
    assert not report.memory.host_source and not report.host_transfers
    p = report_payload(report)
    assert p["version"] == VERSION == 5
    assert "host" not in p["memory"]
    assert not [k for k in p["memory"] if "host" in k]
    assert "host" not in p["memory"]["note"]
    # The bars still count every leaf each device holds (nothing is on host).
    args = report.arguments.bytes_per_device
    assert [row[0] for row in p["memory"]["bytes"]] == [args[d] for d in p["memory"]["devices"]]


def test_the_payload_is_json(host_report):
    p = json.loads(dumps(report_payload(host_report)))
    assert p["memory"]["host"]["totals"] == [MU_SHARD] * 8
