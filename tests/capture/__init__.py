"""Tests of the capture layer. Shared helpers for the HLO parser tests (no jax needed)."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from shardviz.model import Device, MeshLayout

HLO_FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "hlo"
PROGRAMS = HLO_FIXTURES / "programs.py"


@cache
def hlo_text(name: str) -> str:
    """A saved HLO fixture by file stem (``dp``, ``dp.before_spmd``, ``hand_sub_axes``)."""
    return (HLO_FIXTURES / f"{name}.txt").read_text(encoding="utf-8")


def fixture_device_ids(name: str) -> tuple[int, ...]:
    """The device assignment saved next to a fixture compiled on a reordered mesh."""
    text = (HLO_FIXTURES / f"{name}.device_ids.txt").read_text(encoding="utf-8")
    return tuple(int(v) for v in text.split())


def mesh_of(names: tuple[str, ...], sizes: tuple[int, ...], ids=None) -> MeshLayout:
    """A mesh with the given axes; devices 0..N-1 in order unless ``ids`` gives the order."""
    n = 1
    for s in sizes:
        n *= s
    order = list(ids) if ids is not None else list(range(n))
    return MeshLayout(names, sizes, tuple(Device(i) for i in order))


MESH_2X4 = mesh_of(("data", "model"), (2, 4))
MESH_8_DATA = mesh_of(("data",), (8,))
MESH_8_I = mesh_of(("i",), (8,))


@cache
def marker_line_in(programs: Path, mark: str) -> int:
    """The line of ``programs`` carrying ``# @mark: <mark>``."""
    for number, line in enumerate(programs.read_text(encoding="utf-8").splitlines(), 1):
        if re.search(rf"# @mark: {re.escape(mark)}\b", line):
            return number
    raise KeyError(mark)


def marker_line(mark: str) -> int:
    """The line of the CPU fixtures' ``programs.py`` carrying ``# @mark: <mark>``."""
    return marker_line_in(PROGRAMS, mark)
