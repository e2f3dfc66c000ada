"""The widgets' ES modules: static/shared.js joined in front of each widget's file.

Each shipped module must be one valid ES module that imports nothing (users run offline and
anywidget loads it from a Blob URL), keeps the widget's default export and carries the shared
helpers once; a widget that imports anything else is refused. Node (which ``make test`` needs
for the type check anyway) parses each module, which also catches a name declared in both
files.
"""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from shardviz.widgets import esm
from shardviz.widgets.esm import SHARED, STATIC, ModuleError, shared_text, widget_module

WIDGETS = ("explorer.js", "mesh_view.js", "live.js")


@pytest.mark.parametrize("name", WIDGETS)
def test_module_is_the_shared_text_then_the_widgets_without_its_import(name):
    text = widget_module(name)
    own = (STATIC / name).read_text(encoding="utf-8")
    assert 'from "./shared.js"' in own, "the widget imports its helpers for the type checker"
    assert text.startswith(shared_text())
    assert text.count("function node(") == 1, "the shared helpers, once"
    body = own[own.index('from "./shared.js";') + len('from "./shared.js";') :]
    assert text.endswith(body)
    assert not re.search(r"^\s*import\b", text, re.M), "the shipped module imports nothing"
    assert re.findall(r"^export\b.*", text, re.M) == ["export default {"]
    assert ".innerHTML" not in text and "insertAdjacentHTML" not in text and "eval(" not in text


def test_shared_exports_are_dropped_and_nothing_else_changes():
    raw = (STATIC / SHARED).read_text(encoding="utf-8")
    shared = shared_text()
    assert "export function node(" in raw and "\nfunction node(" in shared
    assert shared == re.sub(r"^export ", "", raw, flags=re.M)


def test_widgets_ship_their_module():
    from shardviz.widgets.explorer.widget import ExplorerWidget
    from shardviz.widgets.live.widget import LiveWidget
    from shardviz.widgets.mesh_view import MeshView

    assert ExplorerWidget._esm == widget_module("explorer.js")
    assert MeshView._esm == widget_module("mesh_view.js")
    assert LiveWidget._esm == widget_module("live.js")


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
@pytest.mark.parametrize("name", WIDGETS)
def test_module_parses_as_one_es_module(name, tmp_path):
    path = tmp_path / f"{name}.mjs"
    path.write_text(widget_module(name), encoding="utf-8")
    run = subprocess.run(["node", "--check", str(path)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_a_name_declared_twice_does_not_parse(tmp_path):
    """The check above can fail: a widget redeclaring a shared helper breaks the module."""
    path = tmp_path / "twice.mjs"
    path.write_text(shared_text() + "\nfunction node() {}\nexport default {};\n", encoding="utf-8")
    run = subprocess.run(["node", "--check", str(path)], capture_output=True, text=True)
    assert run.returncode != 0 and "already been declared" in run.stderr


@pytest.mark.parametrize(
    ("source", "match"),
    [
        ('import { node } from "./other.js";\nexport default {};\n', "may import only"),
        ('import x from "https://cdn.example/x.js";\nexport default {};\n', "may import only"),
        (
            'import { node } from "./shared.js";\nimport { svg } from "./shared.js";\n'
            "export default {};\n",
            "once",
        ),
        ('import { node } from "./shared.js";\nexport const render = 1;\n', "no default export"),
    ],
)
def test_other_shapes_are_refused(source, match, tmp_path, monkeypatch):
    (tmp_path / SHARED).write_text((STATIC / SHARED).read_text(encoding="utf-8"))
    (tmp_path / "bad.js").write_text(source, encoding="utf-8")
    monkeypatch.setattr(esm, "STATIC", tmp_path)
    with pytest.raises(ModuleError, match=match):
        esm.widget_module.__wrapped__("bad.js")


def test_a_shared_module_that_imports_is_refused(tmp_path, monkeypatch):
    (tmp_path / SHARED).write_text('import { a } from "./b.js";\nexport const c = a;\n')
    monkeypatch.setattr(esm, "STATIC", tmp_path)
    with pytest.raises(ModuleError, match="import nothing"):
        shared_text()
