"""Exercises of notebook 02 (the SPMD vocabulary: meshes, partition specs, tiles)."""

from __future__ import annotations

from typing import Any

from shardviz.course.answers import byte_count, bytes_verdict
from shardviz.course.exercise import exercise
from shardviz.course.programs import mesh as course_mesh
from shardviz.model import ArrayLayout
from shardviz.model.units import format_bytes

#: The notebook's small matrix: 8 x 16 float32, on a 2 x 4 mesh ('data', 'model').
ROWS, COLS = 8, 16


def _laid_out(obj: Any, name: str) -> ArrayLayout:
    """``sv.layout`` of an array (never a mesh), typed as such."""
    import shardviz as sv

    out = sv.layout(obj, name=name)
    assert isinstance(out, ArrayLayout)
    return out


@exercise(
    "02.1",
    "cut the columns eight ways, in device order",
    "write a partition spec for the 8 x 16 matrix x on the 2 x 4 mesh so that device d holds "
    "all 8 rows and columns 2d to 2d+1 (a PartitionSpec)",
    wrong=(
        ("data", "model"),
        (None, "model"),
        (None, ("model", "data")),
        (("data", "model"), None),
    ),
)
def columns_in_device_order(answer: Any) -> tuple[bool, str, str]:
    import jax.numpy as jnp

    import shardviz as sv

    x = jnp.arange(ROWS * COLS, dtype=jnp.float32).reshape(ROWS, COLS)
    layout = _laid_out(sv.mark_sharding(x, course_mesh(), answer, name="x"), "x")
    held = {t.device_id: (t.index[0].indices(ROWS), t.index[1].indices(COLS)) for t in layout.tiles}
    want = {d: ((0, ROWS, 1), (2 * d, 2 * d + 2, 1)) for d in range(8)}
    right = held == want
    d1 = held[1]
    message = (
        f"with this spec each device holds a tile of {layout.shard_shape[0]} x "
        f"{layout.shard_shape[1]}; device 1 holds rows {d1[0][0]}:{d1[0][1]}, "
        f"columns {d1[1][0]}:{d1[1][1]}"
    )
    if layout.shard_shape != (ROWS, 2):
        hint = (
            "the rows stay whole (None) and the columns are cut into 8 pieces: how can one "
            "entry of a spec use both mesh axes, 2 x 4 = 8 ways?"
        )
    else:
        hint = (
            "the pieces are right but go to the wrong devices: in a tuple of axes the first "
            "is the slow one. Which order walks 'model' fastest, as device ids 0, 1, 2, 3 do?"
        )
    return right, message, hint


@exercise(
    "02.2",
    "bytes per device of a partially tiled array",
    "how many bytes does each device hold of a float32 [4096, 8192] array placed with "
    "P('data', None) on the 2 x 4 mesh? (a number of bytes)",
    wrong=(16 * 2**20, 128 * 2**20, 32 * 2**20),
)
def partial_bytes(answer: Any) -> tuple[bool, str, str]:
    import jax
    import jax.numpy as jnp
    from jax.sharding import PartitionSpec as P

    import shardviz as sv

    got = byte_count(answer)
    planned = sv.mark_sharding(
        jax.ShapeDtypeStruct((4096, 8192), jnp.float32), course_mesh(), P("data", None)
    )
    layout = _laid_out(planned, "the [4096, 8192] array")
    per_device = layout.max_bytes_per_device
    right = got == per_device
    message = bytes_verdict(
        got, right, per_device, "what each device holds (laid out without allocating it)",
        f"the whole array is {format_bytes(layout.nbytes)}",
    )  # fmt: skip
    hint = (
        "count the pieces: the spec cuts dim 0 over 'data' only; the mesh axis it does not "
        "name holds copies, so how many different tiles are there, and how big is each?"
    )
    return right, message, hint
