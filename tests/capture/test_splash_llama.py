"""A Llama-style step with jax's splash attention (tests/fixtures/splash_llama.py) at its
small size, deviceless on TPU v5e: the same code benchmarks/kernels.py runs at Llama 3.1
8B's size on v6e-256. The compiled program's flops per device match the count by hand and
no kernel is left uncounted."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import shardviz as sv
from tests.fixtures import splash_llama


def test_splash_llama_step_counts_its_kernels() -> None:
    mesh = jax.sharding.Mesh(np.array(sv.topology("v5e:2x2").devices).reshape(-1), ("fsdp",))
    cfg = splash_llama.SMALL
    step, state, batch = splash_llama.make(cfg, mesh)
    report = sv.explain(step, state, batch, run=False)
    cost = report.cost
    hand = splash_llama.hand_flops(cfg)
    assert not cost.uncounted_kernels
    assert {k.name for k in cost.kernels} == {
        "splash_mha_fwd_residuals", "splash_mha_dkv_no_residuals"
    }  # fmt: skip
    fwd = next(k for k in cost.kernels if "fwd" in k.name)
    assert fwd.calls == 2 * cfg.n_layers  # the forward, and again under remat: loops counted
    assert cost.matmul_flops_per_device == pytest.approx(hand["hardware"], rel=0.05)
    assert cost.model_flops_per_device == pytest.approx(hand["model"], rel=0.01)
    # attention's model flops once and in full: the remat'd forward is recomputation
    kernel_model = sum(k.model_flops or 0 for k in cost.kernels)
    assert kernel_model == pytest.approx(hand["attention_model"], rel=0.01)
    assert report.estimate is None or "not counted" not in str(report.estimate)
