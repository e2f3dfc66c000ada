"""The model is plain data: it imports the standard library, numpy and itself, never a view."""

from __future__ import annotations

import sys
from pathlib import Path

import shardviz.model
from tests.without_jax import imported_modules

MODEL_DIR = Path(shardviz.model.__file__).parent
ALLOWED = set(sys.stdlib_module_names) | {"numpy", "shardviz"}
ALLOWED_SHARDVIZ = ("shardviz.model", "shardviz.errors")


def test_model_modules_import_no_renderer_widget_or_jax() -> None:
    files = sorted(MODEL_DIR.glob("*.py"))
    assert {f.stem for f in files} >= {"__init__", "array", "mesh", "program", "compare"}
    for path in files:
        for name in imported_modules(path, "shardviz.model"):
            assert name.split(".")[0] in ALLOWED, f"{path.name} imports {name}"
            if name.startswith("shardviz"):
                assert name.startswith(ALLOWED_SHARDVIZ), f"{path.name} imports {name}"


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
    assert {"shardviz.render.text", "shardviz.widgets.explorer", "shardviz.model.display"} <= set(
        names
    )
    assert "jax.numpy" in names
