"""Docstrings name what exists: every module, function, class or attribute a docstring names
by a Sphinx role (``:mod:``, ``:func:``, ``:class:`` ..., absolute or relative to the module)
or by a dotted ``shardviz.`` path, and every file path into the package, resolves today.
Modules move; this catches the words left behind (issue 43)."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import importlib.util
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

import shardviz

PACKAGE = Path(shardviz.__file__).parent
ROLE = re.compile(r":(mod|func|class|meth|data|attr|obj|exc):`~?([^`<]+?)`")
DOTTED = re.compile(r"``(shardviz(?:\.[A-Za-z_]\w*)+)(?:\(\))?``")
#: A file path into the package: its first part a folder of the package (or the package).
FOLDERS = sorted(p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__")
PATH = re.compile(rf"(?<![\w/.])((?:shardviz|{'|'.join(FOLDERS)})(?:/\w+)+\.(?:py|js|css))")


def _docstrings(tree: ast.Module) -> Iterator[str]:
    for node in ast.walk(tree):
        kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
        if isinstance(node, kinds) and (text := ast.get_docstring(node, clean=False)):
            yield text


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _absolute(name: str, path: Path) -> str:
    """``name`` made absolute where it is relative to the module at ``path``."""
    if not name.startswith("."):
        return name
    here = _module_name(path)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    return importlib.util.resolve_name(name, package)


def _resolves(name: str) -> bool:
    """Whether ``name`` is a module, or a module's attribute (a dataclass's field counts)."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            fields = (
                {f.name for f in dataclasses.fields(obj)}
                if dataclasses.is_dataclass(obj)
                else set()
            )
            if attr in fields and attr not in vars(obj):
                return attr == parts[-1]
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def _broken(source: str, path: Path) -> list[str]:
    """What the docstrings of ``source``, the module at ``path``, name that does not exist."""
    out = []
    for text in _docstrings(ast.parse(source)):
        for role, target in ROLE.findall(text):
            name = re.sub(r"\s+", "", target)
            if not name.startswith(("shardviz", ".")):
                continue  # jax's, numpy's, the standard library's
            try:
                ok = _resolves(_absolute(name, path))
            except (ImportError, ValueError):
                ok = False
            if not ok:
                out.append(f":{role}:`{name}`")
        out += [name for name in DOTTED.findall(text) if not _resolves(name)]
        for rel in PATH.findall(text):
            bases = [PACKAGE.parent, PACKAGE, *path.parents]
            if not any((base / rel).exists() for base in bases):
                out.append(rel)
    return out


SOURCES = sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_every_module_class_and_path_a_docstring_names_exists(path: Path) -> None:
    assert _broken(path.read_text(encoding="utf-8"), path) == []


def test_the_check_sees_a_moved_module_a_missing_name_and_a_missing_file() -> None:
    """Relative names resolve from the module's own package; a name broken over two lines
    is read whole; a dataclass's field is an attribute; a path outside the package (a
    user's file in an example) is not checked."""
    source = (
        '"""See :mod:`.live_format`, :mod:`.format`, :func:`.format.time_note`,\n'
        ":func:`shardviz.model.units.\n    format_bytes`, :class:`shardviz.model.Nope`,\n"
        "``shardviz.model.units.format_ms``, ``shardviz.nowhere``, widgets/static/live.js,\n"
        "widgets/static/gone.js, :attr:`shardviz.model.Estimate.step_seconds`, models/llama.py,\n"
        ':func:`jax.jit`, :attr:`shardviz.model.Estimate.nope`."""\n'
    )
    assert _broken(source, PACKAGE / "render" / "live" / "view.py") == [
        ":mod:`.live_format`",
        ":class:`shardviz.model.Nope`",
        ":attr:`shardviz.model.Estimate.nope`",
        "shardviz.nowhere",
        "widgets/static/gone.js",
    ]
