"""Exercises of notebook 08 (several hosts: which bytes cross the host boundary).

The judges run in one process: they compile on the 8 local devices and give each device a
made-up host (what ``device.process_index`` would say on a cluster), then split the ledger
with :func:`shardviz.model.hosts.with_host_split`, the same split a multi-process report
carries.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from shardviz.course.answers import whole_number
from shardviz.course.exercise import exercise
from shardviz.course.programs import data_parallel_step
from shardviz.model.units import format_bytes

#: 08.1: the notebook's data-parallel MLP step, its 8 devices on 4 hosts of 2.
HOSTS_1, PER_HOST_1 = 4, 2
#: 08.2: two hosts of 4 devices (devices 0-3 on host 0, 4-7 on host 1).
HOSTS_2 = {d: d // 4 for d in range(8)}
#: 08.2: the 2 x 4 ('data', 'model') mesh with each axis in turn spanning the hosts.
SPANNING = {
    "data": (0, 1, 2, 3, 4, 5, 6, 7),  # data lines {0, 4}...: one device on each host
    "model": (0, 1, 4, 5, 2, 3, 6, 7),  # model lines {0, 1, 4, 5}...: two on each host
}


@cache
def _dp_gradient_reduce() -> tuple[int, int, int]:
    """The notebook's data-parallel MLP step (256 -> 1024 -> 256, batch 64 over 'data' on 8
    devices), compiled: its largest all-reduce's bytes moved per device, its group size, and
    the bytes of it that cross hosts with devices on 4 hosts of 2."""
    from shardviz.model.hosts import with_host_split

    report = data_parallel_step(256, 1024)
    hosts = {d: d // PER_HOST_1 for d in range(8)}
    split = with_host_split(report.collectives_of("all-reduce"), hosts)
    biggest = max(split, key=lambda c: c.moved_bytes)
    return biggest.moved_bytes, biggest.group_size, biggest.cross_host_bytes


@exercise(
    "08.1",
    "ring hops that cross hosts",
    "the data-parallel step's gradient all-reduce joins all 8 devices; if they sat on 4 hosts "
    "of 2 devices each (0-1, 2-3, 4-5, 6-7), how many of its ring's 8 hops would cross from "
    "one host to another? (a whole number)",
    wrong=(2, 8, 1, 6),
)
def crossing_hops(answer: Any) -> tuple[bool, str, str]:
    said = whole_number(answer, "a number of hops", low=0, high=8)
    moved, n, crossing = _dp_gradient_reduce()
    hops = round(crossing * n / moved)
    right = said == hops
    head = (
        f"the compiled step's largest gradient all-reduce moves {format_bytes(moved, exact=True)}"
        f" per device over a ring of {n}"
    )
    if right:
        message = (
            f"{head}; with its devices on {HOSTS_1} hosts of {PER_HOST_1}, the ledger's split "
            f"sends {format_bytes(crossing, exact=True)} of that across hosts: {hops} of {n} hops"
        )
    else:
        share = format_bytes(moved * said // n, exact=True)
        message = (
            f"{head}; {said} of {n} hops crossing would send {share} across hosts, and the "
            f"ledger's split sends {'more' if crossing > moved * said // n else 'less'}"
        )
    hint = (
        "the ring is laid out host by host, as NCCL builds it: it visits all the devices of "
        "one host before it steps to the next host, and it closes back on the first one; "
        "count the steps between hosts"
    )
    return right, message, hint


@cache
def _crossing_per_step(spanning: str) -> tuple[int, int]:
    """The zoo transformer's Megatron step (2 layers, batch 16 x 64 tokens, batch over 'data'
    and heads and hidden units over 'model', Adam) on the 2 x 4 mesh with ``spanning`` across
    the two hosts, compiled: the bytes per device per step that cross hosts, and how many
    collectives carry them."""
    import shardviz as sv
    from shardviz.model.hosts import step_cross_bytes, with_host_split
    from shardviz.strategies import get_rule_set
    from shardviz.strategies.step import strategy_step
    from shardviz.strategies.zoo import get_model

    model = get_model("transformer", layers=2, batch=16)
    mesh = sv.Mesh(list(SPANNING[spanning]), (2, 4), ("data", "model"))
    built = strategy_step(model, get_rule_set("tp"), mesh)
    report = sv.explain(built.step, *built.abstract, run=False)
    crossing = [c for c in with_host_split(report.collectives, HOSTS_2) if c.cross_host_bytes]
    return sum(step_cross_bytes(c) for c in crossing), len(crossing)


def _axis(answer: Any) -> str:
    text = answer.strip().strip("'\"").lower() if isinstance(answer, str) else None
    if text not in SPANNING:
        raise ValueError(f"name one of the mesh's axes, data or model; got {answer!r}")
    return text


@exercise(
    "08.2",
    "which axis spans the hosts",
    "the zoo transformer (2 layers, a batch of 16 sequences of 64 tokens) trained "
    "with Megatron's tensor parallelism over a 'model' axis of 4 and its batch over a 'data' "
    "axis of 2, on 2 hosts of 4 devices: one axis has to span the two hosts; which one "
    "should, so that the fewest bytes per step cross between them? (an axis name)",
    wrong=("model",),
)
def spanning_axis(answer: Any) -> tuple[bool, str, str]:
    axis = _axis(answer)
    other = next(a for a in SPANNING if a != axis)
    mine, mine_count = _crossing_per_step(axis)
    theirs, _ = _crossing_per_step(other)
    right = mine < theirs
    message = (
        f"with {axis} spanning the hosts, {mine_count} collectives of the compiled step send "
        f"{format_bytes(mine)} per device per step across them; with {other} spanning them, "
        f"{format_bytes(theirs)}"
    )
    hint = (
        "compare what each axis's collectives carry per step: the tensor-parallel axis "
        "all-reduces activations (tokens x d_model) in every layer, forward and backward; the "
        "data-parallel axis all-reduces each gradient once per step"
    )
    return right, message, hint
