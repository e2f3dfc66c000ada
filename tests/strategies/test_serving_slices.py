"""sv.smallest_slice: the count by hand, the compile check on a deviceless TPU slice, and a
cache no slice holds."""

from __future__ import annotations

import importlib.util

import pytest

import shardviz as sv
from shardviz.errors import ShardvizError
from shardviz.strategies.serving.slices import slice_sizes

GiB = 1024**3
#: 16 layers of 8 KV heads of 128: 64 KiB of bf16 cache per token, small weights.
LONG = {"layers": 16, "d_model": 1024, "heads": 16, "kv_heads": 8, "head_dim": 128,
        "ffn": 2048, "vocab": 1024}  # fmt: skip


def test_v5e_slices_are_tried_by_powers_of_two_in_cloud_shapes():
    names = [n for n, _ in slice_sizes("v5e")]
    assert names[:5] == ["v5e:1x1", "v5e:2x1", "v5e:2x2", "v5e:2x4", "v5e:4x4"]
    assert names[-1] == "v5e:16x16"


def test_a_long_context_cache_needs_four_chips_and_the_compile_agrees():
    # 8 sequences x 65,536 tokens x 64 KiB = 32 GiB of cache: 2 chips hold 32 GiB, too
    # little beside the weights; 4 do, and the decode step compiled for v5e:2x2 fits
    s = sv.smallest_slice("llama3.1-70b", "v5e", batch=8, context=65536, **LONG)
    assert s.kv_bytes == 8 * 65536 * 2 * 16 * 8 * 128 * 2 == 32 * GiB
    assert (s.slice, s.chips) == ("v5e:2x2", 4)
    assert [t.fits for t in s.tried] == [False, False, True]
    assert "compiled for v5e:2x2" in s.checked and s.checked.endswith("fits")
    assert s.room_sequences == (4 * 16 * GiB - s.weight_bytes) // (65536 * 65536)


def test_a_cache_no_slice_holds_names_the_fix():
    with pytest.raises(ShardvizError, match="quantise.*smaller batch"):
        sv.smallest_slice("llama3.1-70b", "v5e", batch=4096, context=131072, check=False)


def test_an_unknown_chip_and_dtype_are_refused():
    with pytest.raises(ShardvizError):
        sv.smallest_slice("llama3.1-70b", "v9z", check=False)
    with pytest.raises(ShardvizError, match="not a serving dtype"):
        sv.smallest_slice("llama3.1-70b", "v5e", dtype="fp8", check=False)


def test_a_model_one_chip_holds_is_taken_on_the_count_when_jax_makes_no_such_slice():
    # jax makes no deviceless TPU slice smaller than one host (v5e:1x1 is refused): the
    # check says so instead of failing
    small = {**LONG, "layers": 2}
    s = sv.smallest_slice("llama3.1-70b", "v5e", batch=1, context=1024, **small)
    assert (s.slice, s.chips) == ("v5e:1x1", 1)
    assert "v5e:1x1 not compiled" in s.checked and "byte count alone" in s.checked


needs_cuda_plugin = pytest.mark.skipif(
    importlib.util.find_spec("jax_plugins.xla_cuda12") is None,
    reason="the CUDA plugin (shardviz[gpu]) compiles GPU slices without a GPU",
)


def test_h100_slices_are_one_hosts_gpus_by_powers_of_two():
    assert slice_sizes("h100") == [("h100:1x1", 1), ("h100:1x2", 2), ("h100:1x4", 4),
                                   ("h100:1x8", 8)]  # fmt: skip


@needs_cuda_plugin
def test_a_gpu_slice_is_checked_by_a_deviceless_cuda_compile():
    # 8 x 131,072 tokens x 64 KiB = 64 GiB of cache: one H100's 80 GiB holds it on the count,
    # and the decode step is compiled for it by the CUDA plugin without a GPU; whichever
    # slice the compiler's bytes fit, the words say what it compiled
    s = sv.smallest_slice("llama3.1-70b", "h100", batch=8, context=131072, **LONG)
    assert s.kv_bytes == 64 * GiB and s.tried[0].name == "h100:1x1" and s.tried[0].fits
    assert s.slice in ("h100:1x1", "h100:1x2", "h100:1x4")
    assert "decode step compiled for h100:1x1 (strategy 'tp')" in s.checked
    assert f"decode step compiled for {s.slice}" in s.checked and s.checked.endswith(": fits")
    assert "not compiled" not in s.checked


@needs_cuda_plugin
def test_int4_weights_and_cache_compile_for_a_gpu_slice():
    small = {**LONG, "layers": 2}
    s = sv.smallest_slice("llama3.1-70b", "h100", batch=1, context=1024, dtype="int4", **small)
    assert (s.slice, s.chips, s.weight_dtype, s.cache_dtype) == ("h100:1x1", 1, "int4", "int4")
    assert s.kv_bytes == 1024 * 2 * 2 * 8 * 128 // 2  # k and v, 2 layers, half a byte each
    assert "compiled for h100:1x1" in s.checked and s.checked.endswith(": fits")
    assert "(1 chip)" in str(s)


def test_a_gpu_check_without_the_cuda_plugin_names_the_extra_and_check_false(monkeypatch):
    from shardviz.capture import topology as topology_module

    real = importlib.util.find_spec

    def no_cuda(name: str, *args: object):
        return None if name == "jax_plugins.xla_cuda12" else real(name, *args)

    monkeypatch.setattr(topology_module, "_MADE", {})
    monkeypatch.setattr(importlib.util, "find_spec", no_cuda)
    small = {**LONG, "layers": 2}
    with pytest.raises(ShardvizError, match=r"shardviz\[gpu\].*check=False"):
        sv.smallest_slice("llama3.1-70b", "h100", batch=1, context=1024, **small)
    # without the check the count alone chooses
    s = sv.smallest_slice("llama3.1-70b", "h100", batch=1, context=1024, check=False, **small)
    assert (s.slice, s.checked) == ("h100:1x1", "")
