"""The model is plain data: it imports the standard library, numpy and itself, never a view."""

from __future__ import annotations

import sys
from pathlib import Path

import shardviz.model
from tests.without_jax import imported_modules, imports_outside

MODEL_DIR = Path(shardviz.model.__file__).parent
ALLOWED = set(sys.stdlib_module_names) | {"numpy", "shardviz"}
ALLOWED_SHARDVIZ = ("shardviz.model", "shardviz.errors")


def test_model_modules_import_no_renderer_widget_or_jax() -> None:
    files = sorted(MODEL_DIR.glob("*.py"))
    assert {f.stem for f in files} >= {"__init__", "array", "mesh", "program", "compare"}
    for path in files:
        outside = imports_outside(path, "shardviz.model", ALLOWED, ALLOWED_SHARDVIZ)
        assert outside == [], f"{path.name} imports {outside}"


def test_the_check_sees_imports_inside_functions_and_relative_ones(tmp_path: Path) -> None:
    source = tmp_path / "bad.py"
    source.write_text(
        "def f():\n"
        "    from shardviz.render.text import mesh_text\n"
        "    from ..widgets import explorer\n"
        "    from . import display\n"
        "    import jax.numpy\n"
    )
    names = imported_modules(source, "shardviz.model")
    assert {
        "shardviz.render.text",
        "shardviz.widgets.explorer",
        "shardviz.model.display",
    } <= set(names)
    assert "jax.numpy" in names
