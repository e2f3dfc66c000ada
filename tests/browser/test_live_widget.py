"""The live training view's ES module in a real Chromium, offline (browser-unit tests).

live.js is loaded from a Blob URL with ``import()`` and rendered with a small fake model
(get/set/on/off/save_changes, every call recorded) holding a real ``LiveWidget``'s synced state,
readouts included. ``_from_python`` changes the Python view and sends the page what changed in
the order ipywidgets does (the trait, then the readouts made from it), so we can watch the curve
grow in place. The ``viewer`` fixture (tests/browser/conftest.py) fails a test on any request
leaving the machine, JS error or dialog.
"""

from __future__ import annotations

import os

import pytest

from shardviz.render.colors import device_color
from shardviz.widgets.live.widget import LiveWidget
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
    "host_step_ms",
    "memory",
    "memory_source",
    "memory_note",
    "error",
    "stop_requested",
    "readouts",
)


LOSSES = [2.0, 1.5, 1.2, 1.0, 0.9]
STEP_MS = [400.0, 3.0, 2.0, 4.0, 2.5]


def _memory(n: int = 8) -> list[dict]:
    return [
        {"device": i, "bytes": 4096, "peak": None, "limit": None, "color": device_color(i)}
        for i in range(n)
    ]


def live_view(**changes) -> LiveWidget:
    """A real LiveWidget, with some traits set."""
    view = LiveWidget(title="mlp dp", total_steps=10)
    for k, v in changes.items():
        setattr(view, k, v)
    return view


def synced(view: LiveWidget) -> dict:
    state = view.get_state()
    return {k: state[k] for k in SYNCED}


def mount(viewer, view: LiveWidget):
    """Render live.js into a blank page with the view's synced state."""
    return mount_module(viewer, "live", synced(view))


def _from_python(page, view: LiveWidget, **changes) -> None:
    """Set traits on the Python view; send each, then the readouts if they changed."""
    for name, value in changes.items():
        before = view.readouts
        setattr(view, name, value)
        sent = [name] + (["readouts"] if view.readouts != before else [])
        for key in sent:
            value = synced(view)[key]
            page.evaluate("([k, v]) => window.sv.fromPython(k, v)", [key, value])


def _calls(page):
    return page.evaluate("() => window.sv.calls.filter(c => c[0] !== 'on' && c[0] !== 'off')")


def _path_points(page, selector: str) -> int:
    d = page.locator(selector).get_attribute("d") or ""
    return d.count("M") + d.count("L")


def test_losses_draw_one_point_each(viewer):
    view = live_view(status="running", step=5, losses=LOSSES, step_ms=STEP_MS, memory=_memory())
    page = mount(viewer, view)
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
    view = live_view(status="running", step=3, losses=LOSSES[:3])
    page = mount(viewer, view)
    page.evaluate(
        "() => { window.kept = [document.querySelector('.sv-l-loss'),"
        " ...document.querySelectorAll('.sv-l-pt')]; }"
    )
    _from_python(page, view, losses=[*LOSSES, 0.5, 0.45], step=7)
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
    page = mount(viewer, live_view(losses=[1.0, None, 0.5]))
    assert page.locator(".sv-l-pt").count() == 3
    assert page.locator(".sv-l-pt.sv-l-bad").count() == 1
    assert page.locator(".sv-l-pt.sv-l-bad title").text_content() == "step 2: loss not finite"
    d = page.locator(".sv-l-loss .sv-l-line").get_attribute("d")
    assert d.count("M") == 2 and d.count("L") == 0
    viewer.assert_clean()


def test_memory_bars_one_per_device_in_its_colour(viewer):
    note = "compiler's estimate per device"
    memory = _memory()
    memory[7]["bytes"] = 8192  # not all alike: a bar each
    page = mount(viewer, live_view(memory=memory, memory_note=note))
    bars = page.locator(".sv-l-bar")
    assert bars.count() == 8
    assert bars.nth(5).get_attribute("data-device") == "5"
    assert bars.nth(5).locator("rect").get_attribute("fill") == device_color(5)
    assert page.locator(".sv-l-bar text").nth(1).text_content() == "4 KiB"
    assert bars.nth(5).locator("title").text_content() == "device 5: 4 KiB (4,096 B)"
    assert page.locator(".sv-l-mem-note").inner_text() == note
    viewer.assert_clean()


def test_identical_devices_are_one_bar_said_once(viewer):
    page = mount(viewer, live_view(memory=_memory(), memory_note="from the compiler"))
    bars = page.locator(".sv-l-bar")
    assert bars.count() == 1
    assert bars.locator("text").first.text_content() == "all 8"
    note = page.locator(".sv-l-mem-note").inner_text()
    assert note == "same on every device (8 devices) · from the compiler"
    viewer.assert_clean()


#: What a page of the live view shows: its words, and where its marks are.
_PICTURE_JS = """() => {
  const all = (selector, read) => [...document.querySelectorAll(selector)].map(read);
  const text = (e) => e.textContent;
  const attrs = (...names) => (e) => names.map((n) => e.getAttribute(n));
  return {
    head: all(".sv-l-progress, .sv-l-last", text),
    notes: all(".sv-l-note", text),
    texts: all("svg text", text),
    titles: all("svg title", text),
    ticks: all("svg text", attrs("x", "y", "text-anchor")),
    points: all(".sv-l-pt", attrs("class", "cx", "cy", "r")),
    lines: all(".sv-l-line, .sv-l-median, .sv-l-peak", attrs("d", "x1", "y1", "x2", "y2")),
    hosts: all(".sv-l-host", attrs("d", "stroke")),
    keys: all(".sv-l-legend .sv-l-key", (e) => [e.textContent, e.title]),
    bars: all(".sv-l-bar rect", attrs("x", "y", "width", "height", "fill")),
    memory: all(".sv-l-mem", attrs("width", "height")),
  };
}"""


def test_the_live_view_and_its_static_html_show_the_same_picture(viewer):
    memory = [
        {
            "device": i,
            "bytes": 1536 * (i + 1),
            "peak": 4096,
            "limit": 1 << 14,
            "color": device_color(i),
        }
        for i in range(3)
    ]
    view = live_view(
        status="running",
        step=6,
        losses=[*LOSSES, None],
        step_ms=[*STEP_MS, 3.5],
        memory=memory,
        memory_note="device memory_stats()",
    )
    page = mount(viewer, view)
    live = page.evaluate(_PICTURE_JS)
    page.set_content(f"<!doctype html><html><body>{view.static_html()}</body></html>")
    static = page.evaluate(_PICTURE_JS)
    assert live == static
    assert "median 3.00 ms" in live["titles"]
    assert "device 2: 4.5 KiB (4,608 B), peak 4 KiB of 16 KiB" in live["titles"]
    viewer.assert_clean()


def test_the_error_box_shows_text_safely(viewer):
    view = live_view(title=HOSTILE, status="running")
    page = mount(viewer, view)
    assert page.locator(".sv-l-error").is_hidden()
    message = "step 3 failed: TypeError: " + HOSTILE
    _from_python(page, view, error=message, status="error")
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
    view = live_view(status="running", losses=LOSSES[:2])
    page = mount(viewer, view)
    button = page.locator(".sv-l-stop")
    assert button.is_visible() and button.is_enabled()
    button.click()
    assert _calls(page) == [["set", "stop_requested", True], ["save_changes"]]
    assert button.is_disabled()
    _from_python(page, view, status="stopped")
    assert button.is_hidden()
    viewer.assert_clean()


def test_cleanup_removes_every_listener(viewer):
    page = mount(viewer, live_view(status="running"))
    page.evaluate("() => window.sv.cleanup()")
    left = page.evaluate(
        "() => Object.entries(window.sv.handlers).filter(([, fs]) => fs.length).map(([e]) => e)"
    )
    assert left == []
    page.locator(".sv-l-stop").click()
    assert _calls(page) == [], "a click after cleanup must not reach the model"
    viewer.assert_clean()


def test_each_process_is_a_line_and_a_key_the_same_live_and_static(viewer):
    hosts = [
        {"process": 0, "step_ms": [300.0, 4.0, 6.0, 5.0]},
        {"process": 1, "step_ms": [310.0, 5.0, 9.0, 6.0]},
    ]
    memory = [
        {**entry, "process": entry["device"] // 4, "bytes": 3000 + 70 * entry["device"]}
        for entry in _memory(8)
    ]
    view = live_view(status="running", step=4, losses=LOSSES[:4], step_ms=[310.0, 5.0, 9.0, 6.0],
                     host_step_ms=hosts, memory=memory)  # fmt: skip
    page = mount(viewer, view)
    live = page.evaluate(_PICTURE_JS)
    assert [k for k, _ in live["keys"]] == ["p0", "p1"]
    assert len(live["hosts"]) == 2 and live["hosts"][0][1] != live["hosts"][1][1]
    assert [t for t in live["texts"] if t.startswith("p1 d")] == [f"p1 d{i}" for i in range(4, 8)]
    assert "per process: p0 5.00 ms, p1 6.00 ms" in page.locator(".sv-l-time-note").inner_text()
    page.set_content(f"<!doctype html><html><body>{view.static_html()}</body></html>")
    assert page.evaluate(_PICTURE_JS) == live
    viewer.assert_clean()


def test_the_live_view_fits_an_820_px_output(viewer):
    """32 devices' memory bars, the loss and the step times, in JupyterLab's output column at
    1280 px: nothing runs past the view's edge."""
    viewer.page.set_viewport_size({"width": 820, "height": 900})
    view = live_view(status="running", step=5, losses=LOSSES, step_ms=STEP_MS, memory=_memory(32))
    page = mount(viewer, view)
    past = page.evaluate(
        """() => {
          const root = document.querySelector('.sv-l-root');
          const edge = Math.min(root.getBoundingClientRect().right, innerWidth);
          return [...root.querySelectorAll('*')].filter(e => {
            const r = e.getBoundingClientRect();
            return r.width > 0 && r.right > edge + 1;
          }).map(e => e.tagName);
        }"""
    )
    assert past == []
    viewer.assert_clean()
