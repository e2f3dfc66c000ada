"""Live and saved, the same picture: each widget draws the cells its static HTML draws.

For meshes of 1-4 axes (some long enough to be elided) and arrays of rank 0-4, the live
widget (its ES module rendered in Chromium with a fake model holding the widget's synced state)
and the static HTML (``MeshView.static_html()``; for the Explorer, the mesh's and the array's
``_repr_html_``) are read back from the DOM and compared: the same device cells with the same
labels, the same tiles with the same holders and labels, the same panels, the same elided
bands and panel gaps, the same ticks, axis titles and notes.
"""

from __future__ import annotations

import dataclasses
import os

import pytest

from shardviz.model import ArrayLayout, MeshLayout, TreeLayout
from shardviz.render.html import array_html, mesh_html, page
from shardviz.widgets import MeshView
from shardviz.widgets.explorer.widget import ExplorerWidget
from tests.browser.conftest import SKIP_ENV
from tests.browser.fake_model import mount_explorer, mount_mesh_view
from tests.render.fixtures import make_layout, make_mesh
from tests.render.report_fixtures import dp_report

pytestmark = pytest.mark.skipif(
    os.environ.get(SKIP_ENV) == "1", reason=f"{SKIP_ENV}=1: browser tests skipped on request"
)

#: Where each part of the picture is, in the static HTML (``sv-``) and in a widget (a prefix).
STATIC = {
    "device": ".sv-device",
    "tile": ".sv-tile",
    "label": ".sv-lbl",
    "sub": ".sv-sub",
    "panel_gap": "div.sv-elided",
    "band_gap": "g.sv-elided > title",
    "note": ".sv-note",
    "tick": "svg > text.sv-tick",
    "axis": "svg > text.sv-axis",
}


def live(prefix: str) -> dict[str, str]:
    return {
        "device": f".{prefix}-dev",
        "tile": f".{prefix}-tile",
        "label": f".{prefix}-lbl",
        "sub": f".{prefix}-sub",
        "panel_gap": f".{prefix}-gap",
        "band_gap": f"g.{prefix}-elided > title",
        "note": f".{prefix}-note",
        "tick": f"svg > text.{prefix}-tick",
        "axis": f"svg > text.{prefix}-axis",
    }


_READ_JS = """([root, s]) => {
  const scope = document.querySelector(root);
  const all = (sel, from = scope) => [...from.querySelectorAll(sel)];
  const text = (e, sel) => { const t = e.querySelector(sel); return t ? t.textContent : null; };
  return {
    devices: all(s.device).map(e => [e.dataset.device, text(e, s.label), text(e, s.sub)]),
    tiles: all(s.tile).map(e => [e.dataset.devices, text(e, s.label)]),
    panels: all("figcaption").map(e => e.textContent),
    panel_gaps: all(s.panel_gap).map(e => e.textContent),
    band_gaps: all(s.band_gap).map(e => e.textContent),
    notes: all(s.note).flatMap(e => e.innerText.split("\\n")).filter(line => line),
    ticks: all(s.tick).map(e => e.textContent),
    axes: all(s.axis).map(e => e.textContent),
  };
}"""


def read(page_, root: str, selectors: dict[str, str]) -> dict[str, list]:
    """The cells, panels, gaps and labels drawn inside ``root``."""
    return page_.evaluate(_READ_JS, [root, selectors])


def static_picture(viewer, html: str, root: str) -> dict[str, list]:
    viewer.page.set_content(page("static", [html]))
    return read(viewer.page, root, STATIC)


MESHES = {
    "1 axis": (("x",), (8,)),
    "1 axis, elided": (("x",), (40,)),
    "2 axes": (("data", "model"), (2, 4)),
    "2 axes, elided": (("data", "model"), (2, 64)),
    "3 axes": (("a", "b", "c"), (2, 2, 2)),
    "3 axes, panels elided": (("a", "b", "c"), (14, 2, 2)),
    "4 axes": (("a", "b", "c", "d"), (2, 2, 2, 2)),
}

#: (mesh, shape, spec) of an array of each rank.
ARRAYS = {
    "rank 0": ("2 axes", (), ()),
    "rank 1": ("1 axis", (16,), ("x",)),
    "rank 2": ("2 axes", (8, 16), ("data", "model")),
    "rank 2, elided": ("2 axes, elided", (64, 128), (None, "model")),
    "rank 3": ("3 axes", (4, 6, 8), ("a", "b", "c")),
    "rank 4": ("4 axes", (2, 4, 6, 8), ("a", "b", "c", "d")),
}


def mesh_of(name: str) -> MeshLayout:
    return make_mesh(*MESHES[name])


def array_of(name: str) -> ArrayLayout:
    mesh, shape, spec = ARRAYS[name]
    return make_layout("t", shape, spec, mesh_of(mesh))


def assert_same(live_: dict[str, list], static: dict[str, list]) -> None:
    for part, drawn in static.items():
        assert live_[part] == drawn, f"{part}: live {live_[part]} != static {drawn}"


@pytest.mark.parametrize("name", list(MESHES))
def test_mesh_view_draws_the_static_views_mesh(viewer, name):
    widget = MeshView(mesh_of(name))
    static = static_picture(viewer, widget.static_html(), ".sv-mesh")
    assert static["devices"], "the static view draws devices"
    shown = mount_mesh_view(viewer, widget)
    assert_same(read(shown, ".sv-w-mesh", live("sv-w")), static)
    viewer.assert_clean()


@pytest.mark.parametrize("name", list(ARRAYS))
def test_mesh_view_draws_the_static_views_array(viewer, name):
    layout = array_of(name)
    widget = MeshView(layout.mesh, layout)
    static = static_picture(viewer, widget.static_html(), ".sv-array")
    assert len(static["tiles"]) >= 1
    shown = mount_mesh_view(viewer, widget)
    assert_same(read(shown, ".sv-w-array", live("sv-w")), static)
    viewer.assert_clean()


def explorer_on(layout: ArrayLayout) -> ExplorerWidget:
    """An Explorer of a report on ``layout``'s mesh whose one argument is ``layout``."""
    report = dataclasses.replace(
        dp_report(), mesh=layout.mesh, arguments=TreeLayout((layout,)), outputs=TreeLayout(())
    )
    return ExplorerWidget(report, selected_array="arg:t")


@pytest.mark.parametrize("name", ["rank 0", "rank 2, elided", "rank 3", "rank 4"])
def test_explorer_draws_the_static_views_mesh_and_array(viewer, name):
    layout = array_of(name)
    static_mesh = static_picture(viewer, mesh_html(layout.mesh), ".sv-mesh")
    static_array = static_picture(viewer, array_html(layout), ".sv-array")
    shown = mount_explorer(viewer, explorer_on(layout))
    assert_same(read(shown, ".sv-x-meshpane", live("sv-x")), static_mesh)
    assert_same(read(shown, ".sv-x-array", live("sv-x")), static_array)
    viewer.assert_clean()


def test_the_comparison_can_fail(viewer):
    """A live picture that differs from the static one is caught (here: one device fewer)."""
    widget = MeshView(mesh_of("2 axes"))
    static = static_picture(viewer, widget.static_html(), ".sv-mesh")
    shown = mount_mesh_view(viewer, widget)
    shown.evaluate("() => document.querySelector('.sv-w-dev').remove()")
    with pytest.raises(AssertionError, match="devices"):
        assert_same(read(shown, ".sv-w-mesh", live("sv-w")), static)
    viewer.assert_clean()
