"""Run a snippet in a fresh interpreter where importing jax fails: for the modules that must
work without it (the model, the renderers, the HLO parser)."""

from __future__ import annotations

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
