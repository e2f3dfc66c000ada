"""Layer 2 harness: render one of the package's widget ES modules in a blank page with a fake model.

The module is the text the widget ships (``shardviz.widgets.esm.widget_module``: the shared
helpers, then the widget's own file), loaded from a Blob URL and its ``render({model, el})`` called with a fake model
kept on ``window.sv``. The fake's ``set()`` fires ``change:<name>`` like Backbone does, so the
view sees its own changes; ``window.sv.fromPython(k, v)`` is what a change from Python looks
like; ``window.sv.calls`` records every set/save_changes/send/on/off. ``model.send(content)``
(a custom message to Python) is recorded as ``["send", content]``, and
``window.sv.fromPythonMsg(content)`` delivers a custom message from Python (``msg:custom``).
"""

from __future__ import annotations

from shardviz.widgets.esm import STATIC, widget_module

_MOUNT_JS = """async ({src, css, state}) => {
  const el = document.createElement("div");
  document.body.appendChild(el);
  const style = document.createElement("style");
  style.textContent = css;
  document.head.appendChild(style);
  const calls = [];
  const handlers = {};
  const fire = (name) => (handlers["change:" + name] || []).slice().forEach((f) => f());
  const model = {
    get: (k) => state[k],
    set: (k, v) => { calls.push(["set", k, v]); state[k] = v; fire(k); },
    save_changes: () => calls.push(["save_changes"]),
    send: (content) => calls.push(["send", content]),
    on: (e, f) => { calls.push(["on", e]); (handlers[e] = handlers[e] || []).push(f); },
    off: (e, f) => {
      calls.push(["off", e]);
      handlers[e] = (handlers[e] || []).filter((g) => f && g !== f);
    },
  };
  const url = URL.createObjectURL(new Blob([src], {type: "text/javascript"}));
  const mod = await import(url);
  URL.revokeObjectURL(url);
  const cleanup = mod.default.render({model, el});
  // What Python does: change the state, then the change event arrives.
  const fromPython = (k, v) => { state[k] = v; fire(k); };
  const fromPythonMsg = (content) =>
    (handlers["msg:custom"] || []).slice().forEach((f) => f(content, []));
  window.sv = {model, calls, handlers, state, cleanup, fromPython, fromPythonMsg};
  return typeof cleanup;
}"""


def mount_module(viewer, module: str, state: dict):
    """Render the ES module of ``static/<module>.js`` (with its CSS) into a blank page; return
    the page.

    Fails unless ``render`` returns a cleanup function.
    """
    page = viewer.page
    page.set_content("<!doctype html><html><head></head><body></body></html>")
    kind = page.evaluate(
        _MOUNT_JS,
        {
            "src": widget_module(f"{module}.js"),
            "css": (STATIC / f"{module}.css").read_text(encoding="utf-8"),
            "state": state,
        },
    )
    assert kind == "function", "render must return a cleanup function"
    return page


#: The Explorer traits its front end reads.
EXPLORER_SYNCED = (
    "payload",
    "array",
    "strategies",
    "selected_strategy",
    "selected_array",
    "selected_device",
    "selected_collective",
    "status",
    "error",
    "generation",
)


def mount_explorer(viewer, widget):
    """Render the Explorer's module into a blank page with the widget's synced state."""
    state = widget.get_state()
    return mount_module(viewer, "explorer", {k: state[k] for k in EXPLORER_SYNCED})


#: The MeshView traits its front end reads.
MESH_VIEW_SYNCED = ("mesh", "array", "grids", "selected_device", "colors")


def mount_mesh_view(viewer, widget):
    """Render the MeshView's module into a blank page with the widget's synced state."""
    state = widget.get_state()
    return mount_module(viewer, "mesh_view", {k: state[k] for k in MESH_VIEW_SYNCED})
