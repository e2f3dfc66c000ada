"""Host memory traffic as plain data: the host <-> device transfers a compiled program makes,
and the offloads a program asked for. No jax."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from shardviz.model.collective import Source

Direction = Literal["to host", "to device"]
#: What a transfer is for: an ``argument`` kept in host memory brought to the device, an
#: ``output`` sent to host memory, or an ``offload`` (a value sent out and fetched back
#: within the step: a remat policy's saved activations).
Role = Literal["argument", "output", "offload"]


@dataclass(frozen=True)
class HostTransfer:
    """One copy between a device's memory (HBM) and host memory that the compiler scheduled.

    Per device: ``bytes`` moved each time it runs, ``runs`` per step (its loops' trips
    multiplied; a loop of unknown count taken as one trip, and ``lower_bound`` then true).
    ``value`` is what moves, as the HLO calls its shape (``f32[1,64,512]``); ``origin`` the
    op or argument it comes from, ``op_name`` jax's name for it and ``source`` the user's
    line. ``asynchronous``: a ``*-start``/``*-done`` pair, which overlaps the ops scheduled
    between them.
    """

    name: str
    op: str
    direction: Direction
    bytes: int
    runs: int = 1
    lower_bound: bool = False
    value: str = ""
    origin: str = ""
    op_name: str = ""
    source: Source | None = None
    asynchronous: bool = True
    computation: str = ""
    role: Role = "offload"

    @property
    def bytes_per_step(self) -> int:
        """Bytes it moves per step (per device)."""
        return self.bytes * self.runs

    @property
    def where(self) -> str:
        """``train.py:41`` (the user's line of the value), else jax's op name, else the op."""
        f = self.source.innermost if self.source is not None else None
        if f is not None:
            return f.place
        return self.op_name or self.name


@dataclass(frozen=True)
class OffloadRequest:
    """A value the program asked to keep in host memory (``jax.device_put`` to a host memory
    kind, or a remat policy's offload), as the module before the compiler's passes shows it:
    an ``annotate_device_placement`` custom call. ``happened``: the compiled program moves
    that value to host memory; ``reason`` says why not when it does not."""

    name: str
    value: str
    kind: str
    op_name: str = ""
    source: Source | None = None
    happened: bool = True
    reason: str = ""
    #: A program output placed in host memory (its sharding's memory kind), not an offload
    #: within the step.
    output: bool = False

    @property
    def where(self) -> str:
        """``train.py:41``, else jax's op name, else the value's name."""
        f = self.source.innermost if self.source is not None else None
        return f.place if f is not None else (self.op_name or self.name)
