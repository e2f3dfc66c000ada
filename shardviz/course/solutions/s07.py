"""Answers to notebook 07's exercises."""

SOLUTIONS = {"07.1": 17, "07.2": 64}

WHY = {
    "07.1": "Each trip of GSPMD's loop runs every stage once and then shifts the state buffer "
    "one stage on: that shift is the collective-permute. The first microbatch enters stage 0 "
    "on trip 1 and reaches the last stage S - 1 trips later; each of the M - 1 microbatches "
    "behind it leaves the last stage one trip after the one before. So the loop runs "
    "M + S - 1 = 16 + 2 - 1 = 17 times per step, and the permute with it, whatever the model's "
    "sizes. Only S - 1 of those trips are fill (the drain is the same in reverse), which is "
    "why the bubble shrinks as M grows.",
    "07.2": "The idle share is (S - 1) / (M + S - 1) = 7 / (M + 7) for 8 stages. At most 10% "
    "means M + 7 >= 70, so M >= 63; 63 does not divide 256, and the next number that does is "
    "64 (7 / 71, 9.9%). The rule of thumb M = 4S = 32 leaves 7 / 39 = 17.9% idle on a deep "
    "pipeline. GPipe and 1F1B have the same bubble, so the schedule does not change the "
    "answer; 128 would halve the bubble again but make every microbatch's matmuls half as "
    "big, which is why the smallest M that meets the bound is the one to take.",
}
