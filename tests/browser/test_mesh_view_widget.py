"""MeshView's ES module in a real Chromium, offline (layer 2 of docs' browser testing).

The module is loaded from a Blob URL with ``import()`` and its ``render({model, el})`` is called
with a small fake model (get/set/on/off/save_changes, every call recorded) holding the state a
real ``MeshView`` syncs. Then we click and assert on the DOM and on what was saved. The
``viewer`` fixture (tests/browser/conftest.py) fails a test on any request leaving the machine,
JS error or dialog.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import shardviz as sv
from shardviz.model import Device, MeshLayout
from shardviz.widgets import MeshView
from tests.browser.conftest import SKIP_ENV
from tests.browser.fake_model import mount_mesh_view as mount

pytestmark = pytest.mark.skipif(
    os.environ.get(SKIP_ENV) == "1", reason=f"{SKIP_ENV}=1: browser tests skipped on request"
)

HOSTILE = "<img src=x onerror=alert(1)>"


@pytest.fixture(scope="module")
def mesh():
    return sv.Mesh(range(8), (2, 4), ("data", "model"))


@pytest.fixture(scope="module")
def view(mesh):
    """A real MeshView of a 2x4 mesh and a (8, 16) array P('data', 'model')."""
    x = sv.mark_sharding(np.zeros((8, 16), np.float32), mesh, ("data", "model"), name="w")
    array = sv.layout(x, name="w")
    return MeshView(array.mesh, array)


def _calls(page):
    return page.evaluate("() => window.sv.calls.filter(c => c[0] !== 'on' && c[0] !== 'off')")


def _selected(page):
    return page.evaluate(
        "() => [...document.querySelectorAll('.sv-selected')]"
        ".map(e => e.classList.contains('sv-w-dev') ? 'device ' + e.dataset.device"
        " : 'tile ' + e.dataset.devices)"
    )


def test_renders_one_cell_per_device_and_one_tile_per_piece(viewer, view):
    page = mount(viewer, view)
    cells = page.locator(".sv-w-dev")
    assert cells.count() == 8
    assert [cells.nth(i).get_attribute("data-device") for i in range(8)] == [
        str(i) for i in range(8)
    ]
    for i in range(8):
        assert cells.nth(i).is_visible()
    tiles = page.locator(".sv-w-tile")
    assert tiles.count() == 8
    # The same colour as the static view, computed in Python.
    assert cells.nth(5).locator(".sv-w-fill").get_attribute("fill") == view.colors["5"]
    assert cells.nth(5).text_content().endswith("d5(1, 1)")
    text = page.locator(".sv-w-root").text_content()
    assert "data (2)" in text and "model (4)" in text
    assert "P('data', 'model')" in text
    assert _selected(page) == []
    viewer.screenshot("mesh_view")
    viewer.assert_clean()


def test_click_selects_device_and_highlights_its_tile(viewer, view):
    page = mount(viewer, view)
    page.locator('.sv-w-dev[data-device="5"]').click()
    assert _calls(page) == [["set", "selected_device", 5], ["save_changes"]]
    assert _selected(page) == ["device 5", "tile 5"]
    tile = page.locator(".sv-w-tile.sv-selected")
    assert tile.locator(".sv-w-lbl").text_content() == "d5"
    assert tile.locator("title").text_content().startswith("w[4:8, 4:8]\nshard (4, 4)")
    assert page.locator('.sv-w-dev[data-device="5"]').get_attribute("aria-pressed") == "true"

    # Clicking the selected device again clears the selection.
    page.locator('.sv-w-dev[data-device="5"]').click()
    assert _calls(page)[-2:] == [["set", "selected_device", -1], ["save_changes"]]
    assert _selected(page) == []
    viewer.assert_clean()


def test_keyboard_selects_too(viewer, view):
    page = mount(viewer, view)
    page.locator('.sv-w-dev[data-device="2"]').focus()
    page.keyboard.press("Enter")
    assert _calls(page) == [["set", "selected_device", 2], ["save_changes"]]
    assert _selected(page) == ["device 2", "tile 2"]
    viewer.assert_clean()


def test_selection_from_python_moves_the_highlight(viewer, view):
    page = mount(viewer, view)
    page.evaluate("() => window.sv.fromPython('selected_device', 3)")
    assert _selected(page) == ["device 3", "tile 3"]
    page.evaluate("() => window.sv.fromPython('selected_device', -1)")
    assert _selected(page) == []
    assert _calls(page) == [], "a change from Python must not be echoed back"
    viewer.assert_clean()


def test_replicated_tiles_highlight_on_every_holder(viewer, mesh):
    x = sv.mark_sharding(np.zeros((8, 16), np.float32), mesh, ("data", None), name="x")
    array = sv.layout(x, name="x")
    page = mount(viewer, MeshView(array.mesh, array))
    assert page.locator(".sv-w-tile").count() == 2
    page.locator('.sv-w-dev[data-device="6"]').click()
    assert _selected(page) == ["device 6", "tile 4 5 6 7"]
    viewer.assert_clean()


def test_nd_array_draws_two_dims_and_the_rest_as_panels(viewer):
    mesh = sv.Mesh(range(8), (2, 2, 2), ("a", "b", "c"))
    x = sv.mark_sharding(np.zeros((4, 8, 2), np.float32), mesh, ("a", "b", "c"), name="t")
    array = sv.layout(x, name="t")
    page = mount(viewer, MeshView(array.mesh, array))
    captions = page.locator(".sv-w-panel > figcaption").all_text_contents()
    assert captions == ["a=0", "a=1", "dim 0 = 0:2", "dim 0 = 2:4"]  # mesh panels, then tiles
    assert page.locator(".sv-w-tile").count() == 8
    assert page.locator(".sv-w-facts").first.text_content() == "one panel per a"
    page.locator('.sv-w-dev[data-device="5"]').click()
    assert _selected(page) == ["device 5", "tile 5"]
    viewer.assert_clean()


def test_cleanup_removes_every_listener(viewer, view):
    page = mount(viewer, view)
    page.evaluate("() => window.sv.cleanup()")
    left = page.evaluate(
        "() => Object.entries(window.sv.handlers).filter(([, fs]) => fs.length).map(([e]) => e)"
    )
    assert left == []
    page.locator('.sv-w-dev[data-device="1"]').click()
    assert _calls(page) == [], "a click after cleanup must not reach the model"
    viewer.assert_clean()


def test_hostile_names_render_as_text_and_run_nothing(viewer):
    mesh = MeshLayout((HOSTILE, "model"), (2, 4), tuple(Device(i) for i in range(8)))
    page = mount(viewer, MeshView(mesh))
    page.wait_for_timeout(200)  # room for an onerror that should never fire
    assert page.locator("img").count() == 0
    assert page.locator(".sv-w-axis").nth(1).text_content() == "↓ " + HOSTILE + " (2)"
    assert viewer.dialogs == []
    viewer.assert_clean()


def test_hostile_array_name_renders_as_text(viewer, mesh):
    x = sv.mark_sharding(np.zeros((8, 16), np.float32), mesh, ("data", "model"), name=HOSTILE)
    array = sv.layout(x, name=HOSTILE)
    page = mount(viewer, MeshView(array.mesh, array))
    page.wait_for_timeout(200)
    assert page.locator("img").count() == 0
    assert page.locator(".sv-w-name").inner_text() == HOSTILE
    viewer.assert_clean()
