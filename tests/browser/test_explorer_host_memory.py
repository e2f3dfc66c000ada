"""The Explorer's memory pane draws host memory apart from HBM, in a real Chromium.

The ES module as the widget ships it, rendered with a fake model holding a real
``ExplorerWidget``'s state for a CPU program whose optimizer leaf is kept in pinned host memory
(tests/widgets/test_explorer_host_memory.py checks the payload's figures).
"""

from __future__ import annotations

import os

import pytest

from shardviz.widgets.explorer.widget import ExplorerWidget
from tests.browser.conftest import SKIP_ENV
from tests.browser.fake_model import mount_explorer as mount
from tests.render.report_fixtures import dp_report
from tests.widgets.test_explorer_host_memory import MU_SHARD, W_SHARD, host_step_report

pytestmark = pytest.mark.skipif(
    os.environ.get(SKIP_ENV) == "1", reason=f"{SKIP_ENV}=1: browser tests skipped on request"
)

#: A host leaf's key with markup in it: it must show as text.
NASTY_KEY = "<b>mu</b>"


def test_host_bars_and_words_appear_apart_from_hbm(viewer):
    report = host_step_report(NASTY_KEY)
    page = mount(viewer, ExplorerWidget(report, selected_device=3))
    pane = page.locator(".sv-x-mempane")
    assert pane.locator(".sv-x-hosttext").inner_text() == (
        "16 KiB in HBM · 8 KiB in host memory per device"
    )
    # The host bars: a chart of their own, labelled "host", one bar for every device (the
    # devices' bars are the same), its optimizer segment the leaf's shard bytes.
    chart = pane.locator("svg.sv-x-hostbars")
    assert chart.count() == 1
    assert chart.locator("text.sv-x-hostword").text_content() == "host"
    seg = chart.locator(".sv-x-hostseg")
    assert seg.count() == 1
    assert seg.get_attribute("data-role") == "optimizer"
    assert int(seg.get_attribute("data-bytes")) == MU_SHARD
    title = chart.locator(".sv-x-hostbar > title").text_content()
    assert "host memory 8 KiB (8,192 B) (not HBM)" in title
    assert "optimizer 8 KiB (8,192 B)" in title
    # The HBM bars leave the host leaf out: the argument part is the parameter's shard alone.
    hbm = pane.locator("svg.sv-x-membars:not(.sv-x-hostbars) .sv-x-seg[data-part='argument']")
    assert int(hbm.get_attribute("data-bytes")) == W_SHARD
    assert pane.locator(".sv-x-hosthead").inner_text() == (
        "Host memory per device (not HBM): 8 KiB (8,192 B): argument 8 KiB"
    )
    legend = pane.locator(".sv-x-hostmem .sv-x-legitem").all_inner_texts()
    assert [x.strip() for x in legend] == ["host · optimizer"]  # the roles held on host
    source = pane.locator(".sv-x-hostsource").inner_text()
    assert source.startswith("host figures: shardviz's accounting from the shardings'")
    # The leaf's name is text, not markup.
    leaf = pane.locator("tr.sv-x-hostleaf")
    assert leaf.count() == 1
    (host_leaf,) = [x.name for x in report.arguments if x.on_host]
    assert NASTY_KEY in host_leaf
    assert leaf.locator("td").first.text_content() == host_leaf
    assert pane.locator("tr.sv-x-hostleaf b").count() == 0
    assert leaf.get_attribute("data-memory") == "pinned_host"
    # The picked device's readout gives both memories.
    line = pane.locator(".sv-x-memline").inner_text()
    assert line.endswith(" · host 8 KiB: optimizer 8 KiB")
    viewer.assert_clean()


def test_no_host_memory_draws_no_host_bars(viewer):
    page = mount(viewer, ExplorerWidget(dp_report(), selected_device=3))
    assert page.locator(".sv-x-mempane svg.sv-x-membars").count() == 1
    assert page.locator(".sv-x-hostmem, .sv-x-hosttext, .sv-x-hostbars").count() == 0
    viewer.assert_clean()
