"""Answers to notebook 06's exercises."""

from jax.sharding import PartitionSpec as P

SOLUTIONS = {
    "06.1": P("expert", None, None),
    "06.2": 143_360,
}

WHY = {
    "06.1": "Expert parallelism gives each device whole experts: only the first dimension "
    "(the experts) is cut, over 'expert' (4 devices), so each device holds 8 / 4 = 2 experts "
    "with all their rows and columns. 'data' is not named, so the two devices of each "
    "'expert' column hold the same two experts. Cutting d_ff instead, P(None, None, "
    "'expert'), takes the same memory but splits every expert across devices: that is "
    "tensor parallelism inside each expert, and every token would then need all four devices.",
    "06.2": "The 16 groups are cut over all 8 devices, so each device still dispatches 2 "
    "groups' slots for all 8 experts: [8, 2, 20, 128] float32 = 163,840 B, as on the 2 x 4 "
    "mesh. An all-to-all over n = 8 devices keeps 1/8 of it (the slots of its own expert) "
    "and sends 1/8 to each of the 7 others: 7/8 x 163,840 = 143,360 B. On the 2 x 4 mesh "
    "(n = 4) the same operand cost 3/4 of it, 122,880 B: a wider 'expert' axis sends a "
    "larger share of the same tokens.",
}
