"""Exercises of notebook 04 (tensor parallelism, Megatron style)."""

from __future__ import annotations

from functools import cache
from typing import Any

from shardviz.course.answers import byte_count, bytes_verdict, specs_for
from shardviz.course.exercise import exercise
from shardviz.course.programs import mesh as course_mesh
from shardviz.model.units import format_bytes

#: A small attention block: d_model 64, 8 heads of 8, a batch of 8 sequences of 16 tokens.
D, HEADS, HEAD_DIM, B, T = 64, 8, 8, 8, 16
ATTN = ("wq", "wk", "wv", "wo")


def _attention(specs: dict[str, Any]) -> Any:
    """The zoo transformer's attention with its weights placed as ``specs`` and the input cut
    over 'data', compiled (not run): its report."""
    import jax
    from jax.sharding import PartitionSpec as P

    import shardviz as sv
    from shardviz.strategies import transformer

    keys = jax.random.split(jax.random.key(0), 5)
    shapes = {"wq": (D, HEADS, HEAD_DIM), "wk": (D, HEADS, HEAD_DIM), "wv": (D, HEADS, HEAD_DIM)}
    shapes["wo"] = (HEADS, HEAD_DIM, D)
    mesh = course_mesh()
    p = {
        n: sv.mark_sharding(jax.random.normal(k, shapes[n]), mesh, specs[n], name=n)
        for n, k in zip(ATTN, keys, strict=False)
    }
    x = sv.mark_sharding(jax.random.normal(keys[4], (B, T, D)), mesh, P("data", None, None))
    return sv.explain(transformer.attention, p, x, run=False)


@exercise(
    "04.1",
    "split attention by heads",
    "write one spec per attention weight (a dict {'wq': ..., 'wk': ..., 'wv': ..., 'wo': ...}; "
    "wq/wk/wv are [d_model, heads, head_dim], wo is [heads, head_dim, d_model]) that cuts each "
    "weight 4 ways over 'model' and leaves one collective in the forward pass",
    wrong=(
        {n: (None, None, "model") for n in ("wq", "wk", "wv")} | {"wo": (None, "model", None)},
        {n: (None, "model", None) for n in ("wq", "wk", "wv")} | {"wo": (None, None, "model")},
        {n: ("model", None, None) for n in ("wq", "wk", "wv")} | {"wo": (None, None, "model")},
        {n: () for n in ATTN},
    ),
)
def heads_split(answer: Any) -> tuple[bool, str, str]:
    report = _attention(specs_for(answer, ATTN))
    whole = [
        n
        for n in ATTN
        if report.arguments[f"p/{n}"].max_bytes_per_device * 4 != report.arguments[f"p/{n}"].nbytes
    ]
    ledger = [
        f"{c.kind} over {c.axes_label} of {c.in_dtype}{list(c.in_shape)}"
        for c in report.collectives
    ]
    one_reduce = len(ledger) == 1 and report.collectives[0].kind == "all-reduce"
    right = not whole and one_reduce and report.collectives[0].axes == ("model",)
    message = "the compiled forward has " + (
        f"{len(ledger)} collective(s): {'; '.join(ledger)}" if ledger else "no collective"
    )
    if whole:
        message += f"; not cut 4 ways: {', '.join(whole)}"
    hint = (
        "which dimension can be cut so that each device computes some heads completely, with "
        "no sum over devices until the output projection mixes the heads? Cut the same "
        "dimension in all four weights"
    )
    return right, message, hint


@cache
def _reversed_split() -> tuple[str, tuple[int, ...], int, int]:
    """The MLP forward with w1 cut by rows and w2 by columns over 'model' (the reverse of
    Megatron), x [64, 128] cut over 'data': its one collective's kind, shape, bytes in and
    bytes moved."""
    import jax
    from jax.sharding import PartitionSpec as P

    import shardviz as sv
    from shardviz.strategies import mlp

    mesh = course_mesh()
    specs = {"w1": P("model", None), "b1": P(), "w2": P(None, "model"), "b2": P("model")}
    weights = mlp.init_params(jax.random.key(0), 128, 512)
    params = {k: sv.mark_sharding(v, mesh, specs[k], name=k) for k, v in weights.items()}
    x = sv.mark_sharding(mlp.make_batch(jax.random.key(1), 64, 128)["x"], mesh, P("data", None))
    (c,) = sv.explain(mlp.forward, params, x, run=False).collectives
    return c.kind, c.in_shape, c.in_bytes, c.moved_bytes


@exercise(
    "04.2",
    "the bytes of the reversed split",
    "with w1 cut by rows and w2 by columns over 'model' (the reverse of Megatron), the forward "
    "has one all-reduce: how many bytes does each device put into it? (a number of bytes)",
    wrong=(16_384, 98_304, 262_144, 131_072),
)
def reversed_bytes(answer: Any) -> tuple[bool, str, str]:
    got = byte_count(answer)
    kind, _, in_bytes, moved = _reversed_split()
    right = got == in_bytes
    message = bytes_verdict(
        got, right, in_bytes, f"what each device puts into the forward's one {kind}",
        f"it moves {format_bytes(moved, exact=True)} per device in a ring",
    )  # fmt: skip
    hint = (
        "cutting w1 by rows cuts the contracting dimension of x @ w1: each device's product is "
        "a partial sum of the whole hidden activation. Which shape is that on one device "
        "(x is cut over 'data'), and how many float32 bytes?"
    )
    return right, message, hint
