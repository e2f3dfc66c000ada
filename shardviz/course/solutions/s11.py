"""Answers to notebook 11's exercises."""

SOLUTIONS = {"11.1": 4_371_045_620, "11.2": "zero3"}

WHY = {
    "11.1": "ZeRO-2 cuts the gradients and the optimizer state over the data-parallel chips "
    "and keeps the parameters whole on each. With N = 1,080,103,936 float32 parameters, a "
    "chip holds 4N = 4,320,415,744 B of weights, 4N / 256 = 16,876,624 B of gradients, "
    "8N / 256 = 33,753,248 B of Adam's moments and Adam's 4 B step counter (an int32, whole "
    "on every chip): 4,371,045,620 B, about 4.1 GiB. model_state_bytes(N, zero_stage=2, "
    "data_parallel=256, param_bytes=4, grad_bytes=4, optimizer_bytes=8) gives the same less "
    "the counter, 4,371,045,616 B; its default counts mixed precision (2 + 2 + 12 B per "
    "parameter), another model than the notebook's.",
    "11.2": "On paper ZeRO-2 fits: 4P of weights plus 12P / 8 of gradients and moments is "
    "about 11 GiB per chip for P = 2.15e9. But with the weights whole, each chip computes "
    "the gradient of every weight for its own examples, a full-size 8.6 GB buffer, before "
    "the reduction leaves it its slice. Next to the 8.6 GB of weights that is too much, and "
    "the TPU compiler refuses the step (about 18 GB needed); ZeRO-1 and plain data "
    "parallelism need more still. ZeRO-3 (FSDP) stores the weights cut too, and here the "
    "compiler never gathers them: it moves the small batch instead (the route notebook 03 "
    "showed), so each chip computes only its own slice of every gradient and the step fits "
    "in about 3.3 GiB. The state table is a lower bound; only the compile says what the step "
    "needs.",
}
