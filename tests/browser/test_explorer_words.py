"""The Explorer shows the words the static views print: spelled once, in Python.

The ES module (the shared helpers, then explorer.js, as the widget ships it) is rendered with a
fake model holding a real ``ExplorerWidget``'s state; every number, operand and device label it
shows must be the render helpers' own spelling, e.g. 3,407,872 bytes is ``3.2 MiB`` as in the
static HTML (a JS ``toFixed(1)`` said ``3.3 MiB``).
"""

from __future__ import annotations

import os

import pytest

from shardviz.model.units import format_bytes
from shardviz.render.geometry import devices_label
from shardviz.render.report.view import operand_str
from shardviz.widgets.explorer.widget import ExplorerWidget
from tests.browser.conftest import SKIP_ENV
from tests.browser.fake_model import mount_explorer as mount
from tests.render.report_fixtures import dp_report, shard_map_report

pytestmark = pytest.mark.skipif(
    os.environ.get(SKIP_ENV) == "1", reason=f"{SKIP_ENV}=1: browser tests skipped on request"
)


def test_ledger_memory_and_tiles_use_the_static_spelling(viewer):
    report = dp_report()
    page = mount(viewer, ExplorerWidget(report, selected_device=3, selected_array="arg:batch.x"))
    ledger = page.locator("tr.sv-x-coll")
    for row, c in zip(ledger.all(), report.collectives, strict=True):
        cells = row.locator("td").all_inner_texts()
        assert cells[4] == operand_str(c)
        assert cells[5] == format_bytes(c.in_bytes) and cells[6] == format_bytes(c.moved_bytes)
    temp = report.memory.temp_bytes
    assert f"temp {format_bytes(temp)} ·" in page.locator(".sv-x-memline").inner_text()
    labels = page.evaluate(
        "() => [...document.querySelectorAll('.sv-x-tile .sv-x-lbl')].map(e => e.textContent)"
    )
    leaf = report.arguments["batch.x"]
    want = [devices_label([t.device_id for t in group]) for group in leaf.distinct_tiles]
    assert labels == want
    viewer.assert_clean()


def test_operand_that_changes_shape_reads_as_in_the_static_views(viewer):
    report = shard_map_report()
    changed = [i for i, c in enumerate(report.collectives) if c.out_shape != c.in_shape]
    assert changed, "the fixture has a collective that changes its operand's shape"
    page = mount(viewer, ExplorerWidget(report, selected_collective=changed[0]))
    c = report.collectives[changed[0]]
    row = page.locator("tr.sv-x-coll").nth(changed[0])
    assert row.locator("td.sv-x-mono").inner_text() == operand_str(c)  # "… → [128, 32]"
    details = page.locator(".sv-x-details").inner_text()
    assert f"{format_bytes(c.in_bytes, exact=True)} in" in details
    viewer.assert_clean()


def test_selected_collective_says_why_the_partitioner_inserted_it(viewer):
    from tests.render.test_why_views import SUMMARY, _with_why

    report = _with_why()
    page = mount(viewer, ExplorerWidget(report, selected_collective=0))
    why = page.locator(".sv-x-details dd.sv-x-why").inner_text()
    assert "P('data', None) (partial sums over 'model') → P('data', None)" in why
    assert SUMMARY in why  # the markup in the words stays text
    viewer.assert_clean()


def test_header_names_the_kernels_not_counted(viewer):
    from tests.render.report_fixtures import NASTY, QUOTES, kernels_v5e_report, nasty_kernels_report

    report = kernels_v5e_report()
    assert report.estimate is not None
    page = mount(viewer, ExplorerWidget(report))
    notice = page.locator(".sv-x-header .sv-x-uncounted")
    assert notice.inner_text() == report.estimate.not_a_bound
    assert page.locator(".sv-x-estimate").get_attribute("data-bounded") == "0"
    assert "not a bound: 1 kernel not counted" in page.locator(".sv-x-estimate").inner_text()
    viewer.assert_clean()
    # A hostile kernel name stays text: shown as written, nothing parsed from it.
    page = mount(viewer, ExplorerWidget(nasty_kernels_report()))
    assert f"`k{NASTY}{QUOTES}` not counted" in page.locator(".sv-x-uncounted").inner_text()
    assert page.locator(".sv-x-uncounted script").count() == 0
    viewer.assert_clean()
