"""A collective the compiler inserted, and the source lines it came from: plain data.

Its own module so the ledger's readers (``traffic``, the reports) share it without importing
each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from shardviz.model.why import CollectiveWhy

CollectiveKind = Literal[
    "all-gather", "all-reduce", "reduce-scatter", "all-to-all", "collective-permute"
]
COLLECTIVE_KINDS: tuple[str, ...] = (
    "all-gather",
    "all-reduce",
    "reduce-scatter",
    "all-to-all",
    "collective-permute",
)


def collective_kind_named(text: str) -> str | None:
    """The kind ``text`` names in any spelling of the ledger's name (``"all-to-all"``,
    ``"all_to_all"``, ``"AllToAll"``, ``"all to all"``), or ``None``."""

    def squash(words: str) -> str:
        return words.strip().lower().replace("-", "").replace("_", "").replace(" ", "")

    return next((k for k in COLLECTIVE_KINDS if squash(text) == squash(k)), None)


@dataclass(frozen=True)
class Frame:
    """One Python stack frame recorded in the HLO metadata."""

    file: str
    line: int
    function: str
    column: int = 0
    #: How a person names the file (``In [12]`` for a notebook cell, ``models/llama.py``
    #: relative to the working directory); ``""``: its basename.
    label: str = ""

    @property
    def place(self) -> str:
        """``In [12], line 45``, ``models/llama.py:45`` or ``train.py:45``."""
        name = self.label or self.file.replace("\\", "/").rsplit("/", 1)[-1]
        return f"{name}, line {self.line}" if name.startswith("In [") else f"{name}:{self.line}"


@dataclass(frozen=True)
class Source:
    """Where an HLO instruction came from: the call chain, outermost frame first.

    ``text`` is the innermost line's code as it read when the program was captured (e.g.
    ``y = h @ params["w2"] + b2``), stripped; ``""`` when the file could not be read.
    """

    frames: tuple[Frame, ...]
    text: str = ""

    @property
    def innermost(self) -> Frame | None:
        return self.frames[-1] if self.frames else None

    @property
    def location(self) -> str:
        """``file:line`` of the innermost frame (the line that caused it)."""
        f = self.innermost
        return f"{f.file}:{f.line}" if f else "?"

    @property
    def place(self) -> str:
        """The innermost frame as a person reads it (:attr:`Frame.place`), or ``?``."""
        f = self.innermost
        return f.place if f else "?"

    @property
    def chain(self) -> str:
        """The function chain, e.g. ``step > loss > mlp``."""
        return " > ".join(f.function for f in self.frames)


@dataclass(frozen=True)
class Collective:
    """One collective in the compiled per-device program (async start/done pairs counted once).

    Bytes are per device. ``moved_bytes`` follows the ring model: with ``n`` devices in a
    group, all-gather moves ``out_bytes * (n-1)/n``, reduce-scatter ``in_bytes * (n-1)/n``,
    all-reduce ``2 * in_bytes * (n-1)/n``, all-to-all ``in_bytes * (n-1)/n``, and
    collective-permute ``in_bytes`` (0 for a device that sends nothing).

    ``groups`` hold device ids (jax's ``device.id``); ``axes`` are the user's mesh axes the
    groups span, in the order the groups enumerate them (``()`` when they match no set of
    axes). A tuple-shaped combined all-reduce is split into one entry per operand, each with
    ``combined = (part, parts)`` and ``name`` suffixed ``#part``. ``note`` says where the
    backend did something the program does not show (e.g. TPU gathering f32 values as bf16,
    or a reduce-scatter fused from an all-reduce and its slice), or why the source is unknown.

    ``cross_host_bytes`` is the part of ``moved_bytes`` that crosses a host boundary (devices
    of different processes, jax's ``device.process_index``), per device, under the same ring
    model. Each group's ring is laid out host by host (as NCCL builds its rings), so a group
    of ``n`` devices on ``h > 1`` hosts has ``h`` of its ``n`` hops crossing: its devices send
    ``moved_bytes * h / n`` across on average (all of it when every device has a host of its
    own; nothing when ``h == 1``). A collective-permute's hops are its pairs: ``moved_bytes *
    crossing pairs / moving pairs`` of a group. The figure is that of the group that crosses
    most (every group runs at once), rounded down, so ``0 <= cross_host_bytes <= moved_bytes``.
    ``cross_host_groups`` are the indices in ``groups`` of the groups on more than one host.
    A single-process program has 0 and ``()``.
    """

    name: str
    kind: str
    in_dtype: str
    in_shape: tuple[int, ...]
    out_dtype: str
    out_shape: tuple[int, ...]
    in_bytes: int
    out_bytes: int
    moved_bytes: int
    group_size: int
    groups: tuple[tuple[int, ...], ...]
    axes: tuple[str, ...]
    op_name: str = ""
    source: Source | None = None
    user_written: bool = False
    is_async: bool = False
    combined: tuple[int, int] | None = None
    pairs: tuple[tuple[int, int], ...] = ()
    dimension: int | None = None
    reshard: str | None = None
    note: str = ""
    # An estimate of one run on the report's target (None when no target is known), and how.
    estimated_seconds: float | None = None
    estimate_formula: str = ""
    #: How many times it runs per execution of the program (the product of the trip counts
    #: of the loops around it; ``None`` when a loop's count is unknown).
    trips: int | None = 1
    #: Why the partitioner inserted it (None for user-written ones, or when unknown).
    why: CollectiveWhy | None = None
    #: The part of ``moved_bytes`` that crosses hosts, per device (see above).
    cross_host_bytes: int = 0
    #: Indices in ``groups`` of the groups whose devices are on more than one host.
    cross_host_groups: tuple[int, ...] = ()

    @property
    def hlo_name(self) -> str:
        """The compiled instruction's name: ``name`` without a combined part's ``#k`` (the
        parts of one combined all-reduce run as one instruction)."""
        return self.name.split("#", 1)[0]

    @property
    def axes_label(self) -> str:
        return ", ".join(self.axes) if self.axes else "(no mesh axis)"

    @property
    def origin(self) -> str:
        return "user" if self.user_written else "partitioner"
