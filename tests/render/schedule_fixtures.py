"""Hand-built pipeline :class:`~shardviz.model.schedule.Schedule` objects for the schedule views'
tests. Nothing here imports jax.

- :func:`wide`: 1F1B over 4 stages and 64 microbatches with a measured bubble but no slots
  timed (134 time units: elided in text, scaled in HTML).
- :func:`profiled`: 1F1B over 2 stages and 3 microbatches written with ``shard_map``,
  checkpointed, :data:`KEPT` bytes kept per microbatch in flight, and every slot timed on
  ``platform``: a slot at time ``t`` starts at ``t`` ms (plus :data:`T0`) and runs 0.6 ms
  (forward) or 0.9 ms (backward).
"""

from __future__ import annotations

import dataclasses

from shardviz.model.schedule import MeasuredSlot, Schedule, one_f_one_b

#: Bytes a stage keeps per microbatch in flight in :func:`profiled` (3.1 MiB).
KEPT = 3_250_000
#: Where the profiled step's first slot starts (seconds after some earlier op).
T0 = 0.25
MS = 1e-3
#: The measured bubble of :func:`profiled` (not computed from its slots: a given figure).
MEASURED_BUBBLE = 0.375


def wide() -> Schedule:
    """1F1B over 4 stages and 64 microbatches, profiled: 134 time units, elided in text."""
    return dataclasses.replace(one_f_one_b(4, 64), measured_bubble=0.0712)


def measured_slots(s: Schedule) -> tuple[MeasuredSlot, ...]:
    """Every slot of ``s`` timed: start ``T0 + t`` ms, 0.6 ms forward, 0.9 ms backward."""
    return tuple(
        MeasuredSlot(
            stage=x.stage,
            microbatch=x.microbatch,
            phase=x.phase,
            start=T0 + x.time * MS,
            seconds=(0.6 if x.phase == "F" else 0.9) * MS,
        )
        for x in s.slots
    )


def profiled(platform: str = "cpu") -> Schedule:
    """1F1B, 2 stages x 3 microbatches, shard_map, checkpointed, timed on ``platform``."""
    s = one_f_one_b(2, 3)
    return dataclasses.replace(
        s,
        form="shard_map",
        checkpoint=True,
        residual_bytes=KEPT,
        measured=measured_slots(s),
        measured_platform=platform,
        measured_bubble=MEASURED_BUBBLE,
    )
