"""For the modules that must work without jax (the model, the renderers, the HLO parser): what a
module imports, read from its source, and a snippet run in a fresh interpreter where importing
jax fails."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_BLOCK_JAX = """
import importlib.abc, sys

class BlockJax(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "jax" or name.startswith(("jax.", "jaxlib")):
            raise ImportError(f"jax is blocked here ({name})")
        return None

sys.meta_path.insert(0, BlockJax())
"""


def run_without_jax(snippet: str) -> str:
    """Run ``snippet`` (dedented) with jax blocked, from the repo root; return its stdout.

    Fails the calling test with the snippet's stderr if it exits non-zero.
    """
    script = _BLOCK_JAX + textwrap.dedent(snippet)
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def imported_modules(path: Path, package: str | None = None) -> list[str]:
    """Every module the source file ``path`` imports, by absolute name.

    Imports inside functions count too. ``from a.b import c`` gives ``a.b`` and ``a.b.c`` (``c``
    may be a submodule). Relative imports are resolved against ``package``, by default the
    package the file lives in under the repo root (``shardviz/model/array.py``: ``shardviz.model``).
    """
    if package is None:
        package = ".".join(path.resolve().parent.relative_to(ROOT).parts)
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            parts = package.split(".")[: len(package.split(".")) - node.level + 1]
            base = node.module if node.level == 0 else ".".join([*parts, node.module or ""])
            base = base.rstrip(".")
            names.append(base)
            names.extend(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")
    return names


def imports_outside(
    path: Path, package: str, allowed: set[str], allowed_shardviz: tuple[str, ...]
) -> list[str]:
    """The modules the source file ``path`` imports that its package may not: a top-level
    package not in ``allowed``, or a ``shardviz`` module outside ``allowed_shardviz``."""
    return [
        name
        for name in imported_modules(path, package)
        if name.split(".")[0] not in allowed
        or (name.startswith("shardviz") and not name.startswith(allowed_shardviz))
    ]
