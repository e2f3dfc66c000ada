"""The hand-written pipelines compiled deviceless for a TPU slice and a GPU node: the ledger
counts each permute once per tick on every backend, and the compiler's own memory shows
1F1B below GPipe. Skipped only when an extra is not installed (``make test`` installs both)."""

from __future__ import annotations

import importlib.util
import os

os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")

import pytest  # noqa: E402

import shardviz as sv  # noqa: E402
from shardviz.strategies.zoo import get_model  # noqa: E402

HAS_TPU = importlib.util.find_spec("libtpu") is not None
HAS_GPU = importlib.util.find_spec("jax_plugins.xla_cuda12") is not None
S, M = 4, 8

TARGETS = [
    pytest.param("v5e:2x2", "tpu", marks=pytest.mark.skipif(not HAS_TPU, reason="no libtpu")),
    pytest.param("h100:1x4", "gpu", marks=pytest.mark.skipif(not HAS_GPU, reason="no CUDA plugin")),
]


@pytest.fixture(scope="module")
def model():
    return get_model("transformer", layers=4, batch=16)


@pytest.mark.parametrize(("target", "platform"), TARGETS)
def test_pipelines_compile_for_the_target_with_per_tick_permutes(model, target, platform):
    peaks = {}
    for kind in ("gpipe", "1f1b"):
        c = sv.compare(model, ["pp"], stages=S, microbatches=M, schedule=kind, target=target)
        (r,) = c.results
        assert r.report.platform == platform and r.loss is None  # compiled, not run
        s = r.schedule
        assert (s.kind, s.form) == (kind, "shard_map")
        perms = r.report.collectives_of("collective-permute")
        # Two permutes (forward, backward) in the tick loop, which runs schedule.length times:
        # read from the loop itself where the compiler does not annotate it (TPU).
        assert perms and all(p.trips == s.length for p in perms)
        (summary,) = [x for x in r.collectives if x.kind == "collective-permute"]
        assert summary.count == 2 * s.length
        peaks[kind] = r.report.memory.peak_bytes
    assert peaks["1f1b"] < peaks["gpipe"]
