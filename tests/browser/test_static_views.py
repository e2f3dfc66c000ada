"""The static views in a real Chromium, offline: what a person sees on each self-contained page.

Real views from real shardviz calls on the test process's 8 fake CPU devices, written as files
(``page``, ``Report.save_html``, ``Comparison.save_html``) into ``test-artifacts/browser/``,
opened over ``file://``, asserted on, and screenshotted next to the page. Every test also checks
that no request left the machine and that no JS error or dialog happened (see conftest.py).
"""

from __future__ import annotations

import itertools

import jax
import numpy as np
import pytest

import shardviz as sv
from shardviz.render.html import page as html_page
from shardviz.strategies import mlp

D, H, B = 64, 256, 32


@pytest.fixture(scope="module")
def mesh():
    return sv.Mesh(range(8), (2, 4), ("data", "model"))


def _array_view(mesh, shape, spec, name):
    x = sv.mark_sharding(np.zeros(shape, np.float32), mesh, spec, name=name)
    return sv.layout(x, name=name)._repr_html_()


# An element's box in viewport pixels. For SVG shapes, the geometry without the stroke (the
# browser's own box adds half the 1px white stroke on each side, so touching tiles would "overlap").
_BOX_JS = """e => {
  if (e instanceof SVGGraphicsElement) {
    const b = e.getBBox(), m = e.getScreenCTM();
    return {x: m.a * b.x + m.c * b.y + m.e, y: m.b * b.x + m.d * b.y + m.f,
            width: b.width * m.a, height: b.height * m.d};
  }
  const r = e.getBoundingClientRect();
  return {x: r.x, y: r.y, width: r.width, height: r.height};
}"""


def _boxes(locator):
    items = [locator.nth(i) for i in range(locator.count())]
    assert all(it.bounding_box() is not None for it in items), "an element is not rendered"
    return [it.evaluate(_BOX_JS) for it in items]


def _overlap(a, b, tol=0.5):
    """Whether two boxes share more than a hairline."""
    dx = min(a["x"] + a["width"], b["x"] + b["width"]) - max(a["x"], b["x"])
    dy = min(a["y"] + a["height"], b["y"] + b["height"]) - max(a["y"], b["y"])
    return dx > tol and dy > tol


def _assert_visible_and_apart(locator, n):
    assert locator.count() == n
    for i in range(n):
        assert locator.nth(i).is_visible(), f"element {i} is not visible"
    boxes = _boxes(locator)
    for b in boxes:
        assert b["width"] > 1 and b["height"] > 1, b
    for (i, a), (j, b) in itertools.combinations(enumerate(boxes), 2):
        assert not _overlap(a, b), f"elements {i} and {j} overlap: {a} {b}"
    return boxes


def test_guard_blocks_and_records_remote_requests_and_errors(viewer):
    """The harness itself: a remote request is aborted and recorded, a JS error is caught."""
    page = viewer.page
    page.set_content(
        '<img src="http://198.51.100.7/pixel.png"><script>throw new Error("boom")</script>'
    )
    page.wait_for_timeout(100)
    assert any("198.51.100.7" in u for u in viewer.blocked), viewer.blocked
    assert any("boom" in e for e in viewer.errors), viewer.errors
    assert viewer.problems()
    viewer.blocked.clear()
    viewer.requests.clear()
    viewer.errors.clear()
    viewer.assert_clean()


def test_mesh_view_shows_every_device(viewer, mesh):
    path = viewer.write("mesh", html_page("2x4 mesh", [sv.layout(mesh)._repr_html_()]))
    page = viewer.open(path)
    devices = page.locator(".sv-device")
    boxes = _assert_visible_and_apart(devices, 8)
    ids = sorted(int(devices.nth(i).get_attribute("data-device")) for i in range(8))
    assert ids == list(range(8))
    # Two rows of four, as the mesh's shape says.
    assert len({round(b["y"]) for b in boxes}) == 2
    assert len({round(b["x"]) for b in boxes}) == 4
    assert page.locator(".sv-device", has_text="d7").is_visible()
    viewer.screenshot("mesh")
    viewer.assert_clean()


def test_tiled_2d_array_lays_out_eight_tiles_apart(viewer, mesh):
    html = _array_view(mesh, (64, 128), ("data", "model"), "w")
    page = viewer.open(viewer.write("array-2d-tiled", html_page("tiled", [html])))
    tiles = page.locator(".sv-tile")
    boxes = _assert_visible_and_apart(tiles, 8)
    assert len({round(b["y"]) for b in boxes}) == 2  # 'data' splits the rows in 2
    assert len({round(b["x"]) for b in boxes}) == 4  # 'model' splits the columns in 4
    holders = sorted(tiles.nth(i).get_attribute("data-devices") for i in range(8))
    assert holders == [str(d) for d in range(8)]
    viewer.screenshot("array-2d-tiled")
    viewer.assert_clean()


def test_partially_tiled_array_shows_two_tiles(viewer, mesh):
    html = _array_view(mesh, (64, 128), ("data", None), "x")
    page = viewer.open(viewer.write("array-2d-partial", html_page("partial", [html])))
    tiles = page.locator(".sv-tile")
    _assert_visible_and_apart(tiles, 2)
    holders = sorted(tiles.nth(i).get_attribute("data-devices") for i in range(2))
    assert holders == ["0 1 2 3", "4 5 6 7"]
    viewer.screenshot("array-2d-partial")
    viewer.assert_clean()


def test_4d_array_on_3d_mesh_shows_two_panels(viewer):
    mesh3 = sv.Mesh(range(8), (2, 2, 2), ("a", "b", "c"))
    html = _array_view(mesh3, (4, 6, 8, 10), ("a", "b", "c", None), "act")
    page = viewer.open(viewer.write("array-4d", html_page("4-D", [html])))
    panels = page.locator(".sv-panel")
    _assert_visible_and_apart(panels, 2)
    for i in range(2):  # each panel draws the 2 x 2 tiles of its slice of the third split dim
        _assert_visible_and_apart(panels.nth(i).locator(".sv-tile"), 4)
    viewer.screenshot("array-4d")
    viewer.assert_clean()


def test_hovering_a_tile_shows_its_devices_and_index(viewer, mesh):
    html = _array_view(mesh, (64, 128), ("data", "model"), "w")
    page = viewer.open(viewer.write("array-2d-hover", html_page("hover", [html])))
    tile = page.locator('.sv-tile[data-devices="6"]')
    rect = tile.locator("rect").first
    assert rect.evaluate("e => getComputedStyle(e).strokeWidth") == "1px"
    tile.hover()
    # The hover outline is drawn (CSS :hover), and the tooltip text is the tile's <title>.
    assert rect.evaluate("e => getComputedStyle(e).strokeWidth") == "2px"
    title = tile.locator("title").text_content()
    assert title.splitlines()[0] == "w[32:64, 64:96]", title
    assert "d6 (data=1, model=2)" in title
    assert "held by 1 device" in title
    viewer.screenshot("array-2d-hover")
    viewer.assert_clean()


@pytest.fixture(scope="module")
def dp_report(mesh):
    params = mlp.init_params(jax.random.key(0), D, H)
    batch = mlp.make_batch(jax.random.key(1), B, D)
    params = {k: sv.mark_sharding(v, mesh, (), name=k) for k, v in params.items()}
    batch = {k: sv.mark_sharding(v, mesh, ("data", None), name=k) for k, v in batch.items()}
    return sv.explain(mlp.train_step, params, batch, steps=1)


def test_report_page_ledger_and_group_map(viewer, dp_report, artifacts):
    report = dp_report
    assert report.collectives_of("all-reduce", ("data",)), str(report)
    page = viewer.open(report.save_html(str(artifacts / "report-dp.html")))
    rows = page.locator("details.sv-collective")
    assert rows.count() == len(report.collectives)
    for i in range(rows.count()):
        assert rows.nth(i).locator("summary").is_visible()
    # The first 'data' all-reduce whose row draws its device groups on the mesh.
    row = page.locator(
        'details.sv-collective[data-kind="all-reduce"][data-axes="data"]', has=page.locator("svg")
    ).first
    d0 = row.locator('.sv-gdev[data-device="0"]')
    d4 = row.locator('.sv-gdev[data-device="4"]')
    d1 = row.locator('.sv-gdev[data-device="1"]')
    assert row.evaluate("e => e.open") is False
    assert not d0.is_visible()  # closed: the group map is not shown
    row.locator("summary").click()
    assert row.evaluate("e => e.open") is True
    gdevs = row.locator(".sv-gdev")
    _assert_visible_and_apart(gdevs, 8)
    assert d0.get_attribute("data-group") is not None
    assert d0.get_attribute("data-group") == d4.get_attribute("data-group")
    assert d0.get_attribute("data-group") != d1.get_attribute("data-group")
    assert "d4" in d0.locator("title").text_content()  # "group g: d0, d4" (or a range)
    row.screenshot(path=str(artifacts / "report-dp-row.png"))
    viewer.screenshot("report-dp")
    viewer.assert_clean()


def test_comparison_page_shows_one_row_per_strategy(viewer, artifacts):
    comparison = sv.compare("mlp", ["dp", "zero3"], steps=1)
    page = viewer.open(comparison.save_html(str(artifacts / "compare-mlp.html")))
    rows = page.locator(".sv-strategy")
    assert rows.count() == 2
    assert [rows.nth(i).get_attribute("data-strategy") for i in range(2)] == ["dp", "zero3"]
    for i in range(2):
        assert rows.nth(i).is_visible()
    viewer.screenshot("compare-mlp")
    viewer.assert_clean()


def test_hostile_names_render_as_text_and_run_nothing(viewer):
    axis = "<img src=x onerror=alert(1)>"
    name = "<script>alert(1)</script>"
    hostile = sv.Mesh(range(8), (2, 4), (axis, "model"))
    x = sv.mark_sharding(np.zeros((8, 16), np.float32), hostile, (axis, "model"), name=name)
    tree = sv.layout_tree({name: x})
    sections = [
        sv.layout(hostile)._repr_html_(),
        sv.layout(x, name=name)._repr_html_(),
        tree._repr_html_(),
    ]
    page = viewer.open(viewer.write("hostile", html_page(name, sections)))
    page.wait_for_timeout(200)  # room for an onerror that should never fire
    assert viewer.dialogs == []
    assert page.locator("script").count() == 0
    assert page.locator("img").count() == 0
    assert page.title() == name
    head = page.locator(".sv-array .sv-head")
    assert head.is_visible() and name in head.inner_text()
    assert axis in page.locator(".sv-mesh .sv-head").inner_text()
    assert name in page.locator(".sv-tree td code").first.inner_text()
    assert page.locator(".sv-tile").count() == 8
    viewer.screenshot("hostile")
    viewer.assert_clean()
