"""Answers to notebook 10's exercises."""

from jax.sharding import PartitionSpec as P

SOLUTIONS = {
    "10.1": "idle-axis",
    "10.2": {"w1": P(None, "model"), "w2": P("model", None), "x": P("data", None)},
}

WHY = {
    "10.1": "No spec names 'data': the weights are whole everywhere and the batch is cut over "
    "'model' only. The two devices along 'data' (0 and 4, 1 and 5, ...) then hold the same "
    "quarter of the batch and the same weights, and compute the same thing: the program runs "
    "as if the mesh had 4 devices. That is an idle axis. It is not 'replicated': that kind "
    "flags one leaf left whole while its peers are split, and here no weight is split at all.",
    "10.2": "Cutting w1 by columns and w2 by rows over 'model' (Megatron's pair, notebook 04) "
    "stores a quarter of each weight per device. Each device computes a quarter of the "
    "hidden units for its rows, and the second matmul leaves partial sums of the [64, 128] "
    "output: one all-reduce over 'model', 24 KiB moved per device. The batch goes over "
    "'data', so that axis has work of its own and no finding is left. Cutting w2 by columns "
    "too makes the compiler gather the four times wider hidden activation instead (48 KiB); "
    "replicating the weights breaks the quarter rule; the batch over 'model' leaves 'data' "
    "idle again.",
}
