"""The live training view's ES module in a real Chromium, offline (browser-unit tests).

live.js is loaded from a Blob URL with ``import()`` and rendered with a small fake model
(get/set/on/off/save_changes, every call recorded) holding a real ``LiveView``'s synced state.
``fromPython`` changes the state and fires the change event the way a comm message does, so we
can watch the curve grow in place. The ``viewer`` fixture (tests/browser/conftest.py) fails a
test on any request leaving the machine, JS error or dialog.
"""

from __future__ import annotations

import os

import pytest

from shardviz.render.colors import device_color
from shardviz.widgets.live import LiveView
from tests.browser.conftest import SKIP_ENV
from tests.browser.fake_model import mount_module

pytestmark = pytest.mark.skipif(
    os.environ.get(SKIP_ENV) == "1", reason=f"{SKIP_ENV}=1: browser tests skipped on request"
)

HOSTILE = "<img src=x onerror=alert(1)>"
SYNCED = (
    "title",
    "status",
    "step",
    "total_steps",
    "losses",
    "step_ms",
    "memory",
    "memory_source",
    "memory_note",
    "error",
    "stop_requested",
)


LOSSES = [2.0, 1.5, 1.2, 1.0, 0.9]
STEP_MS = [400.0, 3.0, 2.0, 4.0, 2.5]


def _memory(n: int = 8) -> list[dict]:
    return [
        {"device": i, "bytes": 4096, "peak": None, "limit": None, "color": device_color(i)}
        for i in range(n)
    ]


def view_state(**changes) -> dict:
    """A real LiveView's synced state, with some traits set."""
    view = LiveView(title="mlp dp", total_steps=10)
    for k, v in changes.items():
        setattr(view, k, v)
    state = view.get_state()
    return {k: state[k] for k in SYNCED}


def mount(viewer, state: dict):
    """Render live.js into a blank page with the given synced state."""
    return mount_module(viewer, "live", state)


def _from_python(page, name: str, value) -> None:
    page.evaluate("([k, v]) => window.sv.fromPython(k, v)", [name, value])


def _calls(page):
    return page.evaluate("() => window.sv.calls.filter(c => c[0] !== 'on' && c[0] !== 'off')")


def _path_points(page, selector: str) -> int:
    d = page.locator(selector).get_attribute("d") or ""
    return d.count("M") + d.count("L")


def test_losses_draw_one_point_each(viewer):
    state = view_state(status="running", step=5, losses=LOSSES, step_ms=STEP_MS, memory=_memory())
    page = mount(viewer, state)
    assert page.locator(".sv-l-loss .sv-l-pt").count() == 5
    assert _path_points(page, ".sv-l-loss .sv-l-line") == 5
    head = page.locator(".sv-l-head").inner_text()
    assert "mlp dp" in head and "running" in head and "step 5 / 10" in head
    assert "loss 0.9" in head
    assert page.locator(".sv-l-error").is_hidden()
    # Step times: the compile step stays out of the chart and the median.
    assert _path_points(page, ".sv-l-time .sv-l-line") == 4
    note = page.locator(".sv-l-time-note").inner_text()
    assert note == "step 1 (compile): 400 ms · median 2.75 ms over steps 2–5"
    viewer.screenshot("live_view")
    viewer.assert_clean()


def test_new_points_grow_the_curve_in_place(viewer):
    page = mount(viewer, view_state(status="running", step=3, losses=LOSSES[:3]))
    page.evaluate(
        "() => { window.kept = [document.querySelector('.sv-l-loss'),"
        " ...document.querySelectorAll('.sv-l-pt')]; }"
    )
    _from_python(page, "losses", [*LOSSES, 0.5, 0.45])
    _from_python(page, "step", 7)
    assert page.locator(".sv-l-pt").count() == 7
    assert _path_points(page, ".sv-l-loss .sv-l-line") == 7
    same = page.evaluate(
        "() => window.kept[0] === document.querySelector('.sv-l-loss') &&"
        " window.kept.slice(1).every((e, i) => e === document.querySelectorAll('.sv-l-pt')[i])"
    )
    assert same, "the chart and its existing points must be kept, not redrawn"
    # The scale followed the new minimum: the last point sits lowest.
    ys = page.evaluate(
        "() => [...document.querySelectorAll('.sv-l-pt')].map(c => Number(c.getAttribute('cy')))"
    )
    assert ys[-1] == max(ys)
    assert "step 7 / 10" in page.locator(".sv-l-progress").inner_text()
    assert page.locator(".sv-l-last").inner_text() == "loss 0.45"
    assert _calls(page) == [], "a change from Python must not be echoed back"
    viewer.assert_clean()


def test_a_non_finite_loss_is_a_marked_point_and_breaks_the_line(viewer):
    page = mount(viewer, view_state(losses=[1.0, None, 0.5]))
    assert page.locator(".sv-l-pt").count() == 3
    assert page.locator(".sv-l-pt.sv-l-bad").count() == 1
    assert page.locator(".sv-l-pt.sv-l-bad title").text_content() == "step 2: loss not finite"
    d = page.locator(".sv-l-loss .sv-l-line").get_attribute("d")
    assert d.count("M") == 2 and d.count("L") == 0
    viewer.assert_clean()


def test_memory_bars_one_per_device_in_its_colour(viewer):
    note = "compiler's estimate per device"
    page = mount(viewer, view_state(memory=_memory(), memory_note=note))
    bars = page.locator(".sv-l-bar")
    assert bars.count() == 8
    assert bars.nth(5).get_attribute("data-device") == "5"
    assert bars.nth(5).locator("rect").get_attribute("fill") == device_color(5)
    assert page.locator(".sv-l-bar text").nth(1).text_content() == "4 KiB"
    assert page.locator(".sv-l-mem-note").inner_text() == note
    viewer.assert_clean()


def test_the_error_box_shows_text_safely(viewer):
    page = mount(viewer, view_state(title=HOSTILE, status="running"))
    assert page.locator(".sv-l-error").is_hidden()
    message = "step 3 failed: TypeError: " + HOSTILE
    _from_python(page, "error", message)
    _from_python(page, "status", "error")
    page.wait_for_timeout(200)  # room for an onerror that should never fire
    assert page.locator("img").count() == 0
    box = page.locator(".sv-l-error")
    assert box.is_visible() and box.inner_text() == message
    assert box.get_attribute("role") == "alert"
    assert page.locator(".sv-l-title").inner_text() == HOSTILE
    assert page.locator(".sv-l-status").get_attribute("class") == "sv-l-status sv-l-status-error"
    assert page.locator(".sv-l-stop").is_hidden()
    assert viewer.dialogs == []
    viewer.assert_clean()


def test_stop_button_asks_python_to_stop(viewer):
    page = mount(viewer, view_state(status="running", losses=LOSSES[:2]))
    button = page.locator(".sv-l-stop")
    assert button.is_visible() and button.is_enabled()
    button.click()
    assert _calls(page) == [["set", "stop_requested", True], ["save_changes"]]
    assert button.is_disabled()
    _from_python(page, "status", "stopped")
    assert button.is_hidden()
    viewer.assert_clean()


def test_cleanup_removes_every_listener(viewer):
    page = mount(viewer, view_state(status="running"))
    page.evaluate("() => window.sv.cleanup()")
    left = page.evaluate(
        "() => Object.entries(window.sv.handlers).filter(([, fs]) => fs.length).map(([e]) => e)"
    )
    assert left == []
    page.locator(".sv-l-stop").click()
    assert _calls(page) == [], "a click after cleanup must not reach the model"
    viewer.assert_clean()
