"""A deviceless plan donates the state, as a training loop does; a run here does not."""

from __future__ import annotations

import jax

import shardviz as sv
from shardviz.strategies.rules import BUILTIN, OFFLOAD
from shardviz.strategies.step import strategy_step
from shardviz.strategies.zoo import get_model
from tests.capture.test_backends_live import needs_tpu


def _state_bytes(result) -> int:
    return result.memory.params + result.memory.optimizer


def test_a_deviceless_plan_aliases_the_new_state_to_the_old():
    """On a deviceless H100 the new params and optimizer state take the old ones' buffers:
    the compiler's alias bytes are the state's per-device bytes (layout padding aside)."""
    r = sv.compare("mlp", ["fsdp"], target="h100:4").results[0]
    assert r.report.deviceless
    state = _state_bytes(r)
    assert state > 0
    assert state <= r.memory.alias <= state + 1024


def test_a_run_here_donates_nothing():
    r = sv.compare("mlp", ["fsdp"]).results[0]
    assert r.memory.alias == 0


def test_donation_lowers_the_deviceless_peak():
    devices = sv.topology("h100:4").devices
    model = get_model("mlp")
    peaks = {}
    for donate in (False, True):
        built = strategy_step(model, BUILTIN["fsdp"], devices=devices, donate=donate)
        mem = built.step.lower(*built.abstract).compile().memory_analysis()
        peaks[donate] = (
            mem.argument_size_in_bytes
            + mem.output_size_in_bytes
            - (mem.alias_size_in_bytes)
            + mem.temp_size_in_bytes
        )
    assert peaks[True] < peaks[False]
    assert len(jax.devices()) == 8


def test_state_kept_on_host_is_not_donated_without_host_memory():
    """A deviceless H100 lists no host memory (jax 0.10.2): ZeRO-Offload's optimizer state
    stays in HBM and the step writes its new value out, so only the params are donated."""
    devices = sv.topology("h100:4").devices
    built = strategy_step(get_model("mlp"), OFFLOAD["zero-offload"], devices=devices)
    infos = built.step.lower(*built.abstract).args_info
    params, opt_state = infos[0][0], infos[0][1]
    assert all(i.donated for i in jax.tree.leaves(params))
    assert not any(i.donated for i in jax.tree.leaves(opt_state))


@needs_tpu
def test_state_kept_on_host_is_donated_where_the_chips_have_host_memory():
    """On a TPU slice the new optimizer state takes the old one's host buffers: the plan
    keeps it on host once, not twice."""
    devices = sv.topology("v5e:2x2").devices
    built = strategy_step(get_model("mlp"), OFFLOAD["zero-offload"], devices=devices)
    infos = built.step.lower(*built.abstract).args_info
    params, opt_state, batch = infos[0]
    assert all(i.donated for i in jax.tree.leaves((params, opt_state)))
    assert not any(i.donated for i in jax.tree.leaves(batch))
