"""Answers to notebook 01's exercises."""

SOLUTIONS = {"01.1": "all-reduce", "01.2": 3_678_983}

WHY = {
    "01.1": "Each device holds all the parameters and an eighth of the batch, so it computes "
    "the loss and the gradients of its own 8 examples: partial sums of the true gradient. "
    "To take the same step everywhere, every device needs the sum of all eight, on every "
    "device: that is an all-reduce over 'data' (an all-gather would collect the pieces "
    "without adding them; a reduce-scatter would leave each device only a slice of the sum).",
    "01.2": "The gradients have the parameters' size: 256x1024 + 1024 + 1024x256 + 256 = "
    "525,568 float32 values, 2,102,272 B, plus the loss's 4 B that the compiler all-reduces "
    "with them: 2,102,276 B in. A ring all-reduce over n = 8 devices is a reduce-scatter then "
    "an all-gather, each sending (n-1)/n of the data: 2 x 2,102,276 x 7/8 = 3,678,983 B per "
    "device. Leaving out the loss's 4 B (3,678,976 B) is just as right: the check accepts "
    "answers within 1%.",
}
