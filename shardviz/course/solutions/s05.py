"""Answers to notebook 05's exercises."""

from jax.sharding import PartitionSpec as P

SOLUTIONS = {
    "05.1": (8, 8),
    "05.2": {
        "w1": P("data", "model"),
        "b1": P("model"),
        "w2": P("model", "data"),
        "b2": P(),
    },
}

WHY = {
    "05.1": "Without ZeRO the 'data' axis holds copies and only tensor parallelism divides the "
    "state: 16 B x 7e9 = 112e9 B over 'model'. With model = 4 that is 28e9 B (26 GiB), too "
    "much; with model = 8 it is 14e9 B (13 GiB), which fits, so the mesh is 8 x 8. Larger "
    "'model' sizes fit too but all-reduce activations over more devices every layer, and 8 "
    "is as far as the fast links inside one host usually reach.",
    "05.2": "Megatron's pair over 'model' is w1 by columns and w2 by rows; the other "
    "dimension of each, left whole in Megatron, is cut over 'data' as FSDP does: "
    "w1 P('data', 'model'), w2 P('model', 'data'), an eighth of each per device. In the "
    "forward the compiler all-gathers each weight over 'data' (2 devices) before its "
    "matmul, and the second matmul's partial sums take Megatron's one all-reduce over "
    "'model'. The biases follow the hidden units (b1 over 'model') or stay replicated.",
}
