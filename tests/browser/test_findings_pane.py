"""The Explorer's Findings pane in a real Chromium, offline: picking a finding lights up its
collectives, arrays and devices in the other panes, and "try this fix" recompiles.

As in test_explorer_widget.py, the ES module is rendered with a fake model holding a real
``ExplorerWidget``'s state. For "try this fix" a real Python side answers: the message the view
sends is handed to the widget (``_handle_custom_msg``, what the kernel does), the background
recompile and its findings are waited for, and the widget's new state is pushed to the page
as Python's changes (``fromPython``). The ``viewer`` fixture fails a test on any request
leaving the machine, JS error or dialog. The last test does it all in real JupyterLab.
"""

from __future__ import annotations

import dataclasses
import json
import os

import nbformat
import pytest

import shardviz as sv
from shardviz.model import Finding, FindingCost, Findings, Where
from shardviz.model.findings import PROGRAM_FINDING_KINDS
from shardviz.render.findings.view import check_rows
from shardviz.widgets.explorer.widget import ExplorerWidget
from tests.browser.conftest import SKIP_ENV
from tests.browser.fake_model import EXPLORER_SYNCED, mount_module
from tests.explainer.diagnose import planted
from tests.render.findings_fixtures import megatron_with_findings, nasty_findings
from tests.render.report_fixtures import NASTY, dp_report
from tests.widgets import findings_programs

from .jupyterlab import LabPage, lab  # noqa: F401 -- the session's JupyterLab server

pytestmark = pytest.mark.skipif(
    os.environ.get(SKIP_ENV) == "1", reason=f"{SKIP_ENV}=1: browser tests skipped on request"
)

WAIT = 120  # seconds: a ceiling against hangs, never a timing assertion
#: The traits the front end reads, the Findings pane's with them.
SYNCED = (*EXPLORER_SYNCED, "findings", "selected_finding", "fixed", "changes", "stale")


def mount(viewer, widget: ExplorerWidget):
    state = widget.get_state()
    return mount_module(viewer, "explorer", {k: state[k] for k in SYNCED})


def _calls(page):
    return page.evaluate("() => window.sv.calls.filter(c => !['on', 'off', 'send'].includes(c[0]))")


def _sent(page):
    return page.evaluate("() => window.sv.calls.filter(c => c[0] === 'send').map(c => c[1])")


def _attrs(page, selector, attr):
    return page.evaluate(
        "([s, a]) => [...document.querySelectorAll(s)].map(e => e.getAttribute(a))",
        [selector, attr],
    )


def _to_python(page, widget: ExplorerWidget) -> None:
    """The view's trait changes and custom messages, handled by the widget as the kernel does."""
    for call in page.evaluate("() => window.sv.calls.splice(0)"):
        if call[0] == "set" and call[1] in ("selected_finding", "selected_array"):
            setattr(widget, call[1], call[2])
        elif call[0] == "send":
            widget._handle_custom_msg(call[1], [])


def _from_python(page, widget: ExplorerWidget) -> None:
    """Push every synced trait that changed in Python to the page, as the kernel would."""
    state = widget.get_state()
    page.evaluate(
        """state => { for (const [k, v] of Object.entries(state)) {
             if (window.sv.state[k] !== v) window.sv.fromPython(k, v); } }""",
        {k: state[k] for k in SYNCED},
    )


def _settle(widget) -> None:
    assert widget.wait(WAIT)
    assert widget._diagnoser.join(WAIT)


def test_picking_a_finding_lights_up_its_collectives_and_values(viewer):
    report = planted.reshard_chain()  # compiled for real
    w = ExplorerWidget(report)
    assert w._diagnoser.join(WAIT)
    page = mount(viewer, w)
    f = report.findings.of("reshard-chain")[0]
    index = report.findings.items.index(f)
    heads = page.locator(".sv-x-fhead")
    assert heads.count() == len(report.findings)
    assert page.locator(".sv-x-fcount").inner_text() == "3 findings: 3 warnings"
    assert page.locator(".sv-x-fbody").count() == 0  # closed until picked
    assert page.locator(".sv-x-flagged").count() == 0

    heads.nth(index).click()
    first = f.where.collectives[0] - 1
    assert _calls(page) == [
        ["set", "selected_finding", index],
        ["set", "selected_array", f"mid:{f.where.leaf}"],
        ["set", "selected_collective", first],
        ["save_changes"],
    ]
    flagged_rows = _attrs(page, "tr.sv-x-coll.sv-x-flagged", "data-index")
    assert flagged_rows == [str(n - 1) for n in f.where.collectives] == ["0", "1"]
    values = [f"mid:{v}" for v in f.where.values]  # sin.0 (the leaf) and mul.1
    assert _attrs(page, ".sv-x-fchip", "data-array") == values
    assert _attrs(page, ".sv-x-pick option.sv-x-flagged", "value") == values
    assert _attrs(page, ".sv-x-fchip.sv-selected", "data-array") == [values[0]]
    assert page.locator(".sv-x-dev.sv-x-flagged").count() == 0  # no devices named
    # Its first collective's details show, with why the partitioner inserted it.
    assert page.locator(".sv-x-details").get_attribute("data-index") == str(first)
    body = page.locator(".sv-x-fbody")
    assert body.locator(".sv-x-why").inner_text() == f.why
    assert body.locator("pre.sv-x-fixcode").inner_text() == f.fix.code
    rows = check_rows(f.check)
    assert _attrs(page, "tr.sv-x-barow", "data-row") == [r.key for r in rows]
    changed = [r.key for r in rows if r.before != r.after]
    assert _attrs(page, 'tr.sv-x-barow[data-changed="1"]', "data-row") == changed
    # An Explorer built from a report has no function to recompile: it says how to get one.
    assert page.locator(".sv-x-tryfix").count() == 0
    assert "shardviz.Explorer(fn, *args)" in body.locator(".sv-x-tryline").inner_text()
    viewer.screenshot("explorer-findings")

    page.locator(".sv-x-fchip").nth(1).click()  # a chip picks its array
    assert _calls(page)[-2:] == [["set", "selected_array", values[1]], ["save_changes"]]
    assert _attrs(page, ".sv-x-fchip.sv-selected", "data-array") == [values[1]]

    heads.nth(index).click()  # again: none
    assert _calls(page)[-2:] == [["set", "selected_finding", -1], ["save_changes"]]
    assert page.locator(".sv-x-flagged").count() == 0 and page.locator(".sv-x-fbody").count() == 0
    viewer.assert_clean()


def test_a_findings_devices_light_up_on_the_mesh_and_the_memory_bars(viewer):
    f = Finding(
        kind="imbalance",
        severity="warning",
        title="devices 2 and 3 hold more",
        why="because",
        cost=FindingCost("memory", 4096),
        where=Where(collectives=(1, 3), devices=(2, 3)),
    )
    report = dataclasses.replace(dp_report(), findings=Findings("train_step", (f,)))
    w = ExplorerWidget(report, selected_finding=0)
    payload = json.loads(w.payload)  # one bar per device (dp_report's are all alike)
    payload["memory"]["bytes"][2][0] += 4096
    payload["memory"]["same"] = ""
    w.payload = json.dumps(payload)
    page = mount(viewer, w)
    assert _attrs(page, ".sv-x-dev.sv-x-flagged", "data-device") == ["2", "3"]
    assert sorted(_attrs(page, ".sv-x-mem.sv-x-flagged", "data-device")) == ["2", "3"]
    assert _attrs(page, "tr.sv-x-coll.sv-x-flagged", "data-index") == ["0", "2"]
    assert page.locator(".sv-x-fchip").count() == 0  # no arrays named: no chips
    sev = page.locator(".sv-x-fhead .sv-x-sev")
    assert sev.inner_text() == "warning"
    assert sev.evaluate("e => getComputedStyle(e).color") == "rgb(125, 78, 0)"  # #7d4e00
    viewer.assert_clean()


def test_no_findings_is_one_collapsed_badge_and_pending_says_so(viewer):
    w = ExplorerWidget(megatron_with_findings(Findings("mlp_block")))
    page = mount(viewer, w)
    pane = page.locator(".sv-x-findpane")
    assert pane.get_attribute("class").split()[-1] == "sv-x-collapsed"
    assert pane.locator(".sv-x-fcount").inner_text() == "no findings"
    assert (
        pane.locator(".sv-x-fcount")
        .get_attribute("title")
        .startswith(f"checked for {len(PROGRAM_FINDING_KINDS)} kinds")
    )
    assert page.locator(".sv-x-finding").count() == 0
    page.evaluate(
        "t => window.sv.fromPython('findings', t)",
        w.findings.replace('"state":"done"', '"state":"pending"'),
    )
    assert page.locator('.sv-x-fcount[data-state="pending"]').count() == 1
    viewer.assert_clean()


def test_hostile_finding_strings_render_as_text(viewer):
    page = mount(
        viewer, ExplorerWidget(megatron_with_findings(nasty_findings()), selected_finding=0)
    )
    assert page.locator(".sv-x-ftitle").inner_text() == f"title {NASTY}"
    assert page.locator(".sv-x-fbody .sv-x-why").inner_text() == f"why {NASTY}"
    assert page.locator("pre.sv-x-fixcode").inner_text() == f"code {NASTY}"
    assert f"note {NASTY}" in page.locator(".sv-x-fnotes").inner_text()
    assert page.locator(".sv-x-findpane script").count() == 0
    assert page.evaluate("() => window.__pwned === undefined")
    viewer.assert_clean()


def _click_try(page, kind: str) -> None:
    page.locator(f'.sv-x-finding[data-kind="{kind}"] .sv-x-fhead').click()
    button = page.locator(".sv-x-tryfix")
    button.click()
    assert button.inner_text() == "trying…" and button.is_disabled()


def test_try_this_fix_in_a_box_recompiles_and_the_finding_is_gone(viewer):
    fn, args = findings_programs.replicated_weight()
    e = sv.Explorer(fn, *args)
    assert e._diagnoser.join(WAIT)
    page = mount(viewer, e)
    assert page.locator('.sv-x-finding[data-kind="replicated"]').count() == 1
    _click_try(page, "replicated")
    (message,) = [m for m in _sent(page) if m["type"] == "try-fix"]
    assert message["generation"] == e.generation
    _to_python(page, e)
    assert e.controls.spec_boxes["params/w3"].value == "P('data', None)"
    _settle(e)
    _from_python(page, e)
    assert page.locator('.sv-x-finding[data-kind="replicated"]').count() == 0
    assert page.locator(".sv-x-fcount").inner_text() == "no findings"
    changes = page.locator(".sv-x-changes").inner_text()
    assert changes.startswith("since the last configuration: ")
    assert "peak 648 KiB → 424 KiB" in changes
    assert page.locator(".sv-x-fixed").is_hidden()
    assert page.locator('.sv-x-status[data-status="done"]').count() == 1
    viewer.assert_clean()


def test_try_this_fix_as_a_fixed_program_shows_the_badge(viewer):
    fn, args = findings_programs.there_and_back()
    e = sv.Explorer(fn, *args)
    assert e._diagnoser.join(WAIT)
    page = mount(viewer, e)
    assert page.locator("tr.sv-x-coll").count() == 3
    _click_try(page, "reshard-chain")
    _to_python(page, e)
    _settle(e)
    _from_python(page, e)
    assert page.locator('.sv-x-finding[data-kind="reshard-chain"]').count() == 0
    assert page.locator("tr.sv-x-coll").count() == len(e.report.collectives) == 1
    badge = page.locator(".sv-x-fixed")
    assert badge.is_visible()
    assert badge.inner_text().startswith("showing the fixed program, not your code")
    assert "remove the sharding constraint at" in badge.inner_text()
    assert "−all-gather over ('model',)" in page.locator(".sv-x-changes").inner_text()
    viewer.assert_clean()


def test_a_fix_that_fails_shows_inline_and_the_button_comes_back(viewer):
    fn, args = findings_programs.there_and_back()
    e = sv.Explorer(fn, *args)
    assert e._diagnoser.join(WAIT)
    page = mount(viewer, e)
    _click_try(page, "reshard-chain")
    page.evaluate(  # a message Python cannot act on: a finding that is not there
        "() => window.sv.calls.forEach(c => { if (c[0] === 'send') c[1].finding = 99; })"
    )
    _to_python(page, e)
    _from_python(page, e)
    error = page.locator(".sv-x-error")
    assert error.is_visible() and "there is no finding 99" in error.inner_text()
    button = page.locator(".sv-x-tryfix")  # the pane redrawn: the button is ready again
    assert button.inner_text() == "try this fix" and button.is_enabled()
    viewer.assert_clean()


# --------------------------------------------------------------------------------------------
# End to end in real JupyterLab: the click travels through the kernel and back


def test_try_this_fix_in_jupyterlab(lab, viewer, tmp_path):  # noqa: F811
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(
            "import shardviz as sv\nsv.use_cpu_devices(8)\n"
            "from tests.widgets.findings_programs import replicated_weight\n"
            "fn, args = replicated_weight()"
        ),
        nbformat.v4.new_code_cell("# view: explorer\nexplorer = sv.Explorer(fn, *args)\nexplorer"),
    ]
    path = tmp_path / "findings_fix.ipynb"
    nbformat.write(nb, path)
    page = LabPage(lab, viewer.page, path).open()
    try:
        page.run_all()
        cell = page.cell_tagged("explorer")
        finding = cell.locator('.sv-x-finding[data-kind="replicated"]')
        finding.wait_for(timeout=120_000)  # worked out in the background, then synced
        finding.locator(".sv-x-fhead").click()
        chip = cell.locator('.sv-x-fchip[data-array="arg:params/w3"]')
        chip.wait_for(timeout=10_000)
        assert cell.locator(".sv-x-fchip").count() == 1
        cell.locator(".sv-x-tryfix").click()
        # The kernel types the spec into the box, recompiles, and the finding is gone.
        cell.locator(".sv-x-changes", has_text="since the last configuration").wait_for(
            timeout=120_000
        )
        cell.locator('.sv-x-fcount[data-state="done"]', has_text="no findings").wait_for(
            timeout=120_000
        )
        assert cell.locator('.sv-x-finding[data-kind="replicated"]').count() == 0
        box = cell.locator(".widget-text:has([title^='params/w3:'])").locator("input")
        assert box.input_value() == "P('data', None)"
        page.run_cell_with(
            "assert explorer.report.arguments['params/w3'].spec == (('data',), ())\nprint('fixed')"
        )
        assert "fixed" in viewer.page.locator(".jp-Notebook .jp-CodeCell").last.inner_text()
        viewer.assert_clean()
    finally:
        lab.delete_sessions()
