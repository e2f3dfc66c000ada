"""Errors shardviz raises: each message names what is wrong, where, and how to fix it.

The classes form one tree under :class:`ShardvizError`, so a notebook can catch them all,
and each also subclasses the built-in error a Python user would expect (``ValueError``,
``TypeError``, ``RuntimeError``).
"""

from __future__ import annotations

__all__ = [
    "ArgumentError",
    "CompileError",
    "DeviceSetupError",
    "FileError",
    "HardwareError",
    "LeafError",
    "MeshError",
    "ProcessError",
    "ShardvizError",
    "ShardvizWarning",
    "SpecError",
]


class ShardvizError(Exception):
    """Base of every error shardviz raises on purpose."""


class ArgumentError(ShardvizError, ValueError):
    """An argument's value is of the wrong kind or out of range (a count, a size, a dtype)."""


class DeviceSetupError(ShardvizError, RuntimeError):
    """The device backend cannot be set up as asked (e.g. it already started)."""


class MeshError(ShardvizError, ValueError):
    """A mesh does not fit the devices: wrong shape, unknown or repeated device ids, bad names."""


class SpecError(ShardvizError, ValueError):
    """A partition spec does not fit the array or the mesh."""


class LeafError(ShardvizError, TypeError):
    """A pytree leaf cannot be laid out (it is not an array, or it is not placed on devices)."""


class CompileError(ShardvizError, RuntimeError):
    """A function failed to trace, compile or run under the given shardings."""


class ProcessError(ShardvizError, RuntimeError):
    """A process of a multi-process program failed to start, died, or hung."""


class FileError(ShardvizError, OSError):
    """A file shardviz was asked to write cannot be written (permission, space, a folder)."""


class HardwareError(ShardvizError, ValueError):
    """A hardware preset or target is unknown, or does not fit the mesh it should describe."""


class ShardvizWarning(UserWarning):
    """Something worked, but probably not the way the user meant."""


def problem(where: str, what: str, fix: str) -> str:
    """Build a message in the project's one format: ``where: what. Fix: fix``."""
    what = what.rstrip(".")
    fix = fix.rstrip(".")
    return f"{where}: {what}. Fix: {fix}."
