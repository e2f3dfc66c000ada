"""The offload strategies in sv.compare: ZeRO-Offload, activation offload, weights streamed
from host. HBM and host bytes per device, bytes over the host link per step and the
estimated step, checked against hand counts: on 8 CPU devices (runs, loss checked) and
compiled deviceless for a TPU v5e 2x2 (where the compiler inserts the transfers)."""

from __future__ import annotations

import dataclasses

import jax
import pytest

import shardviz as sv
from shardviz.errors import ShardvizError
from shardviz.model import display
from shardviz.model.compare import Comparison
from shardviz.model.hardware_presets import hardware
from shardviz.render.compare.host import host_views
from shardviz.render.compare.view import memory_parts
from shardviz.strategies.rules import BUILTIN, RuleSet

#: A Llama small enough to compile four strategies deviceless in seconds.
DIMS = {"layers": 2, "d_model": 128, "heads": 4, "kv_heads": 2, "head_dim": 32, "ffn": 256,
        "vocab": 512, "seq": 128, "batch": 8}  # fmt: skip
DEVICES = 4  # v5e:2x2


@pytest.fixture(scope="module")
def mlp() -> Comparison:
    return sv.compare("mlp", ["zero2", "zero-offload"])


@pytest.fixture(scope="module")
def v5e() -> Comparison:
    return sv.compare(
        "llama3.1-8b", ["fsdp", "zero-offload", "act-offload", "weight-stream"],
        target="v5e:2x2", **DIMS,
    )  # fmt: skip


def test_zero_offload_runs_and_matches_the_reference(mlp):
    for r in mlp.results:
        assert r.loss_matches, r.strategy


def test_zero_offload_keeps_the_optimizer_state_on_host(mlp):
    base, off = mlp.result("zero2"), mlp.result("zero-offload")
    # The same split over 'data', in host memory instead of HBM.
    assert off.memory.host_optimizer == base.memory.optimizer > 0
    assert base.memory.host == 0
    kinds = {lb.memory_kind for lb in off.report.memory.by_leaf if lb.role == "opt_state"}
    assert kinds == {"pinned_host"}
    # The HBM stack leaves it out, and the HBM peak drops by at least the state twice over
    # (the state in and the new state out).
    assert dict((c.key, b) for c, b in memory_parts(off.memory))["optimizer"] == 0
    assert base.memory.peak - off.memory.peak >= 2 * off.memory.host_optimizer - 1024
    # On CPU the host figures come from the shardings: arguments + outputs on host.
    assert off.memory.host == off.memory.host_optimizer + off.memory.host_outputs


def test_cpu_says_it_moves_nothing_over_the_host_link(mlp):
    (h,) = [h for h in host_views(mlp) if h.label == "zero-offload"]
    assert h.to_host == h.to_device == 0
    c = sv.compare("mlp", ["zero-offload"], target="v5e")
    (h,) = host_views(c)
    assert "none on CPU" in h.link_str


def test_text_and_html_show_hbm_beside_host(mlp):
    text = display.render(mlp, "text")
    assert "HBM and host memory per device, and the host link per step" in text
    html = display.render(mlp, "html")
    assert 'class="sv-cmp-t sv-cmp-hosttable"' in html
    off = mlp.result("zero-offload")
    assert f'data-host-bytes="{off.memory.host}"' in html
    assert 'data-component="host"' in html


def test_plotly_and_matplotlib_draw_host_beside_the_stack(mlp):
    fig = display.render(mlp, "plotly")
    (host,) = [t for t in fig.data if t.name == "host memory"]
    assert list(host.y) == [r.memory.host for r in mlp.results]
    assert host.offsetgroup == "host"
    mfig = display.render(mlp, "matplotlib")
    ax = mfig.axes[0]
    bars = [p for p in ax.patches if p.get_gid() == "host"]
    assert [int(b.get_height()) for b in bars] == [r.memory.host for r in mlp.results]


def test_no_host_section_without_host_memory():
    c = sv.compare("mlp", ["dp"])
    assert host_views(c) == ()
    assert "host memory" not in display.render(c, "text")


def test_v5e_zero_offload_moves_the_state_both_ways_each_step(v5e):
    r = v5e.result("zero-offload")
    opt = r.memory.host_optimizer
    assert opt > 0 and r.memory.host_params == 0
    # Every byte of the state comes to HBM for the update and goes back (the step counter,
    # a scalar, may stay where it is).
    for moved in (r.to_host_bytes, r.to_device_bytes):
        assert opt - 64 <= moved <= opt
    # The state did go to host: no finding says it stayed in HBM.
    assert not [f for f in r.report.findings.items if f.kind == "offload-missed"]
    e = r.report.estimate
    assert e.host_seconds == pytest.approx(max(r.to_host_bytes, r.to_device_bytes) / 15e9)
    assert e.step_seconds >= e.host_seconds


def test_v5e_act_offload_sends_each_layer_input_to_host(v5e):
    r = v5e.result("act-offload")
    # Layer inputs: batch 8 over 4 devices x seq 128 x d_model 128, bf16, per layer.
    per_layer = 8 // DEVICES * 128 * 128 * 2
    assert r.to_host_bytes == r.to_device_bytes == DIMS["layers"] * per_layer
    assert r.memory.host_scratch >= DIMS["layers"] * per_layer
    assert not [f for f in r.report.findings.items if f.kind == "offload-missed"]
    assert v5e.result("fsdp").host_transfer_bytes == 0


def test_v5e_weight_stream_brings_every_weight_to_hbm(v5e):
    r = v5e.result("weight-stream")
    params = r.memory.host_params
    assert params > 0 and r.memory.host_optimizer == 0
    assert r.to_device_bytes >= params  # every weight at least once (layers again backward)
    assert r.to_host_bytes >= params  # the updated weights go back
    assert r.report.estimate.bound in ("compute", "memory", "communication", "host link")


def test_host_link_can_set_the_bound():
    """A slow enough host link makes the step host-link-bound."""
    from shardviz.analysis.estimate.step import with_estimate

    c = sv.compare("mlp", ["zero-offload"], target="v5e:2x2")
    r = c.results[0]
    slow = dataclasses.replace(hardware("v5e"), host_bandwidth=1.0)
    e = with_estimate(r.report, dataclasses.replace(r.report.target, hardware=slow)).estimate
    assert e.bound == "host link"
    assert e.step_seconds == pytest.approx(max(r.to_host_bytes, r.to_device_bytes) / 1.0)


def test_bad_offload_input_names_the_fix():
    with pytest.raises(ShardvizError, match="host memory"):
        RuleSet("x", "x", host=("grads",))
    with pytest.raises(ShardvizError, match="published architecture"):
        sv.compare("mlp", ["act-offload"])
    with pytest.raises(ShardvizError, match="zero-offload"):
        sv.compare("mlp", ["zero-offlaod"])


def test_own_rule_set_with_params_on_host_runs_on_any_model():
    """A model with no layer scan has its host weights brought to HBM whole."""
    rs = dataclasses.replace(BUILTIN["zero3"], name="zero3-host", host=("params", "optimizer"))
    c = sv.compare("mlp", [rs])
    r = c.results[0]
    assert r.loss_matches
    assert r.memory.host_params == r.memory.params > 0
    assert len(jax.devices()) == 8


def test_a_gpu_topology_without_host_memory_says_so():
    """Deviceless H100 devices list no memories (jax 0.10.2): the optimizer state comes in
    as HBM arguments, only the new state goes to host, and the result's notes say so."""
    c = sv.compare("mlp", ["zero-offload"], target="h100:4")
    r = c.results[0]
    assert any("no pinned_host memory" in n for n in r.notes)
    assert r.memory.host_optimizer == 0 and r.to_device_bytes == 0
    assert r.memory.optimizer - 64 <= r.to_host_bytes <= r.memory.optimizer
