"""The chunked loss gathers its output table once a step, and (on TPU and GPU) reduces its
gradient once a step: left to the partitioner, a step whose gradients are FSDP-sharded did
both once per loss chunk (a reduced Gemma 3 on v6e:4x4: four all-reduces of the whole 2 GB
table)."""

from __future__ import annotations

import importlib.util

import jax
import pytest

import shardviz as sv
from shardviz.capture import hlo
from shardviz.strategies.models import logical_rule_set, make_mesh
from shardviz.strategies.step import strategy_step
from shardviz.strategies.zoo import get_model

from .small import small

#: Gemma 3 reduced (tied embeddings: one table read by the lookup and by the loss), its 64
#: positions in 4 loss chunks.
NAME = "gemma3-27b"
CHUNKS = 4
#: The extras for the deviceless compiles (``make test`` installs both).
HAS_TPU = importlib.util.find_spec("libtpu") is not None
HAS_GPU = importlib.util.find_spec("jax_plugins.xla_cuda12") is not None


def _table_collectives(devices) -> list[tuple[str, int]]:
    """(kind, runs per step) of each collective of the table the loss reads, in the FSDP
    train step compiled for ``devices``."""
    # Blockwise attention: the reduced sizes' 16-blocks are below what the TPU kernels take.
    sizes = small(NAME, loss_chunk=small(NAME)["seq"] // CHUNKS, attention="blockwise")
    model = get_model(NAME, **sizes)
    built = strategy_step(model, logical_rule_set("fsdp", model), make_mesh("fsdp", devices))
    module = hlo.parse_hlo_module(built.step.lower(*built.abstract).compile().as_text())
    trips = hlo.collective_trip_counts(module)
    v, d = sizes["vocab"], sizes["d_model"]
    return [
        (c.kind, trips.get(c.hlo_name, 1))
        for c in hlo.collectives(module)
        if {tuple(c.in_shape), tuple(c.out_shape)} & {(v, d), (d, v)}  # the whole table
    ]


def test_the_table_is_gathered_once_a_step_on_cpu() -> None:
    """XLA:CPU keeps the gradient's all-reduce in the loop (it has no pass that moves an
    all-reduce out of a loop), but the table's gather leaves it."""
    found = _table_collectives(jax.devices()[:8])
    assert ("all-reduce", CHUNKS) in found  # the CPU's own: the one this test cannot change
    assert [n for kind, n in found if kind == "all-gather"] == [1]


@pytest.mark.parametrize(
    "target",
    [
        pytest.param("v5e:2x4", marks=pytest.mark.skipif(not HAS_TPU, reason="no libtpu")),
        pytest.param("h100:1x8", marks=pytest.mark.skipif(not HAS_GPU, reason="no CUDA plugin")),
    ],
)
def test_the_table_is_gathered_and_its_gradient_reduced_once_a_step_deviceless(target) -> None:
    """On TPU (v5e) and GPU (H100), compiled deviceless: the table's gather and its
    gradient's reduction each once a step (TPU before the pin: each 4 times)."""
    found = _table_collectives(sv.topology(target).devices)
    assert found, "the table's collectives were not found"
    assert all(n == 1 for _, n in found), found
