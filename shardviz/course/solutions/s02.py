"""Answers to notebook 02's exercises."""

from jax.sharding import PartitionSpec as P

SOLUTIONS = {"02.1": P(None, ("data", "model")), "02.2": 64 * 2**20}

WHY = {
    "02.1": "Rows stay whole, so the first entry is None. The columns are cut over both axes, "
    "2 x 4 = 8 pieces of 2 columns, so the second entry is a tuple of axes. In a tuple the "
    "first axis is the slow one: ('data', 'model') hands out pieces 0-3 along 'model' for "
    "data=0 (devices 0-3), then 4-7 for data=1 (devices 4-7), which is device order. "
    "('model', 'data') would give device 1 the pieces of columns 8:10.",
    "02.2": "The array is 4096 x 8192 x 4 B = 128 MiB. P('data', None) cuts dim 0 in 2 over "
    "'data' and names no other axis, so the four devices along 'model' hold copies: each "
    "device holds half the array, 2048 x 8192 x 4 B = 64 MiB (67,108,864 B). Cutting over "
    "all eight devices would need the spec to name 'model' too.",
}
