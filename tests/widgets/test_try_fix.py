"""The Explorer's findings off the kernel's thread, and "try this fix" through the session: a
spec box, the mesh shape control, or the fixed program compiled (real compiles, 8 CPU devices)."""

from __future__ import annotations

import dataclasses
import threading

import pytest

import shardviz as sv
from shardviz.errors import MeshError, SpecError
from shardviz.model import Findings, Fix
from shardviz.model import findings as findings_module
from shardviz.widgets.controls import AS_GIVEN
from shardviz.widgets.explorer.findings_pane import findings_json
from shardviz.widgets.explorer.widget import ExplorerWidget
from shardviz.widgets.session import ExplorerSession, fixed_words
from tests.render.findings_fixtures import findings, megatron_with_findings
from tests.render.report_fixtures import megatron_report

from . import findings_programs
from .findings_programs import pane_said

WAIT = 120  # seconds: a ceiling against hangs, never a timing assertion


@pytest.fixture
def pending(monkeypatch):
    """``pending(work)``: a report whose fixes are not tried yet, and whose
    ``try_fixes()`` gives ``work()``'s findings (the test's own work, in place of compiles)."""
    works = {}

    def tried(report, stop=None):
        return dataclasses.replace(report, findings=works[report.findings.trial]())

    monkeypatch.setattr(findings_module, "_trier", [tried])

    def make(work):
        key = f"trial-{len(works)}"
        works[key] = work
        untried = Findings("mlp_block", untried=1, trial=key)
        return dataclasses.replace(megatron_report(), findings=untried)

    return make


def _state(explorer: ExplorerWidget) -> dict:
    return pane_said(explorer.findings)


def _kinds(explorer: ExplorerWidget) -> list[str]:
    return [i["kind"] for i in _state(explorer)["items"]]


def _settle(explorer) -> None:
    """Wait for the newest recompile and then for its findings."""
    assert explorer.wait(WAIT)
    assert explorer._diagnoser.join(WAIT)


def _try(explorer, kind: str) -> dict:
    """Click "try this fix" on the first finding of ``kind`` (the message a view sends)."""
    item = next(i for i in _state(explorer)["items"] if i["kind"] == kind)
    message = {"type": "try-fix", "generation": explorer.generation, "finding": item["index"]}
    explorer._handle_custom_msg(message, [])
    return item


# --------------------------------------------------------------------------------------------
# Findings are worked out off the kernel's thread


def test_fixes_are_tried_in_the_background_then_shown(pending):
    ran_on: list[threading.Thread] = []
    gate = threading.Event()

    def work() -> Findings:
        ran_on.append(threading.current_thread())
        assert gate.wait(WAIT)
        return findings()

    w = ExplorerWidget(pending(work))
    assert _state(w)["state"] == "pending"  # shown at once, nothing compiled on this thread
    gate.set()
    assert w._diagnoser.join(WAIT)
    assert ran_on and ran_on[0] is not threading.current_thread()
    assert not w.report.findings.pending  # the Explorer shows the tried report now
    assert w.findings == findings_json(w.report, w.generation)
    assert _state(w)["count_text"] == "3 findings: 1 error, 1 warning, 1 info"


def test_findings_of_a_report_no_longer_shown_never_land(pending):
    gate = threading.Event()

    def slow() -> Findings:
        assert gate.wait(WAIT)
        return findings()

    w = ExplorerWidget(pending(slow))
    w.show(megatron_with_findings(Findings("mlp_block")))  # ready: shown at once
    assert _state(w)["count_text"] == "no findings"
    gate.set()
    assert w._diagnoser.join(WAIT)
    assert _state(w)["count_text"] == "no findings" and _state(w)["generation"] == w.generation


def test_findings_that_fail_to_work_out_say_so_in_the_pane(pending):
    def broken() -> Findings:
        raise RuntimeError("the fixed program did not compile")

    w = ExplorerWidget(pending(broken))
    assert w._diagnoser.join(WAIT)
    state = _state(w)
    assert state["state"] == "error"
    assert "RuntimeError: the fixed program did not compile" in state["count_text"]


def test_the_notebook_display_does_not_wait_for_fixes_to_be_tried(pending):
    gate = threading.Event()
    w = ExplorerWidget(pending(lambda: gate.wait(WAIT) and findings()))
    html = w.static_html(wait=False)  # would block until the gate opens if it waited
    assert "fixes not tried yet" in html and 'class="sv-fitem"' not in html
    gate.set()
    assert w._diagnoser.join(WAIT)
    html = w.static_html()
    assert "fixes not tried yet" not in html and html.count('class="sv-fitem"') == 3


def test_selected_finding_is_checked_and_reset_by_a_new_report():
    w = ExplorerWidget(megatron_with_findings())
    w.selected_finding = 2
    with pytest.raises(
        Exception, match="selected_finding=3 is not a finding's position; valid: 0 to 2"
    ):
        w.selected_finding = 3
    w.show(megatron_with_findings())
    assert w.selected_finding == -1


def test_a_report_explorer_says_how_to_get_try_this_fix_and_survives_the_click():
    w = ExplorerWidget(megatron_with_findings())
    assert all(i["fix"] is None or i["route"] == "" for i in _state(w)["items"])
    with pytest.raises(TypeError, match=r"shardviz.Explorer\(fn, \*args\)"):
        w.try_fix(0)
    w._handle_custom_msg({"type": "try-fix", "generation": w.generation, "finding": 0}, [])
    assert w.status == "error" and "shardviz.Explorer(fn, *args)" in w.error
    w.error, w.status = "", ""
    w._handle_custom_msg({"type": "try-fix", "generation": w.generation - 1, "finding": 0}, [])
    assert w.error == "", "a click on a report no longer shown is ignored"


# --------------------------------------------------------------------------------------------
# "try this fix" on a function


def test_a_spec_fix_goes_into_its_box_and_the_recompile_loses_the_finding():
    fn, args = findings_programs.replicated_weight()
    e = sv.Explorer(fn, *args)
    _settle(e)
    item = _try(e, "replicated")
    assert item["route"] == "box"
    assert e.controls.spec_boxes["params/w3"].value == "P('data', None)"
    _settle(e)
    assert "replicated" not in _kinds(e)
    assert e.report.arguments["params/w3"].spec == (("data",), ())
    assert e.changes.startswith("since the last configuration: ")
    assert "peak 648 KiB → 424 KiB" in e.changes  # w3's 7/8 of 256 KiB less per device
    assert e.fixed == "" and e.status == "done" and e.error == ""


def test_a_mesh_fix_sets_the_mesh_shape():
    fn, args = findings_programs.idle_axis()
    e = sv.Explorer(fn, *args)
    _settle(e)
    assert _try(e, "idle-axis")["route"] == "mesh"
    assert e.controls.mesh_shape.value == (1, 8)
    _settle(e)
    assert dict(e.report.mesh.shape) == {"data": 1, "model": 8}
    assert "idle-axis" not in _kinds(e)
    assert e.changes.startswith("since the last configuration: the same collectives")


def test_a_dropped_constraint_is_compiled_as_the_fixed_program_and_a_control_goes_back():
    fn, args = findings_programs.there_and_back()
    e = sv.Explorer(fn, *args)
    _settle(e)
    assert len(e.report.collectives) == 3
    item = _try(e, "reshard-chain")
    assert item["route"] == "program"
    _settle(e)
    assert "reshard-chain" not in _kinds(e)
    assert not e.report.ran  # compile-only: the fixed program's arguments are abstract
    fix = e.connection.program.fixes[0]
    assert fix.kind == "drop-constraint"
    assert e.fixed == fixed_words((fix,))
    assert e.fixed.startswith("showing the fixed program, not your code")
    assert fix.description in e.fixed
    assert "−all-gather over ('data',), −all-gather over ('model',)" in e.changes
    # Any control change shows the user's own program again.
    e.controls.spec_boxes["x"].value = "P('data', 'model')"
    _settle(e)
    assert e.fixed == "" and e.connection.program is None and e.report.ran


def test_a_fix_that_cannot_be_applied_is_an_inline_error():
    fn, args = findings_programs.there_and_back()
    e = sv.Explorer(fn, *args)
    _settle(e)
    bogus = Fix("drop-constraint", "remove a constraint", "# delete", line="/nowhere.py:1")
    e.connection.try_fix(dataclasses.replace(e.report.findings[0], fix=bogus))
    assert e.wait(WAIT)
    assert e.status == "error" and e.error.startswith("try this fix: shardviz cannot apply")
    assert "make the change in your code: # delete" in e.error
    assert len(e.report.collectives) == 3  # still the last program shown


# --------------------------------------------------------------------------------------------
# The controls' side


def test_apply_spec_under_a_strategy_types_the_strategys_specs_then_the_fix():
    fn, args = findings_programs.replicated_weight()
    controls = ExplorerSession(fn, *args).controls()
    controls.strategy.value = "dp"
    before = {p: b.value for p, b in controls.spec_boxes.items()}
    seen = []
    controls.on_change(seen.append)
    controls.apply_spec("params/w3", ("data", None))
    assert controls.strategy.value == AS_GIVEN
    after = {p: b.value for p, b in controls.spec_boxes.items()}
    assert after == {**before, "params/w3": "P('data', None)"}
    assert seen and seen[-1].specs["params/w3"] == ("data", None)
    assert "the other boxes keep strategy 'dp'" in controls.note.value
    with pytest.raises(SpecError, match="no spec box controls 'params/w9'"):
        controls.apply_spec("params/w9", ())
    with pytest.raises(MeshError, match=r"mesh shape \(3, 2\) has 6 devices, not 8"):
        controls.apply_mesh_shape((3, 2))
