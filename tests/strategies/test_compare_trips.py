"""``compare(..., target="v5e")`` on the CPU devices counts each collective as often as its
loops run it, as ``explain`` does (issue 41: a scanned model's estimate counted every
collective in a layer loop once, and said so in a note)."""

from __future__ import annotations

import pytest

import shardviz as sv

#: A scanned Llama of 3 layers, as small as compiles in seconds.
DIMS = {"layers": 3, "d_model": 64, "heads": 2, "kv_heads": 1, "head_dim": 32,
        "ffn": 128, "vocab": 256, "seq": 32, "batch": 8}  # fmt: skip


def test_a_cpu_preview_estimates_each_collective_times_its_loops_runs() -> None:
    c = sv.compare("llama3.1-8b", ["fsdp"], target="v5e", steps=1, **DIMS)
    r = c.results[0].report
    e = r.estimate
    assert e is not None
    looped = [x for x in r.collectives if (x.trips or 1) > 1]
    assert looped, "the scanned layers' collectives run once per layer"
    want = sum((x.estimated_seconds or 0.0) * (x.trips or 1) for x in r.collectives)
    assert e.collective_seconds == pytest.approx(want)
    assert not any("counted once" in n for n in e.notes)
