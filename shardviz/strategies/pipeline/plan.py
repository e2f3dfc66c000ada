"""A schedule turned into per-tick tables a hand-written (shard_map) pipeline runs from.

Every stage runs the same program, one tick per time unit of the
:class:`~shardviz.model.schedule.Schedule`:
at tick ``t`` stage ``s`` looks up what to do (idle, the forward or the backward of one
microbatch) and which buffer slots to read and write. Three buffers per stage, each sized by
the most entries any stage holds at once:

- ``residuals``: what a forward keeps for its backward, from the forward's tick to the
  backward's. GPipe holds every microbatch's; 1F1B at most the stages after it, itself
  included. This is the pipeline's activation memory.
- ``activations``: a forward's output that reached the next stage, waiting for that stage's
  forward of the same microbatch.
- ``gradients``: the gradient a backward sends to the previous stage, waiting for that
  stage's backward; the last stage keeps here the loss gradient its forward computed.

Within a tick a stage reads its slots first and writes last, so a slot read at tick ``t`` can
take a new entry at the end of the same tick. Plain numpy; no jax.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from shardviz.model.schedule import Schedule

IDLE, FORWARD, BACKWARD = 0, 1, 2


@dataclass(frozen=True)
class Plan:
    """Per-tick tables, each ``[ticks, stages]`` of ints (``-1``: nothing).

    ``phase`` is :data:`IDLE`, :data:`FORWARD` or :data:`BACKWARD`; ``micro`` the
    microbatch; ``residual`` the slot a forward writes and its backward reads; ``act_read``
    the activation slot a forward reads (stages after the first), ``act_write`` the slot the
    activation arriving at the end of the tick goes to; ``grad_read`` the gradient slot a
    backward reads, ``grad_write`` the slot for the gradient arriving at the end of the tick
    (on the last stage: the loss gradient its forward made).
    """

    schedule: Schedule
    phase: np.ndarray
    micro: np.ndarray
    residual: np.ndarray
    act_read: np.ndarray
    act_write: np.ndarray
    grad_read: np.ndarray
    grad_write: np.ndarray
    residual_slots: int
    activation_slots: int
    gradient_slots: int

    @property
    def ticks(self) -> int:
        return int(self.phase.shape[0])


class _Slots:
    """Slot numbers for entries that live from one tick to a later one, lowest free first."""

    def __init__(self) -> None:
        self.free_at: list[int] = []  # per slot: the tick from which it can be reused

    def take(self, start: int, end: int) -> int:
        for i, free in enumerate(self.free_at):
            if free <= start:
                self.free_at[i] = end
                return i
        self.free_at.append(end)
        return len(self.free_at) - 1

    @property
    def size(self) -> int:
        return len(self.free_at)


def plan(schedule: Schedule) -> Plan:
    """The tables and buffer sizes that run ``schedule``."""
    S, T = schedule.stages, schedule.length
    at: dict[tuple[str, int, int], int] = {}  # (phase, microbatch, stage) -> tick
    tables = {k: np.full((T, S), -1, np.int32) for k in ("micro", "res", "ar", "aw", "gr", "gw")}
    phase = np.zeros((T, S), np.int32)
    for slot in schedule.slots:
        at[(slot.phase, slot.microbatch, slot.stage)] = slot.time
        phase[slot.time, slot.stage] = FORWARD if slot.phase == "F" else BACKWARD
        tables["micro"][slot.time, slot.stage] = slot.microbatch
    sizes = {"res": 0, "act": 0, "grad": 0}
    for s in range(S):
        res, act, grad = _Slots(), _Slots(), _Slots()
        # Each entry's life: (written at the end of tick a, read at tick b): allocated in
        # order of a, a slot reusable from the tick its last reader ran.
        lives: list[tuple[int, int, str, int]] = []
        for m in range(schedule.microbatches):
            f, b = at[("F", m, s)], at[("B", m, s)]
            lives.append((f, b, "res", m))
            if s > 0:
                lives.append((at[("F", m, s - 1)], f, "act", m))
            sent = at[("B", m, s + 1)] if s < S - 1 else f
            lives.append((sent, b, "grad", m))
        for written, read, kind, _ in sorted(lives):
            if kind == "res":
                i = res.take(written, read)
                tables["res"][written, s] = tables["res"][read, s] = i
            elif kind == "act":
                i = act.take(written, read)
                tables["aw"][written, s], tables["ar"][read, s] = i, i
            else:
                i = grad.take(written, read)
                tables["gw"][written, s], tables["gr"][read, s] = i, i
        sizes = {
            "res": max(sizes["res"], res.size),
            "act": max(sizes["act"], act.size),
            "grad": max(sizes["grad"], grad.size),
        }
    return Plan(
        schedule=schedule, phase=phase, micro=tables["micro"], residual=tables["res"],
        act_read=tables["ar"], act_write=tables["aw"], grad_read=tables["gr"],
        grad_write=tables["gw"], residual_slots=sizes["res"],
        activation_slots=sizes["act"], gradient_slots=sizes["grad"],
    )  # fmt: skip
