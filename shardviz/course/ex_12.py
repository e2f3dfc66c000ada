"""Exercises of notebook 12 (serving a decoder: the KV cache, decode and prefill, what fits)."""

from __future__ import annotations

from functools import cache
from typing import Any

from shardviz.course.answers import byte_count, bytes_verdict, whole_number
from shardviz.course.exercise import exercise
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
