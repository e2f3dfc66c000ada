"""Answers to notebook 09's exercises."""

from jax.sharding import PartitionSpec as P

SOLUTIONS = {"09.1": 5, "09.2": P(("data", "model"), None)}

WHY = {
    "09.1": "P('model', 'data') cuts dim 0, the 128 rows, over 'model' into 4 bands of 32, and "
    "dim 1, the 512 columns, over 'data' into 2 halves of 256. Row 40 is in band 1 (rows "
    "32:64), so the tile sits at position 1 along 'model'; column 300 is in half 1 (columns "
    "256:512), position 1 along 'data'. On the 2 x 4 mesh the device at data=1, model=1 is "
    "device 5 (devices 4-7 form the second 'data' row). Every axis of the mesh is used, so "
    "no other device holds a copy. Numbering the tiles in the array's reading order instead "
    "gives 3, which is wrong: the mesh, not the array, decides which device a piece goes to.",
    "09.2": "The forward pass needs no communication when every device holds whole rows of "
    "x and the whole weights: each example's output row depends only on its own input row. "
    "Cutting the batch over 'data' alone leaves the 4 devices of each 'data' row with the "
    "same half of the batch, so they repeat each other's work; naming both axes in dim 0's "
    "entry gives 8 different pieces of 8 rows. P(('model', 'data'), None) is just as right "
    "(the same pieces, handed out in another device order). Cutting dim 1, the features, "
    "splits the first matmul's sum, and the compiler must then gather or add the pieces.",
}
