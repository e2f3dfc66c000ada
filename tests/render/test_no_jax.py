"""The renderers never need jax: they import only the standard library, numpy, the model and
the analysis layer (jax-free too: tests/test_architecture.py holds it so)."""

from __future__ import annotations

import sys
from pathlib import Path

import shardviz.render
from tests.without_jax import imports_outside, run_without_jax

RENDER_DIR = Path(shardviz.render.__file__).parent
# plotly and matplotlib are dependencies of the chart renderers (imported inside the functions
# that draw charts, so text and HTML views load without them); jax never is.
ALLOWED = set(sys.stdlib_module_names) | {"numpy", "shardviz", "plotly", "matplotlib"}
# shardviz.errors (stdlib only) so a renderer can raise the project's own errors; the analysis
# layer for the figures it works out that a view draws (a collective's links: analysis.traffic).
ALLOWED_SHARDVIZ = ("shardviz.model", "shardviz.analysis", "shardviz.render", "shardviz.errors")


def test_render_modules_import_only_stdlib_numpy_and_model() -> None:
    files = sorted(RENDER_DIR.rglob("*.py"))
    assert {f.stem for f in files} >= {"__init__", "colors", "geometry", "text", "html"}
    for path in files:
        outside = imports_outside(path, "shardviz.render", ALLOWED, ALLOWED_SHARDVIZ)
        assert outside == [], f"{path.name} imports {outside}"


def test_renderers_work_with_jax_blocked() -> None:
    out = run_without_jax(
        """
        from shardviz.render import array_html, array_text, mesh_html, mesh_text
        from shardviz.render import tree_html, tree_text
        from tests.render.compare_fixtures import comparison
        from tests.render.fixtures import make_layout, mesh_2x4, tree_example
        from tests.render.report_fixtures import dp_report

        mesh = mesh_2x4()
        layout = make_layout("w", (8, 16), ("data", "model"), mesh)
        for out in (mesh_text(mesh), mesh_html(mesh), array_text(layout), array_html(layout),
                    tree_text(tree_example()), tree_html(tree_example()), str(layout)):
            assert out
        for shown in (dp_report(), comparison()):  # views the model asks the registry for
            assert str(shown) and shown._repr_html_()
        assert not any(m == "jax" or m.startswith("jax.") for m in sys.modules), "jax imported"
        print("ok")
        """
    )
    assert out.strip() == "ok"
