"""Exercises of notebook 09 (the Explorer: change a spec, watch the program change)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from shardviz.course.exercise import exercise
from shardviz.course.programs import mesh as course_mesh
from shardviz.model import ArrayLayout

#: The notebook's MLP (128 -> 512 -> 128, float32) with a batch of 64, on the 2 x 4 mesh.
D, H, BATCH = 128, 512, 64
#: 09.1: the element of params/w1 asked about, and the spec w1 is placed with.
ROW, COL = 40, 300
W1_SPEC = ("model", "data")


def _device_ids(answer: Any) -> frozenset[int]:
    """One device id, or a list/set/tuple of them."""

    def one(a: Any) -> int:
        if isinstance(a, bool) or not isinstance(a, int) or not 0 <= a < 8:
            raise ValueError(f"a device is a whole number from 0 to 7; got {a!r}")
        return int(a)

    if isinstance(answer, Iterable) and not isinstance(answer, str | bytes):
        ids = frozenset(one(a) for a in answer)
        if not ids:
            raise ValueError("name at least one device")
        return ids
    return frozenset({one(answer)})


def _ids_text(ids: Iterable[int]) -> str:
    return ", ".join(f"d{i}" for i in sorted(ids))


def _span(index: slice) -> str:
    return f"{index.start}:{index.stop}"


def _w1_layout() -> ArrayLayout:
    """params/w1 ([128, 512] float32) placed with P('model', 'data') on the 2 x 4 mesh: its
    tiles (laid out, nothing allocated)."""
    import jax
    import jax.numpy as jnp

    import shardviz as sv

    planned = sv.mark_sharding(
        jax.ShapeDtypeStruct((D, H), jnp.float32), course_mesh(), W1_SPEC, name="params/w1"
    )
    out = sv.layout(planned, name="params/w1")
    assert isinstance(out, ArrayLayout)
    return out


@exercise(
    "09.1",
    "which device holds an element",
    "if params/w1 ([128, 512]) is placed with P('model', 'data') on the 2 x 4 mesh, which "
    "device(s) hold its element at row 40, column 300? (a device id, or a list of ids)",
    wrong=(3, 2, [2, 6], [1, 5]),
)
def element_holder(answer: Any) -> tuple[bool, str, str]:
    named = _device_ids(answer)
    layout = _w1_layout()
    holders = frozenset(
        t.device_id
        for t in layout.tiles
        if t.index[0].start <= ROW < t.index[0].stop and t.index[1].start <= COL < t.index[1].stop
    )
    right = named == holders
    by_device = {t.device_id: t for t in layout.tiles}
    held = "; ".join(
        f"d{d} holds rows {_span(by_device[d].index[0])}, columns {_span(by_device[d].index[1])}"
        for d in sorted(named)
    )
    message = (
        f"shardviz laid w1 out with P('model', 'data'): {len(layout.distinct_tiles)} tiles of "
        f"{layout.shard_shape[0]} x {layout.shard_shape[1]}; {held}"
    )
    if right:
        message += f": the element ({ROW}, {COL}) is there and on no other device"
    hint = (
        "a spec's entries follow the array's dims: dim 0 (rows) is cut over 'model' into 4 "
        "bands and dim 1 (columns) over 'data' into 2. Find which band and which half hold "
        "the element; that gives a position along 'model' and one along 'data', and the "
        "device is the one at that place of the mesh (the mesh view, or mesh.devices)"
    )
    return right, message, hint


def _forward(spec: Any) -> Any:
    """The notebook's MLP forward pass, parameters replicated on the 2 x 4 mesh and the input
    x ([64, 128]) placed with ``spec``: compiled, run and checked against one device."""
    import jax

    import shardviz as sv
    from shardviz.strategies import mlp

    mesh = course_mesh()
    weights = mlp.init_params(jax.random.key(0), D, H)
    params = {k: sv.mark_sharding(v, mesh, (), name=k) for k, v in weights.items()}
    x = mlp.make_batch(jax.random.key(1), BATCH, D)["x"]
    placed = sv.mark_sharding(x, mesh, spec, name="x")
    return sv.explain(mlp.forward, params, placed, steps=1, diagnose=False)


@exercise(
    "09.2",
    "a forward pass with an empty ledger",
    "with the MLP's parameters replicated on the 2 x 4 mesh, write a spec for the input x "
    "([64, 128]) so that the forward pass mlp.forward has no collective at all and each of "
    "the 8 devices works on its own eighth of the batch (a PartitionSpec)",
    wrong=(("data", None), ("data", "model"), (None, ("data", "model")), ()),
)
def empty_ledger(answer: Any) -> tuple[bool, str, str]:
    report = _forward(answer)
    x = report.arguments["x"]
    pieces = len(x.distinct_tiles)
    ledger = [f"{c.kind} over {'/'.join(c.axes)}" for c in report.collectives]
    matches = report.check is not None and report.check.matches
    right = not ledger and pieces == 8 and matches
    message = (
        f"x placed as {x.spec_str}: "
        + (f"{pieces} different pieces" if pieces > 1 else "one piece, whole")
        + f" of {x.shard_shape[0]} x {x.shard_shape[1]}; the compiled forward pass has "
        + (f"{len(ledger)} collective(s): {', '.join(ledger)}" if ledger else "no collective")
        + ("; its output matches one device's" if matches else "")
    )
    if ledger:
        hint = (
            "a collective appears when a device needs what another holds. Which dimension "
            "of x can be cut so that every example's row stays whole on one device, and "
            "each device computes its own rows of the output from the whole weights?"
        )
    else:
        hint = (
            "the ledger is empty, but some devices hold the same piece of x and so repeat "
            "each other's work: which mesh axis does your spec leave out? One entry of a "
            "spec can name several axes (notebook 02)"
        )
    return right, message, hint
