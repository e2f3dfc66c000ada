"""The widgets never import jax: what they do with jax is a capture function they call.

Read from the source with ``ast`` (imports inside functions and ``if TYPE_CHECKING:`` count).
"""

from __future__ import annotations

from pathlib import Path

import pytest

import shardviz.widgets
from tests.without_jax import imported_modules

WIDGETS_DIR = Path(shardviz.widgets.__file__).parent


def jax_imports(path: Path) -> list[str]:
    """The jax modules (``jax``, ``jax.*``, ``jaxlib*``) the source file ``path`` imports."""
    names = imported_modules(path, "shardviz.widgets")
    return [n for n in names if n.split(".")[0] in ("jax", "jaxlib")]


@pytest.mark.parametrize(
    "source",
    [
        "import jax\n",
        "import jax.numpy as jnp\n",
        "from jax.sharding import NamedSharding\n",
        "from jax import tree_util\n",
        "def f():\n    import jax\n    return jax\n",
        "class C:\n    def m(self):\n        from jax.sharding import Mesh\n",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import jaxlib\n",
    ],
)
def test_the_check_finds_jax_imports_anywhere(tmp_path: Path, source: str) -> None:
    path = tmp_path / "module.py"
    path.write_text(source, encoding="utf-8")
    assert jax_imports(path)


def test_the_check_lets_other_imports_pass(tmp_path: Path) -> None:
    path = tmp_path / "module.py"
    path.write_text(
        "import jaxtyping_like\nfrom shardviz.capture.calls import in_mesh\n"
        "def f():\n    from . import format\n",
        encoding="utf-8",
    )
    assert jax_imports(path) == []


def test_no_widget_module_imports_jax() -> None:
    files = sorted(WIDGETS_DIR.rglob("*.py"))
    names = {str(f.relative_to(WIDGETS_DIR)) for f in files}
    assert names >= {"__init__.py", "live/widget.py", "live/run.py", "session.py", "controls.py"}
    found = {str(f.relative_to(WIDGETS_DIR)): jax_imports(f) for f in files}
    assert {name: names for name, names in found.items() if names} == {}
