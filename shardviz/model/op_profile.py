"""An op profile of one step, as XProf shows one: time, flops and bytes by op, by layer and by
module (attention, MLP, experts, embedding, loss, optimizer, norm, other), predicted from the
compiled schedule and, when a profile of a real run was read, measured beside it.

Plain data: :func:`shardviz.op_profile` fills it (the grouping is
:mod:`shardviz.analysis.op_profile`), :mod:`shardviz.render.op_profile` draws it.
"""

from __future__ import annotations

from dataclasses import dataclass

from shardviz.model import display
from shardviz.model._codec import JsonMixin

__all__ = ["MODULES", "OTHER", "MeasuredOp", "OpProfile", "ProfileGroup", "ProfiledOp"]

#: The modules an op is put in, in the order the views list them; ``other`` is never hidden.
MODULES = ("attention", "mlp", "experts", "embedding", "norm", "loss", "optimizer", "other")
OTHER = "other"


@dataclass(frozen=True)
class MeasuredOp:
    """One HLO op as a profiled run timed it: seconds per step on one device (all its runs in
    a step added, averaged over the steps and devices traced) and its runs per step."""

    name: str
    seconds: float
    runs: float


@dataclass(frozen=True)
class ProfiledOp:
    """One op of the step: where it belongs and what it costs per step on one device.

    ``seconds``: predicted time per step (its runs included; for a collective or an async
    copy, the part no op hides: the step waits for that); ``None`` without a target.
    ``measured_seconds``: from the profile read (``None``: not profiled, or not in it).
    ``predicted``: whether the compiled schedule lists it (a measured op it does not list,
    e.g. a loop's own thunk or a collective's done half, is ``False`` and has no prediction).
    """

    name: str
    opcode: str
    module: str
    layer: str
    runs: int
    flops: float
    hbm_bytes: float
    seconds: float | None
    measured_seconds: float | None = None
    op_name: str = ""
    predicted: bool = True


@dataclass(frozen=True)
class ProfileGroup:
    """The ops of one module or one layer added up, per step on one device. ``runs``: the
    most runs per step of any of its ops (a scanned layer's trips)."""

    name: str
    ops: int
    flops: float
    hbm_bytes: float
    seconds: float | None
    measured_seconds: float | None = None
    runs: int = 1


@dataclass(frozen=True, repr=False)  # one line: see display.Shown._repr_pretty_
class OpProfile(JsonMixin, display.Shown):
    """The step's op profile on one device: every op, and the ops by module and by layer.

    The groups add up to the totals: ``seconds`` is the predicted step (the ops one after
    another plus the ``exposed_seconds`` of communication and copies nothing hides), ``flops``
    and ``hbm_bytes`` the schedule's matmul flops and HBM bytes per step. ``measured_seconds``
    is the profiled ops' time per step (``None``: no profile read); ``unmatched`` names the
    measured ops the schedule does not list (in ``other``). ``notes`` say what was assumed.
    """

    function: str
    target: str
    ops: tuple[ProfiledOp, ...]
    modules: tuple[ProfileGroup, ...]
    layers: tuple[ProfileGroup, ...]
    seconds: float | None
    exposed_seconds: float | None
    flops: float
    hbm_bytes: float
    measured_seconds: float | None = None
    unmatched: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def measured(self) -> bool:
        """Whether a profile of a real run was read."""
        return self.measured_seconds is not None

    def module(self, name: str) -> ProfileGroup | None:
        """The group of module ``name`` (``None``: no op of the step is in it)."""
        return next((g for g in self.modules if g.name == name), None)
