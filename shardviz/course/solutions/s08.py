"""Answers to notebook 08's exercises."""

SOLUTIONS = {"08.1": 4, "08.2": "data"}

WHY = {
    "08.1": "The ring model lays each group's ring out host by host, as NCCL does: it goes "
    "through both devices of host 0, steps to host 1, through its devices, and so on, and "
    "the last host's last device closes the ring back to host 0. That is one crossing per "
    "host: 4 of the 8 hops, so half of the all-reduce's bytes leave their host (on 2 hosts "
    "it was 2 of 8, a quarter). The device ids' order does not matter; the number of hosts "
    "the group spans does.",
    "08.2": "Tensor parallelism all-reduces activations, tokens x d_model of them, in every "
    "layer's attention and MLP, forward and backward; data parallelism all-reduces each "
    "gradient once per step. With 'model' spanning the hosts half of every activation "
    "all-reduce's ring crosses (its groups of 4 sit 2 on each host), about 2.2 MiB per "
    "device per step here; with 'data' spanning them only the gradient all-reduces cross "
    "(groups of 2, one device on each host), about 677 KiB. The activation traffic also sits "
    "on the critical path of every layer, while the gradient all-reduce can overlap the "
    "backward: so the data axis goes across hosts and the model axis within one.",
}
