"""The Explorer at the scale of a user's Llama step (issue 27): 274 state leaves, hundreds of
intermediates and a ledger of hundreds of collectives, in a real Chromium, offline.

The array picker groups leaves by module path (parameters first) and a filter narrows it by
a part of the name or a glob (``layers/*/wq``); the ledger filters its rows by collective kind
and by mesh axes. Every expected count is computed here in Python from the report and its
payload, never written down. The module is mounted with ``fake_model.mount_explorer``.
"""

from __future__ import annotations

import json
import os
import re

import pytest

import shardviz as sv
from shardviz.widgets.explorer.widget import ExplorerWidget
from tests.browser.conftest import SKIP_ENV
from tests.browser.fake_model import mount_explorer
from tests.fixtures import user_llama

pytestmark = pytest.mark.skipif(
    os.environ.get(SKIP_ENV) == "1", reason=f"{SKIP_ENV}=1: browser tests skipped on request"
)

GLOB = "layers/*/wq"
#: What the glob means: ``*`` within one path component, anywhere in the name, any case.
GLOB_RE = re.compile(r"layers/[^/]*/wq", re.IGNORECASE)

#: The values of the picker's options a person can see (the option and its group shown).
_SHOWN_JS = """() => [...document.querySelectorAll('.sv-x-pick option')]
  .filter(o => !o.hidden && !o.parentElement.hidden).map(o => o.value)"""
#: The ledger positions of the rows a person can see.
_ROWS_JS = """() => [...document.querySelectorAll('tr.sv-x-coll')]
  .filter(r => !r.hidden && r.offsetParent !== null).map(r => Number(r.dataset.index))"""


@pytest.fixture(scope="module")
def built():
    """The step, its state and batch, and ``explain(run=False)``'s report."""
    step, state, batch = user_llama.make(user_llama.SMALL)
    return state, sv.explain(step, state, batch, run=False)


@pytest.fixture(scope="module")
def report(built):
    return built[1]


@pytest.fixture(scope="module")
def payload(report) -> dict:
    return json.loads(ExplorerWidget(report).payload)


def _calls(page):
    """Trait changes the view made (custom messages to Python left out)."""
    return page.evaluate("() => window.sv.calls.filter(c => !['on', 'off', 'send'].includes(c[0]))")


def _from_python(page, name, value):
    page.evaluate("([k, v]) => window.sv.fromPython(k, v)", [name, value])


def _count(shown: int, total: int, what: str) -> str:
    return f"{shown:,} of {total:,} {what}"


def _axes_label(axes) -> str:
    """Axes as the ledger's axes column writes them."""
    return ", ".join(axes) if axes else "(no mesh axis)"


def test_the_picker_groups_leaves_by_module_path_parameters_first(viewer, report, payload):
    page = mount_explorer(viewer, ExplorerWidget(report))
    labels = page.locator(".sv-x-pick optgroup").evaluate_all("gs => gs.map(g => g.label)")
    # Every argument's module path is a group, in order of first appearance, the paths with
    # a `params` component first; then the outputs' groups and the intermediates.
    paths = list(dict.fromkeys(leaf.name.rsplit("/", 1)[0] for leaf in report.arguments))
    params = [p for p in paths if "params" in p.split("/")]
    others = [p for p in paths if "params" not in p.split("/")]
    assert params and labels[: len(paths)] == params + others
    assert labels[0] == "state/params" and labels[1] == "state/params/layers/0"
    assert labels[-1].startswith("intermediates (")
    assert page.locator(".sv-x-pick option").count() == len(payload["arrays"])
    # An option reads by its leaf's own name (its group says the path), the path on hover.
    option = page.locator('.sv-x-pick option[value="arg:state/params/layers/3/wq"]')
    assert option.inner_text().startswith("wq · ")
    assert option.get_attribute("title") == "state/params/layers/3/wq"
    group = option.locator("xpath=..")
    assert group.get_attribute("label") == "state/params/layers/3"
    total = len(payload["arrays"])
    assert page.locator(".sv-x-pickcount").inner_text() == _count(total, total, "shown")
    viewer.screenshot("explorer-scale")
    viewer.assert_clean()


def test_a_glob_narrows_the_picker_to_every_layers_wq(viewer, built, report, payload):
    state, _ = built
    w = ExplorerWidget(report)
    page = mount_explorer(viewer, w)
    picked = w.selected_array
    page.locator(".sv-x-filter").fill(GLOB)

    layers = len(state["params"]["layers"])
    args = [leaf.name for leaf in report.arguments if GLOB_RE.search(leaf.name)]
    assert len(args) == 3 * layers  # the weight, Adam's mu and nu, in every layer
    arrays = {a["id"]: a for a in payload["arrays"]}
    order = [payload["arrays"][k]["id"] for g in payload["picker"] for k in g["arrays"]]
    expected = [i for i in order if GLOB_RE.search(arrays[i]["name"])]
    shown = page.evaluate(_SHOWN_JS)
    assert shown == expected
    assert {f"arg:{name}" for name in args} <= set(shown)
    outputs = [leaf.name for leaf in report.outputs if GLOB_RE.search(leaf.name)]
    mids = [i for i in expected if i.startswith("mid:")]
    assert len(shown) == len(args) + len(outputs) + len(mids)
    count = page.locator(".sv-x-pickcount").inner_text()
    assert count == _count(len(expected), len(payload["arrays"]), "shown")
    # Groups left with nothing to show hide; filtering sends nothing to Python.
    hidden = page.locator(".sv-x-pick optgroup[hidden]").count()
    assert hidden == sum(
        1 for g in payload["picker"] if not any(i in expected for i in _ids(payload, g))
    )
    assert _calls(page) == []
    assert page.locator(".sv-x-pick").input_value() == picked  # still picked, though hidden

    # Any case; `*` stays within one component; a plain part of a name; empty shows all.
    page.locator(".sv-x-filter").fill(GLOB.upper())
    assert page.evaluate(_SHOWN_JS) == expected
    page.locator(".sv-x-filter").fill("state/*/embed")
    one = [i for i in order if re.search(r"state/[^/]*/embed", arrays[i]["name"])]
    assert one == ["arg:state/params/embed"]  # not Adam's state/opt/0/mu/embed
    assert page.evaluate(_SHOWN_JS) == one
    page.locator(".sv-x-filter").fill("mu/layers/0/")
    assert page.evaluate(_SHOWN_JS) == [i for i in order if "mu/layers/0/" in i]
    page.locator(".sv-x-filter").fill("")
    assert page.evaluate(_SHOWN_JS) == order
    viewer.assert_clean()


def _ids(payload, group) -> list[str]:
    return [payload["arrays"][k]["id"] for k in group["arrays"]]


def test_picking_a_filtered_leaf_draws_its_tiles(viewer, report):
    w = ExplorerWidget(report)
    page = mount_explorer(viewer, w)
    page.locator(".sv-x-filter").fill(GLOB)
    ident = "arg:state/opt/0/mu/layers/5/wq"
    assert ident in page.evaluate(_SHOWN_JS)
    page.locator(".sv-x-pick").select_option(ident)
    assert _calls(page) == [["set", "selected_array", ident], ["save_changes"]]

    w.selected_array = ident  # what Python does with the pick: its tiles in `array`
    _from_python(page, "array", w.array)
    leaf = report.arguments[ident.removeprefix("arg:")]
    assert page.locator(".sv-x-loading").count() == 0
    assert page.locator(".sv-x-name").inner_text() == leaf.name
    assert page.locator(".sv-x-spec").inner_text() == w.array_layout.spec_str
    assert page.locator(".sv-x-tile").count() == w.array_layout.num_distinct_tiles
    # The filter stays as typed, the picked leaf among what it shows.
    assert page.locator(".sv-x-filter").input_value() == GLOB
    assert page.locator(".sv-x-pick").input_value() == ident
    assert ident in page.evaluate(_SHOWN_JS)
    viewer.assert_clean()


def test_the_ledger_filters_by_kind_and_by_axes(viewer, report, payload):
    page = mount_explorer(viewer, ExplorerWidget(report))
    collectives = payload["collectives"]
    total = len(collectives)
    assert total > 100
    kinds = list(dict.fromkeys(c["kind"] for c in collectives))
    axes = list(dict.fromkeys(tuple(c["axes"]) for c in collectives))
    options = page.locator(".sv-x-lkind option").evaluate_all("os => os.map(o => o.text)")
    assert options == ["all kinds", *kinds]
    options = page.locator(".sv-x-laxes option").evaluate_all("os => os.map(o => o.text)")
    assert options == ["all axes", *(_axes_label(a) for a in axes)]
    count = page.locator(".sv-x-lcount")
    assert count.inner_text() == _count(total, total, "rows")

    kind = "all-gather"
    page.locator(".sv-x-lkind").select_option(label=kind)
    rows = [c["index"] for c in collectives if c["kind"] == kind]
    assert page.evaluate(_ROWS_JS) == rows
    assert count.inner_text() == _count(len(rows), total, "rows")
    assert set(page.locator("tr.sv-x-coll:visible .sv-x-pill").all_inner_texts()) == {kind}

    both = ("data",)
    page.locator(".sv-x-laxes").select_option(label=_axes_label(both))
    rows = [c["index"] for c in collectives if c["kind"] == kind and tuple(c["axes"]) == both]
    assert rows and page.evaluate(_ROWS_JS) == rows
    assert count.inner_text() == _count(len(rows), total, "rows")

    page.locator(".sv-x-lkind").select_option(label="all kinds")
    page.locator(".sv-x-laxes").select_option(label=_axes_label(()))
    rows = [c["index"] for c in collectives if not c["axes"]]
    assert rows and page.evaluate(_ROWS_JS) == rows
    assert count.inner_text() == _count(len(rows), total, "rows")
    texts = set(page.locator("tr.sv-x-coll:visible td.sv-x-axes").all_inner_texts())
    assert texts == {"(no mesh axis)"}
    assert _calls(page) == []  # filtering is the view's own: nothing goes to Python
    viewer.assert_clean()


def test_a_selected_row_the_filter_hides_stays_selected(viewer, report, payload):
    page = mount_explorer(viewer, ExplorerWidget(report))
    first = payload["collectives"][0]
    row = page.locator(f'tr.sv-x-coll[data-index="{first["index"]}"]')
    row.click()
    assert _calls(page) == [["set", "selected_collective", first["index"]], ["save_changes"]]
    other = next(c["kind"] for c in payload["collectives"] if c["kind"] != first["kind"])
    page.locator(".sv-x-lkind").select_option(label=other)
    assert row.is_hidden()
    assert page.evaluate("() => window.sv.state.selected_collective") == first["index"]
    assert page.locator(".sv-x-details").get_attribute("data-index") == str(first["index"])
    page.locator(".sv-x-lkind").select_option(label="all kinds")
    assert row.is_visible() and row.get_attribute("aria-pressed") == "true"
    assert len(_calls(page)) == 2
    viewer.assert_clean()


def test_filters_survive_a_redraw_of_the_same_report_and_reset_for_a_new_one(
    viewer, report, payload
):
    w = ExplorerWidget(report)
    page = mount_explorer(viewer, w)
    page.locator(".sv-x-filter").fill(GLOB)
    page.locator(".sv-x-lkind").select_option(label="all-to-all")
    shown, rows = page.evaluate(_SHOWN_JS), page.evaluate(_ROWS_JS)
    assert len(rows) == sum(1 for c in payload["collectives"] if c["kind"] == "all-to-all")

    _from_python(page, "payload", w.payload)  # the same generation, drawn again
    assert page.locator(".sv-x-filter").input_value() == GLOB
    assert page.locator(".sv-x-lkind").input_value() == "all-to-all"
    assert (page.evaluate(_SHOWN_JS), page.evaluate(_ROWS_JS)) == (shown, rows)

    _from_python(page, "generation", w.generation + 1)  # a new report: every filter off
    _from_python(page, "payload", w.payload)
    assert page.locator(".sv-x-filter").input_value() == ""
    assert page.locator(".sv-x-lkind").input_value() == ""
    assert len(page.evaluate(_SHOWN_JS)) == len(payload["arrays"])
    assert len(page.evaluate(_ROWS_JS)) == len(payload["collectives"])
    viewer.assert_clean()
