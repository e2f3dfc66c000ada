"""``compare``'s per-(kind, axes) summary carries the ledger's cross-host bytes per step."""

from __future__ import annotations

from types import SimpleNamespace

from shardviz.model import Collective
from shardviz.strategies.runner import _summarise


def _coll(kind: str, axes: tuple[str, ...], moved: int, cross: int, trips: int | None = 1):
    return Collective(
        name="c", kind=kind, in_dtype="f32", in_shape=(8,), out_dtype="f32", out_shape=(8,),
        in_bytes=moved, out_bytes=moved, moved_bytes=moved, group_size=2,
        groups=((0, 4), (1, 5)), axes=axes, trips=trips, cross_host_bytes=cross,
        cross_host_groups=(0, 1) if cross else (),
    )  # fmt: skip


def test_summary_sums_cross_host_bytes_per_step() -> None:
    ledger = (
        _coll("all-gather", ("data",), 1000, 500, trips=3),  # in a loop run 3 times a step
        _coll("all-gather", ("data",), 100, 100),
        _coll("all-gather", ("model",), 700, 0),
        _coll("all-reduce", ("data",), 40, 40, trips=None),  # unknown trips count once
    )
    by = {(s.kind, s.axes): s for s in _summarise(SimpleNamespace(collectives=ledger))}
    assert by["all-gather", ("data",)].cross_host_bytes == 500 * 3 + 100
    assert by["all-gather", ("data",)].moved_bytes == 1000 * 3 + 100
    assert by["all-gather", ("model",)].cross_host_bytes == 0
    assert by["all-reduce", ("data",)].cross_host_bytes == 40
