"""Exercises of notebook 12 (serving a decoder: the KV cache, decode and prefill, what fits;
offload: the bytes a training step sends to host memory)."""

from __future__ import annotations

from functools import cache
from typing import Any

from shardviz.course.answers import byte_count, bytes_verdict, whole_number
from shardviz.course.exercise import exercise
from shardviz.model.compare import StrategyResult
from shardviz.model.serving import ServingResult
from shardviz.model.units import format_bytes

#: 12.1's published architecture and cache dtype.
KV_ARCH, KV_DTYPE = "qwen2.5-7b", "int8"
#: The notebook's model: Llama 3.1 8B cut to 4 layers and 4 KV heads (real widths).
ARCH, SIZES = "llama3.1-8b", dict(layers=4, kv_heads=4)
#: 12.2's decode: dp+tp on a v5e 2x4 slice (compiled deviceless), a 32k context, bf16
#: weights and an int8 cache.
SLICE, STRATEGY, CONTEXT, DTYPE, BATCH = "v5e:2x4", "dp+tp", 32768, ("bfloat16", "int8"), 16


@exercise(
    "12.1",
    "the KV cache per token of Qwen2.5 7B",
    "Qwen2.5 7B ('qwen2.5-7b' in the zoo) with its cache in int8: how many bytes of KV cache "
    "does one token take, over the whole model? (a number of bytes)",
    wrong=(200_704, 14_336, 57_344, 3_584),
)
def kv_per_token(answer: Any) -> tuple[bool, str, str]:
    from shardviz.strategies import get_model

    got = byte_count(answer)
    model = get_model(KV_ARCH)
    c = model.info["config"]
    truth = int(model.kv_bytes_per_token(KV_DTYPE))
    right = abs(got - truth) < 0.5
    context = (
        f"2 (a key and a value) x {c.layers} layers x {c.kv_heads} KV heads x {c.head_dim} "
        f"x 1 B (int8)"
    )
    message = bytes_verdict(
        got, right, truth, f"{KV_ARCH}.kv_bytes_per_token('int8')", context if right else ""
    )
    hint = (
        "read the dims from get_model('qwen2.5-7b').info['config']. Each layer keeps a key and "
        "a value per token for every KV head (grouped-query attention: fewer KV heads than "
        "query heads), each head_dim elements of the cache's dtype"
    )
    return right, message, hint


@cache
def _decode() -> ServingResult:
    """12.2's decode step, compiled for the slice (deviceless)."""
    import shardviz as sv
    from shardviz.strategies import get_model

    model = get_model(ARCH, **SIZES)
    return sv.compare(
        model, [STRATEGY], mode="decode", batch=BATCH, context=CONTEXT, dtype=DTYPE,
        target=SLICE,
    ).results[0]  # fmt: skip


@exercise(
    "12.2",
    "the largest decode batch that fits",
    "the notebook's model served with 'dp+tp' on the v5e 2x4 slice (8 chips of 16 GiB), "
    "weights in bfloat16 and the cache in int8, every sequence 32,768 tokens long: what is "
    "the largest batch (sequences decoded at once) whose weights, working memory and cache "
    "fit each chip? (a whole number of sequences)",
    wrong=(483, 1024, 120, 16),
)
def largest_batch(answer: Any) -> tuple[bool, str, str]:
    got = whole_number(answer, "a number of sequences", low=1)
    r = _decode()
    truth = r.max_batch
    if truth is None:  # a topology always knows its chips' HBM
        raise RuntimeError(f"no HBM size for {r.target}")
    data = r.axis_sizes["data"]
    right = abs(got - truth) <= max(data, 0.01 * truth)
    if right:
        per_seq = r.kv_bytes / r.batch
        message = (
            f"compiled for {r.target} (deviceless): each chip holds "
            f"{format_bytes(r.weight_bytes)} of weights (a quarter: tensor 4 ways), "
            f"{format_bytes(r.working_bytes or 0)} of working memory and "
            f"{format_bytes(per_seq)} of cache per sequence (keys and values, split over all "
            f"8 chips); {format_bytes(r.hbm_bytes)} of HBM holds {truth:,} sequences, a "
            f"multiple of the data axis ({data})"
        )
    else:
        message = (
            f"you said {got:,} sequences; the largest batch that fits each chip's HBM is "
            f"{'more' if truth > got else 'less'} than that"
        )
    hint = (
        "per chip: HBM less the weights and the working memory (the comparison's table shows "
        "both for dp+tp), over one sequence's share of the cache: kv_bytes_per_token in int8 "
        "x 32,768 tokens, split over how many chips? (the batch over 'data', the KV heads over "
        "'tensor')"
    )
    return right, message, hint


#: 12.3's training step: the tiny Llama of section 6 with 3 layers, a longer sequence and a
#: larger batch, under act-offload, compiled deviceless for a v5e 2x2 slice.
OFFLOAD_SLICE, OFFLOAD_STRATEGY = "v5e:2x2", "act-offload"
OFFLOAD_DIMS: dict[str, Any] = dict(
    layers=3, d_model=128, heads=4, kv_heads=2, head_dim=32, ffn=256, vocab=512, seq=256,
    batch=16,
)  # fmt: skip


@cache
def _act_offload() -> StrategyResult:
    """12.3's training step under act-offload, compiled for the slice (deviceless)."""
    import shardviz as sv

    return sv.compare(
        ARCH, [OFFLOAD_STRATEGY], target=OFFLOAD_SLICE, **OFFLOAD_DIMS
    ).results[0]  # fmt: skip


@exercise(
    "12.3",
    "the bytes activation offload sends to host",
    "the tiny Llama of section 6 with 3 layers, sequences of 256 tokens and a batch of 16, "
    "trained under 'act-offload' on the v5e 2x2 slice (4 chips, the batch split 4 ways): how "
    "many bytes does each chip send to host memory per training step? (a number of bytes)",
    wrong=(1_572_864, 3_145_728, 262_144, 6_291_456),
)
def act_offload_bytes(answer: Any) -> tuple[bool, str, str]:
    got = byte_count(answer)
    r = _act_offload()
    truth = r.to_host_bytes
    right = abs(got - truth) < 0.5
    d = OFFLOAD_DIMS
    context = (
        f"compiled for {r.target} (deviceless): {d['layers']} layers x (a batch of "
        f"{d['batch']} over 4 chips) x {d['seq']} tokens x d_model {d['d_model']} x 2 B "
        f"(bfloat16), the same bytes back to HBM for the backward pass"
    )
    message = bytes_verdict(got, right, truth, "the bytes each chip sends to host per step",
                            context if right else "")  # fmt: skip
    hint = (
        "the remat policy sends one value per decoder layer to host: the layer's input, "
        "[batch, seq, d_model] in the dtype the layers compute in (bfloat16, not the float32 "
        "master weights); each chip holds only its share of the batch"
    )
    return right, message, hint
