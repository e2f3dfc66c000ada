"""MeshView without a browser: its synced state is the model's JSON, and it ships its front end."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import traitlets

import shardviz
import shardviz as sv
from shardviz.model import Device, MeshLayout
from shardviz.model._codec import to_data
from shardviz.render.colors import device_color
from shardviz.render.grid_view import mesh_grid_view, tiled_array_view
from shardviz.render.html import array_html, mesh_html
from shardviz.widgets import MeshView
from shardviz.widgets.esm import widget_module
from shardviz.widgets.mesh_view import STATIC

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


@pytest.fixture(scope="module")
def mesh():
    return sv.Mesh(range(8), (2, 4), ("data", "model"))


@pytest.fixture(scope="module")
def mesh_layout(mesh) -> MeshLayout:
    return sv.layout(mesh)


@pytest.fixture(scope="module")
def array_layout(mesh):
    x = sv.mark_sharding(np.zeros((8, 16), np.float32), mesh, ("data", "model"), name="w")
    return sv.layout(x, name="w")


def _bundle_data(bundle):
    return bundle[0] if isinstance(bundle, tuple) else bundle


def test_synced_mesh_and_colors_are_the_models(mesh_layout):
    w = MeshView(mesh_layout)
    assert w.mesh == mesh_layout.to_json()
    assert MeshLayout.from_json(w.mesh) == mesh_layout
    assert w.array == ""
    assert w.selected_device == -1
    assert w.colors == {str(i): device_color(i) for i in range(8)}
    state = w.get_state()
    assert state["mesh"] == mesh_layout.to_json()
    assert state["colors"] == {str(i): device_color(i) for i in range(8)}


def test_synced_array_is_the_layouts_json(mesh_layout, array_layout):
    w = MeshView(mesh_layout, array_layout)
    assert w.array == array_layout.to_json()
    assert w.get_state()["array"] == array_layout.to_json()
    assert w.array_layout is array_layout
    assert w.mesh_layout is mesh_layout


def test_synced_grids_are_the_static_views_layout(mesh_layout, array_layout):
    w = MeshView(mesh_layout, array_layout)
    grids = json.loads(w.get_state()["grids"])
    assert grids["mesh"] == to_data(mesh_grid_view(mesh_layout))
    assert grids["array"] == to_data(tiled_array_view(array_layout))
    assert tiled_array_view(array_layout).to_json() == json.dumps(grids["array"])
    assert json.loads(MeshView(mesh_layout).grids) == {
        "mesh": to_data(mesh_grid_view(mesh_layout)),
        "array": None,
    }


def test_synced_grids_are_inert_in_html():
    mesh = MeshLayout(("<b>&", "model"), (2, 4), tuple(Device(i) for i in range(8)))
    text = MeshView(mesh).grids
    assert "<" not in text and ">" not in text and "&" not in text
    assert json.loads(text)["mesh"]["rows"]["title"] == "<b>& (2)"


def test_selected_device_accepts_mesh_devices_only(mesh_layout):
    w = MeshView(mesh_layout)
    w.selected_device = 5
    assert w.get_state()["selected_device"] == 5
    w.selected_device = -1
    with pytest.raises(traitlets.TraitError, match="not a device of this mesh"):
        w.selected_device = 8


def test_wrong_arguments_say_what_to_pass(mesh, mesh_layout, array_layout):
    with pytest.raises(TypeError, match=r"shardviz\.layout\(mesh\)"):
        MeshView(mesh)
    with pytest.raises(TypeError, match="ArrayLayout"):
        MeshView(mesh_layout, mesh_layout)
    other = sv.layout(sv.Mesh(range(8), (4, 2), ("data", "model")))
    with pytest.raises(ValueError, match="pass array_layout.mesh"):
        MeshView(other, array_layout)


def test_mimebundle_has_the_live_view_and_a_static_picture(mesh_layout, array_layout):
    w = MeshView(mesh_layout, array_layout)
    data = _bundle_data(w._repr_mimebundle_())
    assert data[WIDGET_MIME]["model_id"] == w.model_id
    html = data["text/html"]
    assert "<svg" in html
    assert html == mesh_html(mesh_layout) + array_html(array_layout)
    assert "text/plain" in data

    mesh_only = _bundle_data(MeshView(mesh_layout)._repr_mimebundle_())
    assert mesh_only["text/html"] == mesh_html(mesh_layout)


def test_front_end_files_ship_inside_the_package(mesh_layout):
    package = Path(shardviz.__file__).resolve().parent
    assert STATIC.resolve() == package / "widgets" / "static"
    for name in ("mesh_view.js", "mesh_view.css"):
        assert (STATIC / name).is_file(), name
    # the widget carries its ES module (static/shared.js, then mesh_view.js) and its CSS
    state = MeshView(mesh_layout).get_state()
    assert state["_esm"] == widget_module("mesh_view.js")
    assert state["_css"] == (STATIC / "mesh_view.css").read_text(encoding="utf-8")


def test_front_end_loads_nothing_from_the_network():
    js = widget_module("mesh_view.js")
    css = (STATIC / "mesh_view.css").read_text(encoding="utf-8")
    for text in (js.replace("http://www.w3.org/2000/svg", ""), css):  # a name, not a resource
        assert not re.search(r"https?://", text)
        assert "@import" not in text
    assert "export default" in js
    assert not re.search(r"^\s*import\s", js, re.M), "the module must not import anything"
    assert ".innerHTML" not in js, "model strings must enter the DOM as text"
