"""Explorer's ES module in a real Chromium, offline: the four panes and the links between them.

As for MeshView (test_mesh_view_widget.py): the module is loaded from a Blob URL and its
``render({model, el})`` is called with a fake model (get/set/on/off/save_changes, every call
recorded) holding the state a real ``Explorer`` syncs. What Python would answer (the tiles of a
newly picked array, a new strategy's payload) is pushed with ``fromPython``, and the prefetch
batches a real ``Explorer`` sends (its ``send`` captured) with ``fromPythonMsg``. The ``viewer``
fixture fails a test on any request leaving the machine, JS error or dialog.
"""

from __future__ import annotations

import dataclasses
import json
import os

import pytest

from shardviz.widgets.explorer.payload import array_json
from shardviz.widgets.explorer.widget import ExplorerWidget
from tests.browser.conftest import SKIP_ENV
from tests.browser.fake_model import mount_explorer as mount
from tests.live_reports import megatron_mlp_report
from tests.render.compare_fixtures import comparison
from tests.render.report_fixtures import NASTY, nasty_report, shard_map_report
from tests.render.test_folding import layered_report

pytestmark = pytest.mark.skipif(
    os.environ.get(SKIP_ENV) == "1", reason=f"{SKIP_ENV}=1: browser tests skipped on request"
)

HOSTILE = "<img src=x onerror=alert(1)>"
WAIT = 30  # seconds: a ceiling against hangs, never a timing assertion


@pytest.fixture(scope="module")
def report():
    """A real compile: the Megatron MLP step on a 2x4 ('data', 'model') mesh."""
    return megatron_mlp_report()


def _calls(page):
    """Trait changes the view made (custom messages to Python are in ``_sent``)."""
    return page.evaluate("() => window.sv.calls.filter(c => !['on', 'off', 'send'].includes(c[0]))")


def _sent(page):
    """The custom messages the view sent to Python, in order."""
    return page.evaluate("() => window.sv.calls.filter(c => c[0] === 'send').map(c => c[1])")


def _from_python(page, name, value):
    page.evaluate("([k, v]) => window.sv.fromPython(k, v)", [name, value])


def _message_from_python(page, content):
    page.evaluate("c => window.sv.fromPythonMsg(c)", content)


def prefetched(widget: ExplorerWidget) -> list[dict]:
    """The batches ``widget`` sends when a view asks for its current generation's arrays."""
    sent: list[dict] = []
    widget.send = sent.append  # no kernel here: keep what would go to the front end
    widget._handle_custom_msg({"type": "prefetch", "generation": widget.generation}, [])
    assert widget._prefetcher.join(WAIT)
    return sent


def _prefetch_state(page) -> str | None:
    return page.locator(".sv-x-root").get_attribute("data-prefetch")


def _attrs(page, selector, attr):
    return page.evaluate(
        "([s, a]) => [...document.querySelectorAll(s)].map(e => e.getAttribute(a))",
        [selector, attr],
    )


def test_renders_the_four_panes_from_a_real_report(viewer, report):
    w = ExplorerWidget(report)
    page = mount(viewer, w)
    assert page.locator(".sv-x-dev").count() == 8
    assert page.locator("tr.sv-x-coll").count() == len(report.collectives)
    # Megatron's bars are all alike: one bar, said once (issue 12), not 8 identical ones.
    assert page.locator(".sv-x-mem").count() == 0 and page.locator(".sv-x-memall").count() == 1
    assert page.locator(".sv-x-memsame").inner_text() == "same on every device (8 devices)"
    n_arrays = len(report.arguments) + len(report.outputs) + len(report.intermediates)
    assert page.locator(".sv-x-pick option").count() == n_arrays
    assert page.locator(".sv-x-pick").input_value() == w.selected_array
    layout = w.array_layout
    assert page.locator(".sv-x-tile").count() == layout.num_distinct_tiles
    assert page.locator(".sv-x-fn").inner_text() == report.function
    assert page.locator(".sv-x-error").is_hidden()
    assert page.locator(".sv-x-strategy").count() == 0  # a single report has no selector
    for name in ("Mesh", "Arrays", "Collectives", "Memory per device"):
        assert page.locator("h4", has_text=name).count() == 1
    viewer.screenshot("explorer")
    viewer.assert_clean()


def test_click_device_lights_its_tiles_memory_and_collectives(viewer, report):
    w = ExplorerWidget(report, selected_array="arg:params/w1")
    page = mount(viewer, w)
    page.locator('.sv-x-dev[data-device="5"]').click()
    assert _calls(page) == [["set", "selected_device", 5], ["save_changes"]]
    assert page.locator('.sv-x-dev[data-device="5"]').get_attribute("aria-pressed") == "true"
    holders = {t.key for t in w.array_layout.tiles if t.device_id == 5}
    selected = _attrs(page, ".sv-x-tile.sv-selected", "data-devices")
    assert len(selected) == len(holders) == 1
    assert "5" in selected[0].split()
    assert page.locator(".sv-x-memline").inner_text().startswith("d5: argument")
    involved = [str(i) for i, c in enumerate(report.collectives) if any(5 in g for g in c.groups)]
    assert involved, "every Megatron collective should reach device 5"
    assert _attrs(page, "tr.sv-x-coll.sv-x-involved", "data-index") == involved
    assert "d5 (data=1, model=1)" in page.locator(".sv-x-devline").inner_text()
    assert page.locator(".sv-x-tileline").inner_text().startswith("d5 holds params/w1[")

    page.locator('.sv-x-dev[data-device="5"]').click()  # again: clears
    assert _calls(page)[-2:] == [["set", "selected_device", -1], ["save_changes"]]
    assert page.locator(".sv-x-tile.sv-selected").count() == 0
    assert page.locator("tr.sv-x-involved").count() == 0
    viewer.assert_clean()


def _uneven(widget: ExplorerWidget) -> ExplorerWidget:
    """The widget with device 2's bar taller than the rest, so each device gets its own bar."""
    payload = json.loads(widget.payload)
    payload["memory"]["bytes"][2][0] += 4096
    payload["memory"]["same"] = ""
    widget.payload = json.dumps(payload)
    return widget


def test_click_memory_bar_selects_its_device(viewer, report):
    page = mount(viewer, _uneven(ExplorerWidget(report)))
    assert page.locator(".sv-x-mem").count() == 8 and page.locator(".sv-x-memsame").count() == 0
    page.locator('.sv-x-mem[data-device="2"] .sv-x-memhit').click(force=True)
    assert _calls(page) == [["set", "selected_device", 2], ["save_changes"]]
    assert _attrs(page, ".sv-x-dev.sv-selected", "data-device") == ["2"]
    assert page.locator(".sv-x-memline").inner_text().startswith("d2: argument")
    viewer.assert_clean()


def test_click_ledger_row_outlines_groups_and_shows_source(viewer, report):
    page = mount(viewer, ExplorerWidget(report))
    k = next(i for i, c in enumerate(report.collectives) if c.reshard)
    c = report.collectives[k]
    page.locator(f'tr.sv-x-coll[data-index="{k}"]').click()
    assert _calls(page) == [["set", "selected_collective", k], ["save_changes"]]
    assert page.locator(f'tr.sv-x-coll[data-index="{k}"]').get_attribute("aria-pressed") == "true"
    # Each device carries its group's number, and each group has its own outline colour.
    expected = {str(d): str(g) for g, ids in enumerate(c.groups) for d in ids}
    shown = dict(
        zip(
            _attrs(page, ".sv-x-dev", "data-device"),
            _attrs(page, ".sv-x-dev", "data-group"),
            strict=True,
        )
    )
    assert shown == expected
    strokes = page.evaluate(
        "() => [...document.querySelectorAll('.sv-x-dev')].map(e => "
        "[e.dataset.group, getComputedStyle(e.querySelector('.sv-x-ring')).stroke])"
    )
    by_group = {}
    for g, stroke in strokes:
        assert stroke, "a device in a group has an outline"
        by_group.setdefault(g, set()).add(stroke)
    assert all(len(s) == 1 for s in by_group.values())
    assert len({next(iter(s)) for s in by_group.values()}) == len(c.groups)

    details = page.locator(".sv-x-details").inner_text()
    assert c.source.location in details
    for f in c.source.frames:
        assert f.function in details
    assert c.reshard in details
    assert page.locator(".sv-x-legitem[data-group]").count() == len(c.groups)

    page.locator(".sv-x-goto").click()  # "show its tiles": picks the resharded intermediate
    assert _calls(page)[-2:] == [["set", "selected_array", f"mid:{c.reshard}"], ["save_changes"]]
    viewer.assert_clean()


def test_permute_draws_an_arrow_per_pair(viewer):
    r = shard_map_report()
    page = mount(viewer, ExplorerWidget(r))
    k = next(i for i, c in enumerate(r.collectives) if c.kind == "collective-permute")
    page.locator(f'tr.sv-x-coll[data-index="{k}"]').click()
    pairs = sorted(_attrs(page, ".sv-x-arrow", "data-pair"))
    assert pairs == sorted(f"{a} {b}" for a, b in r.collectives[k].pairs)
    assert page.locator(".sv-x-dev.sv-x-out").count() == 0  # every device sends
    page.locator(f'tr.sv-x-coll[data-index="{k}"]').click()
    assert page.locator(".sv-x-arrow").count() == 0
    viewer.assert_clean()


def test_ring_and_all_to_all_traffic_are_drawn_when_selected(viewer):
    r = shard_map_report()
    page = mount(viewer, ExplorerWidget(r))
    k = next(i for i, c in enumerate(r.collectives) if c.kind == "all-reduce")
    page.locator(f'tr.sv-x-coll[data-index="{k}"]').click()
    links = sorted(_attrs(page, ".sv-x-tarrow", "data-link"))
    assert links == sorted(
        f"{g[i]} {g[(i + 1) % len(g)]}" for g in r.collectives[k].groups for i in range(len(g))
    )
    details = page.locator(".sv-x-details").inner_text()
    assert "ring of 4" in details and "= 24 KiB per device" in details
    k = next(i for i, c in enumerate(r.collectives) if c.kind == "all-to-all")
    page.locator(f'tr.sv-x-coll[data-index="{k}"]').click()
    assert page.locator(".sv-x-tarrow").count() == 2 * 4 * 3  # two groups of 4: n * (n - 1) each
    page.locator(f'tr.sv-x-coll[data-index="{k}"]').click()
    assert page.locator(".sv-x-tarrow").count() == 0
    viewer.assert_clean()


def test_pick_array_saves_it_and_draws_what_python_sends(viewer, report):
    w = ExplorerWidget(report)
    page = mount(viewer, w)
    target = next(s for s in report.intermediates if s.spec is not None and any(s.spec))
    ident = f"mid:{target.name}"
    page.locator(".sv-x-pick").select_option(ident)
    assert _calls(page) == [["set", "selected_array", ident], ["save_changes"]]
    assert page.locator(".sv-x-loading").count() == 1

    _from_python(page, "array", array_json(report, ident))  # what Explorer's observer sends
    w.selected_array = ident
    assert page.locator(".sv-x-loading").count() == 0
    assert page.locator(".sv-x-tile").count() == w.array_layout.num_distinct_tiles
    assert page.locator(".sv-x-spec").inner_text() == target.spec_str
    assert "computed from the spec" in page.locator(".sv-x-array").inner_text()
    viewer.assert_clean()


def test_hover_text_gives_index_devices_and_bytes(viewer, report):
    w = ExplorerWidget(report, selected_array="arg:params/w1")
    page = mount(viewer, w)
    t = w.array_layout.distinct_tiles[0][0]
    titles = page.evaluate(
        "() => [...document.querySelectorAll('.sv-x-tile > title')].map(e => e.textContent)"
    )
    first = titles[0]
    index = "[" + ", ".join(f"{s.start}:{s.stop}" for s in t.index) + "]"
    assert first.startswith(f"params/w1{index}")
    assert f"({t.nbytes:,} B)" in first
    assert f"d{t.device_id} (data=" in first
    viewer.assert_clean()


def test_spec_less_intermediate_shows_a_message(viewer):
    r = shard_map_report()
    page = mount(viewer, ExplorerWidget(r, selected_array="mid:add.2"))
    assert page.locator(".sv-x-tile").count() == 0
    assert "no named sharding" in page.locator(".sv-x-message").inner_text()
    viewer.assert_clean()


def test_strategy_select_saves_and_python_swaps_the_report(viewer):
    c = comparison()
    w = ExplorerWidget(c)
    page = mount(viewer, w)
    pick = page.locator(".sv-x-strategy")
    assert pick.input_value() == "dp"
    assert page.locator(".sv-x-strategy option").count() == len(c.results)
    pick.select_option("tp")
    assert _calls(page) == [["set", "selected_strategy", "tp"], ["save_changes"]]

    w.selected_strategy = "tp"  # what Python does on that message, then sends the new state
    for k in ("payload", "array", "selected_array"):
        _from_python(page, k, getattr(w, k))
    tp = c.result("tp").report
    assert page.locator(".sv-x-fn").inner_text() == tp.function
    assert page.locator("tr.sv-x-coll").count() == len(tp.collectives)
    assert page.locator(".sv-x-strategy").input_value() == "tp"
    viewer.assert_clean()


def test_a_wrong_box_says_the_panes_show_the_last_valid_configuration(viewer, report):
    page = mount(viewer, ExplorerWidget(report, status="done"))
    status = page.locator(".sv-x-status")
    assert status.inner_text() == "done" and page.locator(".sv-x-staleline").is_hidden()
    _from_python(page, "stale", "fix params/w1: unknown mesh axis 'modle'")
    assert status.inner_text() == "showing the last valid configuration"
    assert status.get_attribute("data-status") == "stale"
    line = page.locator(".sv-x-staleline")
    assert line.inner_text() == "fix params/w1: unknown mesh axis 'modle'"
    _from_python(page, "stale", "")
    assert status.inner_text() == "done" and line.is_hidden()
    assert _calls(page) == []
    viewer.assert_clean()


def test_a_recompile_says_what_changed(viewer, report):
    w = ExplorerWidget(report)
    page = mount(viewer, w)
    assert page.locator(".sv-x-changes").is_hidden()
    fewer = dataclasses.replace(report, collectives=report.collectives[1:])
    w.show(fewer)
    _from_python(page, "changes", w.changes)
    line = page.locator(".sv-x-changes")
    assert line.inner_text().startswith("since the last configuration: −")
    assert "moved per device" in line.inner_text() and "peak" in line.inner_text()
    viewer.assert_clean()


def test_status_and_error_render_as_text(viewer, report):
    page = mount(viewer, ExplorerWidget(report))
    assert page.locator(".sv-x-status").is_hidden()
    _from_python(page, "status", "compiling")
    assert page.locator(".sv-x-status").inner_text() == "compiling…"
    _from_python(page, "status", "error")
    _from_python(page, "error", f"CompileError: {HOSTILE}\n  at step")
    page.wait_for_timeout(200)  # room for an onerror that should never fire
    box = page.locator(".sv-x-error")
    assert box.is_visible()
    assert HOSTILE in box.inner_text()
    assert page.locator("img").count() == 0
    _from_python(page, "error", "")
    _from_python(page, "status", "done")
    assert box.is_hidden()
    assert page.locator(".sv-x-status").inner_text() == "done"
    assert _calls(page) == [], "a change from Python must not be echoed back"
    viewer.assert_clean()


def test_selection_from_python_moves_every_highlight(viewer, report):
    page = mount(viewer, ExplorerWidget(report))
    _from_python(page, "selected_device", 3)
    _from_python(page, "selected_collective", 0)
    assert _attrs(page, ".sv-x-dev.sv-selected", "data-device") == ["3"]
    assert page.locator(".sv-x-memline").inner_text().startswith("d3: argument")
    assert _attrs(page, "tr.sv-x-coll.sv-selected", "data-index") == ["0"]
    assert page.locator(".sv-x-details").get_attribute("data-index") == "0"
    _from_python(page, "selected_collective", -1)
    assert page.locator(".sv-x-dev[data-group]").count() == 0
    assert _calls(page) == []
    viewer.assert_clean()


def test_keyboard_selects_devices_and_rows(viewer, report):
    page = mount(viewer, ExplorerWidget(report))
    page.locator('.sv-x-dev[data-device="1"]').focus()
    page.keyboard.press("Enter")
    page.locator('tr.sv-x-coll[data-index="0"]').focus()
    page.keyboard.press(" ")
    assert _calls(page) == [
        ["set", "selected_device", 1],
        ["save_changes"],
        ["set", "selected_collective", 0],
        ["save_changes"],
    ]
    viewer.assert_clean()


def test_hostile_names_render_as_text_and_run_nothing(viewer):
    r = nasty_report()
    page = mount(viewer, ExplorerWidget(r))
    page.locator("tr.sv-x-coll").first.click()
    page.wait_for_timeout(200)
    assert page.evaluate("() => document.querySelectorAll('script').length") == 0
    assert page.evaluate("() => document.querySelectorAll('img').length") == 0
    assert page.locator(".sv-x-fn").inner_text() == r.function
    details = page.locator(".sv-x-details").inner_text()
    assert r.collectives[0].source.location in details
    assert NASTY in page.locator(".sv-x-pick").inner_text()
    assert viewer.dialogs == []
    viewer.assert_clean()


def test_cleanup_removes_every_listener(viewer, report):
    page = mount(viewer, ExplorerWidget(report))
    page.evaluate("() => window.sv.cleanup()")
    left = page.evaluate(
        "() => Object.entries(window.sv.handlers).filter(([, fs]) => fs.length).map(([e]) => e)"
    )
    assert left == []
    page.locator('.sv-x-dev[data-device="1"]').click()
    page.locator("tr.sv-x-coll").first.click()
    assert _calls(page) == [], "a click after cleanup must not reach the model"
    viewer.assert_clean()


# --------------------------------------------------------------------------------------------
# Prefetched arrays


def _spec_intermediates(report):
    return [s for s in report.intermediates if s.spec is not None and any(s.spec)]


def test_a_prefetched_array_draws_at_once_and_pythons_answer_is_not_redrawn(viewer, report):
    w = ExplorerWidget(report)
    page = mount(viewer, w)
    assert _sent(page) == [{"type": "prefetch", "generation": w.generation}]
    assert _prefetch_state(page) == "pending"
    for msg in prefetched(w):
        _message_from_python(page, msg)
    assert _prefetch_state(page) == "done"

    target = _spec_intermediates(report)[0]
    ident = f"mid:{target.name}"
    page.locator(".sv-x-pick").select_option(ident)
    # Drawn from what was prefetched: no `array` trait has arrived, no "computing tiles…".
    assert _calls(page) == [["set", "selected_array", ident], ["save_changes"]]
    assert page.locator(".sv-x-loading").count() == 0
    w.selected_array = ident
    assert page.locator(".sv-x-tile").count() == w.array_layout.num_distinct_tiles
    assert page.locator(".sv-x-spec").inner_text() == target.spec_str
    page.locator('.sv-x-dev[data-device="5"]').click()  # the readout reads the drawn array
    assert page.locator(".sv-x-tileline").inner_text().startswith(f"d5 holds {target.name}[")

    # Python's answer to the pick carries the same JSON text: the pane is not drawn again.
    page.evaluate("() => { document.querySelector('.sv-x-array').dataset.mark = 'kept'; }")
    _from_python(page, "array", w.array)
    assert page.locator('.sv-x-array[data-mark="kept"]').count() == 1
    assert page.locator(".sv-x-tile").count() == w.array_layout.num_distinct_tiles
    assert _sent(page) == [{"type": "prefetch", "generation": w.generation}]
    viewer.assert_clean()


def test_a_stale_prefetch_is_dropped_and_an_uncached_pick_waits_for_python(viewer, report):
    w = ExplorerWidget(report)
    page = mount(viewer, w)
    old = prefetched(w)
    w.show(report)  # a recompile: a new generation, the same payload
    assert w.generation != old[0]["generation"]
    _from_python(page, "generation", w.generation)
    assert _sent(page)[-1] == {"type": "prefetch", "generation": w.generation}
    for msg in old:  # still on the wire when the new report arrived
        _message_from_python(page, msg)
    assert _prefetch_state(page) == "pending"

    first, second = (f"mid:{s.name}" for s in _spec_intermediates(report)[:2])
    page.locator(".sv-x-pick").select_option(first)
    assert page.locator(".sv-x-loading").count() == 1  # not drawn from the stale batch
    w.selected_array = first
    _from_python(page, "array", w.array)
    assert page.locator(".sv-x-loading").count() == 0
    assert page.locator(".sv-x-tile").count() == w.array_layout.num_distinct_tiles

    page.locator(".sv-x-pick").select_option(second)
    assert page.locator(".sv-x-loading").count() == 1
    for msg in prefetched(w):  # the current generation's batches arrive before the answer
        _message_from_python(page, msg)
    assert _prefetch_state(page) == "done"
    assert page.locator(".sv-x-loading").count() == 0
    w.selected_array = second
    assert page.locator(".sv-x-tile").count() == w.array_layout.num_distinct_tiles
    viewer.assert_clean()


def test_forgotten_and_unsent_arrays_are_picked_through_python(viewer, report):
    w = ExplorerWidget(report)
    page = mount(viewer, w)
    batches = prefetched(w)
    kept_ids = [ident for msg in batches for ident, _ in msg["arrays"]]
    first, second = (f"mid:{s.name}" for s in _spec_intermediates(report)[:2])
    assert first in kept_ids and second in kept_ids
    for msg in batches:  # as if the budget had ended before `second`
        arrays = [pair for pair in msg["arrays"] if pair[0] != second]
        _message_from_python(page, {**msg, "arrays": arrays})
    page.locator(".sv-x-pick").select_option(second)
    assert page.locator(".sv-x-loading").count() == 1
    w.selected_array = second
    _from_python(page, "array", w.array)
    assert page.locator(".sv-x-tile").count() == w.array_layout.num_distinct_tiles

    page.evaluate(
        "id => document.querySelector('.sv-x-root')"
        ".dispatchEvent(new CustomEvent('sv-x-forget', {detail: id}))",
        first,
    )
    page.locator(".sv-x-pick").select_option(first)
    assert page.locator(".sv-x-loading").count() == 1
    page.locator(".sv-x-pick").select_option(second)  # kept when Python's answer arrived
    assert page.locator(".sv-x-loading").count() == 0
    viewer.assert_clean()


def test_estimated_times_and_the_hbm_line_are_shown_as_estimates(viewer):
    from shardviz.analysis.estimate.step import with_estimate
    from shardviz.model.units import format_seconds
    from tests.render.compare_fixtures import small_hbm
    from tests.render.report_fixtures import dp_report

    report = with_estimate(dp_report(), small_hbm())  # 6.3 MiB peak of 8 MiB: the line on scale
    e = report.estimate
    assert e is not None and e.fits
    page = mount(viewer, ExplorerWidget(report))
    # the ledger: an est. column with each collective's estimate, hover saying how
    assert page.locator("th.sv-x-est").inner_text() == "est."
    cells = page.locator("td.sv-x-est")
    assert cells.count() == len(report.collectives)
    want = [format_seconds(c.estimated_seconds) for c in report.collectives]
    assert cells.all_inner_texts() == want
    assert "a lower bound, not a measurement" in cells.first.get_attribute("title")
    assert report.collectives[0].estimate_formula in cells.first.get_attribute("title")
    # the header: the step, labelled an estimate, and what it describes
    head = page.locator(".sv-x-estimate").inner_text()
    assert head.startswith("estimate") and f"≥ {format_seconds(e.step_seconds)}" in head
    assert "a lower bound, not a measurement" in head and e.target in head
    assert "estimated as if this mesh were" in page.locator(".sv-x-target").inner_text()
    # the memory pane: the HBM line on the scale and the headroom
    assert _attrs(page, ".sv-x-hbm", "data-hbm") == [str(e.hbm_bytes)]
    line = page.locator(".sv-x-hbmline")
    assert line.get_attribute("data-fits") == "1"
    text = line.inner_text()
    assert text.startswith("estimate") and e.fit_text in text and "headroom" in text
    # a ledger row's details give its estimate and formula
    page.locator('tr.sv-x-coll[data-index="2"]').click()
    details = page.locator(".sv-x-details").inner_text()
    assert f"{format_seconds(report.collectives[2].estimated_seconds)} on {e.target}" in details
    assert " ".join(report.collectives[2].estimate_formula.split()) in details  # spaces collapse
    viewer.screenshot("explorer-estimate")
    viewer.assert_clean()


def test_hbm_far_above_the_bars_is_said_not_drawn_and_no_target_shows_nothing(viewer):
    from tests.render.report_fixtures import dp_report, dp_v5e_report

    report = dp_v5e_report()  # 6.3 MiB of 16 GiB
    page = mount(viewer, ExplorerWidget(report))
    assert page.locator(".sv-x-hbm").count() == 0
    assert "far above these bars" in page.locator(".sv-x-hbmline").inner_text()
    page = mount(viewer, ExplorerWidget(dp_report()))
    for cls in (".sv-x-est", ".sv-x-estimate", ".sv-x-hbm", ".sv-x-hbmline", ".sv-x-target"):
        assert page.locator(cls).count() == 0, cls
    viewer.assert_clean()


def test_hostile_estimate_strings_render_as_text(viewer):
    from tests.render.report_fixtures import nasty_estimate_report

    report = nasty_estimate_report()
    page = mount(viewer, ExplorerWidget(report))
    assert page.locator("script").count() == 0
    assert NASTY in page.locator(".sv-x-estimate").inner_text()
    assert NASTY in page.locator(".sv-x-hbmline").inner_text()
    page.locator('tr.sv-x-coll[data-index="0"]').click()
    assert f"f {NASTY}" in page.locator(".sv-x-details").inner_text()
    viewer.assert_clean()


def test_a_profiled_report_shows_a_timeline_lane_per_device(viewer, report):
    from tests.render.report_fixtures import STEP, timeline_report

    page = mount(viewer, ExplorerWidget(report))  # not profiled: no timeline pane
    assert page.locator(".sv-x-tlpane").count() == 0
    page = mount(viewer, ExplorerWidget(timeline_report("cpu", devices=8)))
    assert page.locator(".sv-x-tlpane").count() == 1
    lanes = _attrs(page, ".sv-x-tllane", "data-device")
    assert lanes == [str(d) for d in range(8)]
    assert page.locator(".sv-x-tlbar").count() == 8 * len(STEP)
    assert page.locator('.sv-x-tlbar[data-kind="all-reduce"]').count() == 8
    assert "illustrative: CPU devices share" in page.locator(".sv-x-tllabel").inner_text()
    assert _attrs(page, ".sv-x-tlkey", "data-kind") == ["compute", "all-reduce"]
    box = page.locator(".sv-x-tlsvg").bounding_box()
    assert box is not None and box["width"] > 600 and box["height"] > 8 * 14
    viewer.screenshot("explorer-timeline")
    viewer.assert_clean()


def test_a_big_programs_picker_says_how_many_values_it_leaves_out(viewer):
    """600 intermediates: the picker lists the reshard points and linked values, and its
    group's label says how many others there are (the payload would be megabytes)."""
    report = layered_report(300)
    page = mount(viewer, ExplorerWidget(report))
    label = page.locator(".sv-x-pick optgroup").last.get_attribute("label") or ""
    listed = page.locator(".sv-x-pick optgroup").last.locator("option").count()
    assert listed < len(report.intermediates)
    assert label == (
        f"intermediates ({listed} listed: the reshard points; "
        f"{len(report.intermediates) - listed} more not listed)"
    )
    viewer.assert_clean()
