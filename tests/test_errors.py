"""The error classes: every one is in ``shardviz/errors.py``, and every one is a
:class:`~shardviz.errors.ShardvizError` (or the one warning), so ``except ShardvizError``
catches whatever shardviz raises on purpose.

An exception class elsewhere is a signal caught inside shardviz (a background request
superseded, a live loop's batches run out, a fix that cannot be applied, a private one
within its module), never raised to the user; its name does not say Error."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import shardviz
from shardviz import errors

PACKAGE = Path(shardviz.__file__).parent
#: Base names that make a class an exception or a warning.
_EXCEPTION_BASES = ("Error", "Exception", "Warning", "Unavailable")
#: Names that say a class is an error for the user.
_ERROR_NAMES = ("Error", "Warning", "Unavailable")


def _bases(node: ast.ClassDef) -> list[str]:
    names = []
    for base in node.bases:
        if isinstance(base, ast.Name):
            names.append(base.id)
        elif isinstance(base, ast.Attribute):
            names.append(base.attr)
    return names


def test_no_module_but_errors_defines_an_error_class() -> None:
    strays = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == PACKAGE / "errors.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.ClassDef)
                and any(b.endswith(_EXCEPTION_BASES) for b in _bases(node))
                and (node.name.endswith(_ERROR_NAMES) or any(
                    b.endswith(_ERROR_NAMES) for b in _bases(node)))
            ):  # fmt: skip
                strays.append(f"{path.relative_to(PACKAGE)}: {node.name}")
    assert strays == []


def test_every_error_is_a_shardviz_error_and_a_builtin_one() -> None:
    classes = [c for _, c in inspect.getmembers(errors, inspect.isclass)
               if c.__module__ == errors.__name__]  # fmt: skip
    assert sorted(c.__name__ for c in classes) == sorted(errors.__all__)
    for cls in classes:
        if cls is errors.ShardvizWarning:
            assert issubclass(cls, UserWarning)
            continue
        assert issubclass(cls, errors.ShardvizError), cls
        builtin = [b for b in cls.__mro__[1:] if b.__module__ == "builtins" and b is not object]
        assert builtin and builtin[0] is not Exception or cls is errors.ShardvizError, cls


def test_the_moved_classes_are_still_where_their_modules_named_them() -> None:
    """Code that imported an error from its old module keeps working."""
    from shardviz.capture.hlo.text import HloParseError
    from shardviz.capture.topology import CompilerUnavailable, TopologyError
    from shardviz.launch import LaunchError
    from shardviz.model._codec import DecodeError
    from shardviz.widgets.esm import ModuleError
    from shardviz.workshop import WorkshopError

    assert (HloParseError, CompilerUnavailable, TopologyError, LaunchError, DecodeError,
            ModuleError, WorkshopError) == (errors.HloParseError, errors.CompilerUnavailable,
            errors.TopologyError, errors.LaunchError, errors.DecodeError, errors.ModuleError,
            errors.WorkshopError)  # fmt: skip
    assert issubclass(errors.DecodeError, TypeError) and issubclass(errors.ModuleError, ValueError)
