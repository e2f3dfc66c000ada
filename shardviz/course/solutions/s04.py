"""Answers to notebook 04's exercises."""

from jax.sharding import PartitionSpec as P

SOLUTIONS = {
    "04.1": {
        "wq": P(None, "model", None),
        "wk": P(None, "model", None),
        "wv": P(None, "model", None),
        "wo": P("model", None, None),
    },
    "04.2": 65_536,
}

WHY = {
    "04.1": "Heads are independent until the output projection: cut the heads dimension of "
    "wq, wk and wv (their second) and of wo (its first) over 'model', and each device "
    "computes its 2 heads' queries, keys, values, scores and outputs with no communication. "
    "Its slice of wo then gives a partial sum of the output, and one all-reduce over 'model' "
    "adds the four. Cutting head_dim instead makes the scores q.k a partial sum too (a second "
    "all-reduce); cutting wo by its output columns makes the compiler all-gather instead.",
    "04.2": "w1 cut by rows cuts the contracting dimension of x @ w1, so each device's product "
    "is a partial sum of the whole hidden activation h: [32, 512] on each device (64 rows cut "
    "over 'data'), 32 x 512 x 4 B = 65,536 B. It must be summed before relu, so the "
    "all-reduce carries the wide activation: four times Megatron's [32, 128] (16,384 B). "
    "Communicate at the narrow point of the block.",
}
