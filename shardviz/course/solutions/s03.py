"""Answers to notebook 03's exercises."""

from jax.sharding import PartitionSpec as P

SOLUTIONS = {
    "03.1": {"w1": P("data", None), "b1": P("data"), "w2": P("data", None), "b2": P("data")},
    "03.2": 460_992,
}

WHY = {
    "03.1": "ZeRO-3 (FSDP) stores every parameter cut over the data-parallel axis, so each "
    "leaf needs one dimension split 8 ways: here the first (128, 512, 512 and 128 all divide "
    "by 8; cutting w1 by columns, P(None, 'data'), is just as right). Each device then stores "
    "526,848 / 8 = 65,856 B, and the compiler all-gathers the weights before the matmuls "
    "that use them. Forgetting the biases leaves them replicated: not an eighth.",
    "03.2": "The all-gathers hand every device the whole parameters, 526,848 B, starting from "
    "its own eighth. In a ring each device receives the 7 eighths it lacks, one per step: "
    "7/8 x 526,848 = 460,992 B. That is half of what an all-reduce of the same buffer moves "
    "(2 x 7/8), because nothing has to be added on the way.",
}
