"""Answers to notebook 01's exercises."""

SOLUTIONS = {"01.1": 3_678_983}

WHY = {
    "01.1": "The gradients have the parameters' size: 256x1024 + 1024 + 1024x256 + 256 = "
    "525,568 float32 values, 2,102,272 B, plus the loss's 4 B that the compiler all-reduces "
    "with them: 2,102,276 B in. A ring all-reduce over n = 8 devices is a reduce-scatter then "
    "an all-gather, each sending (n-1)/n of the data: 2 x 2,102,276 x 7/8 = 3,678,983 B per "
    "device.",
}
