"""The public names of ``shardviz``: every one resolves, and no module of the package hides
one (importing ``shardviz.<name>`` would replace the function ``sv.<name>`` with the module)."""

from __future__ import annotations

import importlib
import importlib.util
import json
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pytest

import shardviz

ROOT = Path(__file__).resolve().parents[1]


def test_every_public_name_resolves():
    missing = [name for name in shardviz.__all__ if getattr(shardviz, name, None) is None]
    assert missing == []


def test_no_module_of_the_package_shares_a_public_name():
    modules = {m.name for m in pkgutil.iter_modules(shardviz.__path__)}
    assert modules & set(shardviz.__all__) == set()


def test_importing_every_module_leaves_the_public_functions_in_place():
    # In a fresh interpreter: import each top-level module, then call-check the functions.
    names = sorted(m.name for m in pkgutil.iter_modules(shardviz.__path__) if m.name != "__main__")
    code = (
        "import importlib, shardviz as sv\n"
        f"for m in {names!r}: importlib.import_module('shardviz.' + m)\n"
        "assert callable(sv.cluster) and callable(sv.live) and callable(sv.explain)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=300)
    assert importlib.import_module("shardviz.engines").cluster is shardviz.cluster


def test_the_type_checkers_imports_are_the_api_table():
    """``shardviz.API`` is the one list: the TYPE_CHECKING imports repeat it for mypy."""
    source = Path(shardviz.__file__).read_text(encoding="utf-8")
    block = source.split("# --- generated from API ---\n")[1].split("    # --- end generated ---")[
        0
    ]
    by_module = sorted(shardviz.API.items(), key=lambda item: (item[1], item[0]))
    expected = "".join(f"    from {module} import {n} as {n}\n" for n, module in by_module)
    assert block == expected, "paste this block into shardviz/__init__.py:\n" + expected
    assert shardviz.__all__ == list(shardviz.API)


def test_names_load_from_the_module_the_table_names():
    for name, module in shardviz.API.items():
        assert getattr(shardviz, name) is getattr(importlib.import_module(module), name), name


def test_the_explorer_shows_its_own_signature() -> None:
    """Not traitlets' ``(*args, **kwargs)``: what ``help`` and the docs print."""
    import inspect

    params = list(inspect.signature(shardviz.Explorer).parameters)
    assert params == ["shown", "args", "steps", "target", "logical_axes", "kwargs"]


#: What the documents import from shardviz: ``from shardviz.x import a, b`` (one line or in
#: parentheses), ``import shardviz.x``, and ``sv.<subpackage>.name``.
_FROM = re.compile(r"^[ \t]*from (shardviz(?:\.\w+)+) import (\([^)]*\)|[^\n#]+)", re.M)
_IMPORT = re.compile(r"^[ \t]*import (shardviz(?:\.\w+)+)", re.M)
_SUBPACKAGES = "capture|model|render|strategies|widgets|analysis|explainer|course|launch|cluster"
_ATTR = re.compile(rf"(?<![\w.])sv\.((?:{_SUBPACKAGES})(?:\.\w+)+)")


def _documents() -> list[tuple[str, str]]:
    """(name, text) of the README, every docs page and every course notebook's code."""
    found = [(p.name, p.read_text(encoding="utf-8")) for p in [ROOT / "README.md"]]
    pages = [*(ROOT / "docs").rglob("*.md"), *(ROOT / "docs").rglob("*.rst")]
    found += [(p.name, p.read_text(encoding="utf-8")) for p in pages if "_build" not in p.parts]
    for p in sorted((ROOT / "notebooks").glob("*.ipynb")):
        cells = json.loads(p.read_text(encoding="utf-8"))["cells"]
        code = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
        found.append((p.name, "\n".join(code)))
    return found


def documented_imports(documents: list[tuple[str, str]]) -> set[str]:
    """Every shardviz name below the package that ``documents`` import or use."""
    out: set[str] = set()
    for _, text in documents:
        for module, names in _FROM.findall(text):
            words = re.split(r"[\s,()]+", names)
            aliases = {words[i + 1] for i, w in enumerate(words[:-1]) if w == "as"}
            out |= {f"{module}.{n}" for n in words if n and n != "as" and n not in aliases}
        out |= set(_IMPORT.findall(text))
        out |= {f"shardviz.{name}" for name in _ATTR.findall(text)}
    return out


def listed_public() -> set[str]:
    """The subpackage names docs/api.rst says are public."""
    text = (ROOT / "docs" / "api.rst").read_text(encoding="utf-8")
    section = text.split("What is public")[1].split("Everything ``import shardviz`` exports")[0]
    return set(re.findall(r"^- ``(shardviz[\w.]+)``$", section, re.M))


def test_the_public_list_is_what_the_documents_import_and_every_name_resolves() -> None:
    listed = listed_public()
    assert documented_imports(_documents()) == listed
    for name in sorted(listed):
        module, _, attr = name.rpartition(".")
        try:
            found = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError):
            found = importlib.import_module(name)
        assert found is not None, name


def test_the_scan_reads_imports_in_every_form() -> None:
    text = (
        "from shardviz.model.units import format_bytes, format_seconds  # noqa: E402\n"
        "from shardviz.strategies import (\n    get_model,\n    mlp as m,\n)\n"
        "import shardviz.render.timeline\nx = sv.strategies.get_rule_set('dp')\n"
        "import shardviz as sv\n"
    )
    assert documented_imports([("t", text)]) == {
        "shardviz.model.units.format_bytes", "shardviz.model.units.format_seconds",
        "shardviz.strategies.get_model", "shardviz.strategies.mlp",
        "shardviz.render.timeline", "shardviz.strategies.get_rule_set",
    }  # fmt: skip


def test_old_module_paths_are_gone_and_said_in_the_changelog() -> None:
    """The paths from before the layered layout were retired (no document used them); the
    changelog names each with where its module is now (in that section; later moves have
    their own)."""
    changes = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    section = changes.split("### Removed: module paths from before the layered layout")[1]
    section = section.split("\n## ")[0].split("\n### ")[0]
    rows = re.findall(r"^\| `(shardviz[\w.]+)` \| `(shardviz[\w.]+)` \|$", section, re.M)
    assert len(rows) == 68
    for old, new in rows:
        assert importlib.util.find_spec(new) is not None, new
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(old)
