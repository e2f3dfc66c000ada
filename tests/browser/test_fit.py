"""Views that fit (issue 12, section 5): at 1280 px with Lab's file browser open, the Explorer's
notebook area is about 800-1000 px wide; nothing in a pane may stick out past the pane's edge
(a tile cut off, a call chain clipped). The Explorer's module is mounted with a real compile's
state (``fake_model.mount_explorer``) in a page of that width, and every element's box is
measured against its pane's.
"""

from __future__ import annotations

import os

import pytest

import shardviz as sv
from shardviz.model.schedule import gpipe
from shardviz.render.html import page
from shardviz.render.schedule.html import schedule_html
from shardviz.widgets.explorer.widget import ExplorerWidget
from tests.browser.conftest import SKIP_ENV
from tests.browser.fake_model import mount_explorer
from tests.fixtures import user_llama
from tests.live_reports import megatron_mlp_report

pytestmark = pytest.mark.skipif(
    os.environ.get(SKIP_ENV) == "1", reason=f"{SKIP_ENV}=1: browser tests skipped on request"
)

#: Every element whose box ends past its pane's right edge (more than a pixel), and panes that
#: scroll sideways: what a person would see cut off.
_OVERFLOW_JS = """(panes) => {
  const out = [];
  for (const pane of document.querySelectorAll(panes)) {
    const edge = pane.getBoundingClientRect().right;
    if (pane.scrollWidth > pane.clientWidth + 1)
      out.push(`${pane.className} scrolls: ${pane.scrollWidth} px in ${pane.clientWidth} px`);
    for (const e of pane.querySelectorAll("*")) {
      const r = e.getBoundingClientRect();
      if (r.width > 0 && r.right > edge + 1) {
        const cls = typeof e.className === "string" ? e.className : e.className.baseVal;
        out.push(`${e.tagName}.${cls} ends ${Math.round(r.right - edge)} px past ` +
                 `${pane.className}: ${(e.textContent || "").slice(0, 40)}`);
      }
    }
  }
  return out;
}"""
PANES = ".sv-x-root, .sv-x-pane"


@pytest.fixture(scope="module")
def report():
    return megatron_mlp_report()


def _pick_array(page, name: str) -> None:
    picker = page.locator(".sv-x-pick")
    value = next(
        v for v in picker.locator("option").evaluate_all("os => os.map(o => o.value)") if name in v
    )
    picker.select_option(value)


@pytest.mark.parametrize("width", [800, 880, 1000])
def test_no_element_is_wider_than_its_pane(viewer, report, width):
    viewer.page.set_viewport_size({"width": width, "height": 900})
    page = mount_explorer(viewer, ExplorerWidget(report))
    page.locator("tr.sv-x-coll").first.click()  # the details, with the full call chain
    assert page.locator(".sv-x-details").count() == 1
    assert page.evaluate(_OVERFLOW_JS, PANES) == []
    # The array pane stands beside the mesh at these widths: its picture scales to fit.
    grid = page.locator("svg.sv-x-grid").first
    pane = page.locator(".sv-x-arraypane")
    assert grid.bounding_box()["width"] <= pane.bounding_box()["width"] + 1
    viewer.screenshot(f"fit-explorer-{width}")
    viewer.assert_clean()


def test_the_ledgers_source_and_call_chain_wrap_inside_the_pane(viewer, report):
    viewer.page.set_viewport_size({"width": 800, "height": 900})
    page = mount_explorer(viewer, ExplorerWidget(report))
    src = page.locator("td.sv-x-src").first
    chain = src.locator(".sv-x-chain")
    wrap = page.locator(".sv-x-ledgerwrap")
    assert chain.count() == 1
    right = wrap.bounding_box()["x"] + wrap.bounding_box()["width"]
    for box in (src.bounding_box(), chain.bounding_box()):
        assert box["x"] + box["width"] <= right + 1
    assert wrap.evaluate("e => e.scrollWidth <= e.clientWidth + 1")
    viewer.assert_clean()


def test_a_saved_reports_open_ledger_row_fits_at_800_px(viewer, report, tmp_path):
    """An expanded ledger row of the static report wraps its source line, call chain and
    facts instead of running past the report's edge."""
    viewer.page.set_viewport_size({"width": 800, "height": 900})
    path = tmp_path / "report.html"
    report.save_html(str(path))
    viewer.page.goto(path.as_uri())
    for details in viewer.page.locator("details.sv-collective").all():
        details.evaluate("d => { d.open = true; }")
    assert viewer.page.evaluate(_OVERFLOW_JS, ".sv-report") == []
    viewer.screenshot("fit-static-report-800")
    viewer.assert_clean()


#: Elements past the root's right edge that no box of their own scrolls (``sv-cmp-scroll``),
#: and such boxes taller than the window (their scrollbar out of view).
_CUT_JS = """(scroller) => {
  const root = document.querySelector('.sv-root');
  const edge = root.getBoundingClientRect().right;
  const out = [];
  if (root.scrollWidth > root.clientWidth + 1)
    out.push(`root scrolls: ${root.scrollWidth} px in ${root.clientWidth} px`);
  for (const e of root.querySelectorAll('*')) {
    const r = e.getBoundingClientRect();
    if (r.width > 0 && r.right > edge + 1 && !e.closest(scroller))
      out.push(`${e.tagName} ends ${Math.round(r.right - edge)} px past the root`);
  }
  for (const box of root.querySelectorAll(scroller))
    if (box.scrollWidth > box.clientWidth + 1 && box.getBoundingClientRect().height > innerHeight)
      out.push(`a box taller than the window scrolls sideways: ${box.className}`);
  return out;
}"""


def test_a_comparison_fits_an_820_px_output(viewer, tmp_path):
    """Notebook 03's comparison in JupyterLab's output column at 1280 px (about 820 px): the
    wide tables scroll in boxes of their own, with their scrollbar right under them."""
    viewer.page.set_viewport_size({"width": 820, "height": 900})
    c = sv.compare("mlp", ["dp", "zero1", "zero2", "zero3"], batch=1024, steps=1)
    path = tmp_path / "compare.html"
    c.save_html(str(path))
    viewer.page.goto(path.as_uri())
    assert viewer.page.evaluate(_CUT_JS, ".sv-cmp-scroll") == []
    viewer.screenshot("fit-compare-820")
    viewer.assert_clean()


def test_a_big_models_ledger_fits_an_820_px_output(viewer):
    """The issue's own model (a plain-jax Llama, 274 state leaves, at its small size): its
    operands, axes and source lines wrap, so the Explorer's ledger does not scroll sideways."""
    step, state, batch = user_llama.make(user_llama.SMALL)
    report = sv.explain(step, state, batch, run=False)
    viewer.page.set_viewport_size({"width": 820, "height": 900})
    page = mount_explorer(viewer, ExplorerWidget(report))
    wrap = page.locator(".sv-x-ledgerwrap")
    assert wrap.evaluate("e => e.scrollWidth <= e.clientWidth + 1")
    assert page.evaluate(_OVERFLOW_JS, ".sv-x-ledgerwrap") == []
    viewer.screenshot("fit-explorer-llama-820")
    viewer.assert_clean()


def test_a_long_pipeline_schedule_fits_an_820_px_output(viewer, tmp_path):
    """GPipe over 8 stages and 32 microbatches is about 1,000 px of slots: the chart scrolls
    in a box of its own, its scrollbar right under it."""
    viewer.page.set_viewport_size({"width": 820, "height": 900})
    path = tmp_path / "schedule.html"
    path.write_text(page("schedule", [schedule_html(gpipe(8, 32))]), encoding="utf-8")
    viewer.page.goto(path.as_uri())
    assert viewer.page.evaluate(_CUT_JS, ".sv-sched-scroll") == []
    box = viewer.page.locator(".sv-sched-scroll").first
    assert box.evaluate("e => e.scrollWidth > e.clientWidth")  # it does scroll, in its box
    viewer.assert_clean()


def test_a_ledger_rows_source_line_is_one_line_with_the_whole_on_hover(viewer, report, tmp_path):
    """The static ledger's source cell shows the line's code on one line (cut with an
    ellipsis), the whole line in its title, instead of wrapping it over several lines."""
    viewer.page.set_viewport_size({"width": 800, "height": 900})
    path = tmp_path / "report.html"
    report.save_html(str(path))
    viewer.page.goto(path.as_uri())
    lines = viewer.page.locator(".sv-lrow .sv-srcline")
    assert lines.count() > 0
    for i in range(lines.count()):
        line = lines.nth(i)
        assert line.get_attribute("title")
        assert line.evaluate("e => getComputedStyle(e).whiteSpace") == "nowrap"
        height = line.evaluate("e => e.getBoundingClientRect().height")
        one = line.evaluate("e => parseFloat(getComputedStyle(e).lineHeight) || 16")
        assert height <= one * 1.5
    viewer.assert_clean()
