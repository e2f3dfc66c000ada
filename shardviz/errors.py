"""Errors shardviz raises: each message names what is wrong, where, and how to fix it.

The classes form one tree under :class:`ShardvizError`, so a notebook can catch them all,
and each also subclasses the built-in error a Python user would expect (``ValueError``,
``TypeError``, ``RuntimeError``).
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ArgumentError",
    "CompileError",
    "CompilerUnavailable",
    "DecodeError",
    "DeviceSetupError",
    "FileError",
    "HardwareError",
    "HloParseError",
    "LaunchError",
    "LeafError",
    "MeshError",
    "ModuleError",
    "ProcessError",
    "ShardvizError",
    "ShardvizWarning",
    "SpecError",
    "TopologyError",
    "WorkshopError",
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


class LaunchError(ProcessError):
    """A launch failed: a process exited nonzero or died, or the timeout ran out.

    ``result`` (a :class:`shardviz.launch.LaunchResult`) holds every process's exit code
    and output.
    """

    def __init__(self, message: str, result: Any) -> None:
        super().__init__(message)
        self.result = result


class TopologyError(ShardvizError, ValueError):
    """A topology name shardviz or jax does not know, or one whose extra is not installed."""


class CompilerUnavailable(TopologyError):
    """A known topology whose compiler cannot be loaded here: its extra (``shardviz[tpu]``,
    ``shardviz[gpu]``) is not installed, or its plugin would not make deviceless devices.
    ``extra`` names the extra (``"gpu"``)."""

    def __init__(self, message: str, extra: str = "") -> None:
        super().__init__(message)
        self.extra = extra


class HloParseError(ShardvizError, ValueError):
    """The HLO text does not have the shape this parser expects."""


class DecodeError(ShardvizError, TypeError):
    """A document that does not fit the type it is read as; ``path`` says where
    (``collectives[3].kind``). ``limit``: the value has the right type but is past what a
    document may hold (a union tries no other type for it)."""

    def __init__(self, path: str, message: str, *, limit: bool = False) -> None:
        super().__init__(f"{path or 'the document'}: {message}")
        self.path = path
        self.message = message
        self.limit = limit


class WorkshopError(ShardvizError, RuntimeError):
    """The workshop cannot start: no notebooks, a folder that cannot be written, a busy port,
    or no JupyterLab."""


class ModuleError(ShardvizError, ValueError):
    """A static JS file does not have the shape
    :func:`shardviz.widgets.esm.widget_module` joins."""


class ShardvizWarning(UserWarning):
    """Something worked, but probably not the way the user meant."""


def problem(where: str, what: str, fix: str) -> str:
    """Build a message in the project's one format: ``where: what. Fix: fix``."""
    what = what.rstrip(".")
    fix = fix.rstrip(".")
    return f"{where}: {what}. Fix: {fix}."
