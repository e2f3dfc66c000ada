"""The Explorer in a real JupyterLab, in Chromium: initial render, payload size and interaction
round trips at 8, 64 and 512 devices.

For each device count one generated notebook (in a temporary folder) runs in its own kernel
(jax fixes the fake-device count when it starts): its first cell calls
``sv.use_cpu_devices(N)`` and builds ``sv.explain(mlp.train_step, params, batch, run=False)``
for the MLP train step placed Megatron-style on a (2, N/2) mesh ('data', 'model'); its second
cell displays ``sv.Explorer(report)``. Playwright drives Debian's Chromium on JupyterLab
(``tests/browser/jupyterlab.py``), offline: every request not to 127.0.0.1 is aborted and
fails the run, as does any page error. Timed inside the page with ``performance.now()``:

- initial render: from asking Lab to run the display cell to the four panes drawn in the
  cell's output (every device cell, a memory bar per device, the ledger rows, the default
  array's tiles), then to the next painted frame. Run once cold (first display in the page:
  anywidget loads the ES module) and re-run on fresh outputs for a warm median;
- prefetch done: from the same start to the explorer's root saying ``data-prefetch="done"``
  (the view asked for the arrays, Python sent them all in batches from a background thread);
- select a device: a click dispatched on a mesh cell (alternately the first and the last
  device) to the cell, its memory bar and the readout showing the selection. Front end only:
  the widget highlights at once and tells Python afterwards;
- select a prefetched array: a ``change`` of the array picker (alternately ``params/w1`` and
  the first matmul's result ``dot_general.0``, the most-tiled arrays) to that array's tiles
  drawn, once the prefetch is done. Front end only: the tiles come from the arrays the view
  keeps; Python hears of the pick and sends the ``array`` trait afterwards (not redrawn). The
  run fails if such a pick was not drawn within the ``change`` handler itself (that is, if it
  waited for the kernel);
- select an array through the kernel: the same picks, each after a ``sv-x-forget`` event on
  the explorer's root dropped the picked array from what the view keeps (outside the timed
  part): the path of a pick made before the prefetch arrives or of an array beyond its budget.
  Python builds the picked array's tiles (the ``array`` trait) and sends them back before
  anything but "computing tiles…" can be drawn; the run fails if one was drawn at once;
- the floor for any kernel round trip, in the same page: a bare anywidget (a third cell) whose
  Python side copies the string a click sends into a second trait, which the front end writes
  into a span.

Each interaction is timed to the DOM showing the result (a MutationObserver) and to the next
painted frame (a requestAnimationFrame and one task after it); each round does one of each
kind, in rotating order, waiting for the kernel to be idle between them. The two array picks
of a round pick different arrays (the prefetched one ``ARRAYS[r % 2]``, the other one through
the kernel); when the array to pick is already shown, an untimed pick of another array comes
first.
Sizes: the synced ``payload`` and ``array`` traits as the JSON text the front end parses, the
whole widget state (with anywidget's ``_esm``/``_css``), the static ``text/html`` of the mime
bundle, every byte the kernel websocket delivered from running the display cell until the
prefetch was done, and the prefetched arrays (count and JSON text, as Python builds them).

Then, as a diagnostic only, the largest size again on a second server whose kernel websocket
sets TCP_NODELAY (jupyter_server leaves Nagle's algorithm on; a config file on
JUPYTER_CONFIG_PATH, for that server only, patches its handler): round trips through the
kernel are bimodal on a stock server, some ~40 ms slower (a small frame waiting for a delayed
ACK), and this run shows how much of the time that is. ``--no-nodelay`` skips it.

Targets (issue): synced payload <= 1 MB at 512 devices; interaction round trip <= 50 ms at
512 devices (median, to the painted frame), held against what a user does once the explorer
has been shown for a moment: selecting a device and selecting a prefetched array. Picks
through the kernel are reported next to it, against the same 50 ms.

    .venv/bin/python benchmarks/widgets.py [--rounds 30] [--renders 5] [--devices 8 64 512]
                                           [--no-nodelay] [--write]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _common as C

sys.path.insert(0, str(C.ROOT))

import nbformat  # noqa: E402

from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS, is_local  # noqa: E402
from tests.browser.jupyterlab import LabPage, running_lab  # noqa: E402

SIZES = (8, 64, 512)
ARRAYS = ("arg:params/w1", "mid:dot_general.0")
#: Picked, untimed, when the array a timed pick wants is already shown.
NEUTRAL = "arg:batch/x"
MB = 1_000_000
PAYLOAD_TARGET = 1 * MB
ROUND_TRIP_TARGET_MS = 50.0
SETTLE_S = 0.12
SETUP, DISPLAY, ECHO, MEASURE = 0, 1, 2, 3

SETUP_SRC = """\
import shardviz as sv
sv.use_cpu_devices({n})
import jax
from shardviz.strategies import mlp

mesh = sv.Mesh(range({n}), (2, {n} // 2), ("data", "model"))
specs = {{"w1": (None, "model"), "b1": ("model",), "w2": ("model", None), "b2": ()}}
params = mlp.init_params(jax.random.key(0), 512, 2048)
batch = mlp.make_batch(jax.random.key(1), 256, 512)
params = {{k: sv.mark_sharding(v, mesh, specs[k]) for k, v in params.items()}}
batch = {{k: sv.mark_sharding(v, mesh, ("data", None)) for k, v in batch.items()}}
report = sv.explain(mlp.train_step, params, batch, run=False)
"""

DISPLAY_SRC = """\
# view: explorer
w = sv.Explorer(report)
w"""

# The floor for anything that goes through the kernel: a bare anywidget whose Python side
# copies one string trait into another, which the front end then writes into a span.
ECHO_SRC = '''\
# view: echo
import anywidget, traitlets

class Echo(anywidget.AnyWidget):
    _esm = """export default { render({ model, el }) {
        const b = document.createElement("button");
        b.className = "echo-send";
        b.textContent = "echo";
        const s = document.createElement("span");
        s.className = "echo-out";
        b.addEventListener("click", () => {
            b.dataset.sent = String(performance.now());
            model.set("sent", b.dataset.sent);
            model.save_changes();
        });
        const show = () => { s.textContent = model.get("back"); };
        model.on("change:back", show);
        show();
        el.append(b, s);
    } }"""
    sent = traitlets.Unicode("").tag(sync=True)
    back = traitlets.Unicode("").tag(sync=True)

    @traitlets.observe("sent")
    def _echo(self, change):
        self.back = change["new"]

Echo()'''

# Kernel side: sizes of what was synced and the Python half of the work, timed in the kernel.
MEASURE_SRC = """\
import json as _json, statistics as _st, time as _time
from shardviz.widgets.explorer import payload as _xp, widget as _x

def _med(f, n=15):
    xs = []
    for _ in range(n):
        t = _time.perf_counter(); f(); xs.append(_time.perf_counter() - t)
    return _st.median(xs)

_first = _xp.default_array(report)
_payload, _array = _xp.report_json(report), _xp.array_json(report, _first)
_prefetch = lambda: list(_xp.prefetch_batches(
    report, _first, _x.PREFETCH_BUDGET, _x.PREFETCH_BATCH_BYTES))
_batches = _prefetch()
_state = {{**w.get_state(), "payload": _payload, "array": _array, "selected_array": _first}}
_bundle = w._repr_mimebundle_()
_bundle = _bundle[0] if isinstance(_bundle, tuple) else _bundle
_ids = {arrays!r}
_out = {{
    "devices": len(jax.devices()),
    "collectives": len(report.collectives),
    "arrays": len(_xp.array_entries(report)),
    "first_array": _first,
    "payload_bytes": len(_payload.encode()),
    "array_bytes": len(_array.encode()),
    "state_bytes": len(_json.dumps(_state, separators=(",", ":")).encode()),
    "esm_css_bytes": len(w._esm.encode()) + len(w._css.encode()),
    "static_html_bytes": len(_bundle["text/html"].encode()),
    "report_json_s": _med(lambda: _xp.report_json(report)),
    "first_array_json_s": _med(lambda: _xp.array_json(report, _first)),
    "static_html_s": _med(w.static_html),
    "prefetch_arrays": sum(len(b) for b in _batches),
    "prefetch_messages": len(_batches) + 1,
    "prefetch_bytes": sum(len(t.encode()) for b in _batches for _, t in b),
    "prefetch_budget": _x.PREFETCH_BUDGET,
    "prefetch_s": _med(_prefetch, 3),
    "picked": {{
        i: {{
            "name": _xp.find_entry(report, i).name,
            "tiles": len(_xp.array_payload(report, i)["tiles"]),
            "json_bytes": len(_xp.array_json(report, i).encode()),
            "json_s": _med(lambda i=i: _xp.array_json(report, i)),
        }}
        for i in _ids
    }},
}}
print("BENCH " + _json.dumps(_out))
"""

# ---------------------------------------------------------------------------------------------
# In the page

RUN_CELL_JS = """
i => {
    const app = window.jupyterapp;
    const nb = app.shell.currentWidget.content;
    nb.activeCellIndex = i;
    return app.commands.execute('notebook:run-cell');
}"""

CELL_DONE_JS = """
([i, count]) => {
    const w = window.jupyterapp.shell.currentWidget;
    const k = w.context.sessionContext.session?.kernel;
    const c = w.content.widgets[i].model;
    return !!k && k.status === 'idle' && c.executionCount !== null && c.executionCount > count;
}"""

CELL_OUTPUTS_JS = """
i => window.jupyterapp.shell.currentWidget.content.widgets[i].model.outputs.toJSON()"""

EXEC_COUNT_JS = """
i => window.jupyterapp.shell.currentWidget.content.widgets[i].model.executionCount || 0"""

# Resolve with {dom, paint}: ms from `act` to `ready()` true in the DOM, and to the first task
# after the next animation frame (the frame that shows it).
_TIMER = """
const measure = (node, ready, act, timeoutMs) => new Promise((resolve, reject) => {
    let t0 = 0, done = false;
    const marks = {};
    const finish = () => {
        done = true;
        obs.disconnect();
        const dom = performance.now() - t0;
        requestAnimationFrame(() => {
            const ch = new MessageChannel();
            ch.port1.onmessage = () => resolve({dom, paint: performance.now() - t0, ...marks});
            ch.port2.postMessage(0);
        });
    };
    const check = () => { if (!done && ready(marks, t0)) finish(); };
    const obs = new MutationObserver(check);
    obs.observe(node, {subtree: true, childList: true, attributes: true, characterData: true});
    setTimeout(() => { if (!done) { obs.disconnect(); reject(new Error('timed out')); } },
               timeoutMs);
    t0 = performance.now();
    Promise.resolve(act()).catch(reject);
    check();
});
"""

INITIAL_RENDER_JS = (
    "async ([i, n, nColl]) => {"
    + _TIMER
    + """
    const app = window.jupyterapp;
    const nb = app.shell.currentWidget.content;
    const cell = nb.widgets[i];
    cell.model.outputs.clear();
    await new Promise(r => requestAnimationFrame(() => setTimeout(r, 50)));
    if (cell.node.querySelector('.sv-x-root')) throw new Error('old output still shown');
    const ready = (marks, t0) => {
        const node = cell.node;
        if (marks.output === undefined && node.querySelector('.jp-OutputArea-output'))
            marks.output = performance.now() - t0;
        const root = node.querySelector('.sv-x-root');
        if (!root) return false;
        if (marks.root === undefined) marks.root = performance.now() - t0;
        const cells = root.querySelectorAll('.sv-x-dev').length;  // long runs are elided
        return (cells === n || (cells > 0 && root.querySelector('.sv-x-elided') !== null))
            && (root.querySelectorAll('.sv-x-mem').length === n
                || root.querySelector('.sv-x-memall') !== null)  // one bar: same on all
            && root.querySelectorAll('tr.sv-x-coll').length === nColl
            && root.querySelector('.sv-x-array .sv-x-name') !== null
            && root.querySelector('.sv-x-tile') !== null;
    };
    // When the explorer's root first says its prefetch is done, from running the cell.
    let started = 0, prefetched = null;
    const isDone = () => !!cell.node.querySelector('.sv-x-root[data-prefetch="done"]');
    let seen;
    const done = new Promise(resolve => { seen = resolve; });
    const watch = new MutationObserver(() => {
        if (prefetched === null && isDone()) {
            prefetched = performance.now() - started;
            seen();
        }
    });
    watch.observe(cell.node, {subtree: true, childList: true, attributes: true,
                              attributeFilter: ['data-prefetch']});
    const act = () => {
        started = performance.now();
        nb.activeCellIndex = i;
        return app.commands.execute('notebook:run-cell');
    };
    const result = await measure(cell.node, ready, act, 120000);
    const late = setTimeout(() => seen(), 120000);
    await done;
    clearTimeout(late);
    watch.disconnect();
    if (prefetched === null) throw new Error('prefetch not done in 120 s');
    return {...result, prefetched};
}"""
)

SELECT_DEVICE_JS = (
    "async ([i, dev]) => {"
    + _TIMER
    + """
    const root = window.jupyterapp.shell.currentWidget.content.widgets[i].node
        .querySelector('.sv-x-root');
    const cellOf = root.querySelector(`.sv-x-dev[data-device="${dev}"]`);
    if (cellOf.classList.contains('sv-selected')) throw new Error('already selected');
    const ready = () => cellOf.classList.contains('sv-selected')
        && (root.querySelector(`.sv-x-mem[data-device="${dev}"]`)  // none when all are equal
            ?.classList.contains('sv-selected') ?? true)
        && root.querySelector('.sv-x-devline').textContent.startsWith(`d${dev} `);
    const act = () => cellOf.querySelector('.sv-x-fill')
        .dispatchEvent(new MouseEvent('click', {bubbles: true, cancelable: true, view: window}));
    return await measure(root, ready, act, 10000);
}"""
)

# ``forget``: first drop the array from what the view keeps, so the pick goes through the
# kernel. Adds ``immediate`` (drawn within the change handler: it cannot have waited for the
# kernel) and ``loading`` ("computing tiles…" was seen).
SELECT_ARRAY_JS = (
    "async ([i, id, name, forget]) => {"
    + _TIMER
    + """
    const root = window.jupyterapp.shell.currentWidget.content.widgets[i].node
        .querySelector('.sv-x-root');
    const pick = root.querySelector('.sv-x-pick');
    if (pick.value === id) throw new Error('already picked');
    if (forget) root.dispatchEvent(new CustomEvent('sv-x-forget', {detail: id}));
    let immediate = null, loading = false;
    const ready = () => {
        if (root.querySelector('.sv-x-loading')) loading = true;
        const shown = root.querySelector('.sv-x-array .sv-x-name');
        return !!shown && shown.textContent === name && !root.querySelector('.sv-x-loading')
            && root.querySelector('.sv-x-array .sv-x-tile') !== null;
    };
    const act = () => {
        pick.value = id;
        pick.dispatchEvent(new Event('change', {bubbles: true}));
        immediate = ready();
    };
    const result = await measure(root, ready, act, 10000);
    return {...result, immediate, loading};
}"""
)

PREFETCH_DONE_JS = """
i => !!window.jupyterapp.shell.currentWidget.content.widgets[i].node
    .querySelector('.sv-x-root[data-prefetch="done"]')"""

PICKED_JS = """
i => window.jupyterapp.shell.currentWidget.content.widgets[i].node
    .querySelector('.sv-x-root .sv-x-pick').value"""


ECHO_JS = (
    "async ([i]) => {"
    + _TIMER
    + """
    const node = window.jupyterapp.shell.currentWidget.content.widgets[i].node;
    const send = node.querySelector('.echo-send');
    const out = node.querySelector('.echo-out');
    const ready = () => !!send.dataset.sent && out.textContent === send.dataset.sent;
    const act = () => send.dispatchEvent(new MouseEvent('click', {bubbles: true}));
    return await measure(node, ready, act, 10000);
}"""
)


# ---------------------------------------------------------------------------------------------
# Driving one notebook


def notebook(folder: Path, n: int) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(SETUP_SRC.format(n=n)),
        nbformat.v4.new_code_cell(DISPLAY_SRC),
        nbformat.v4.new_code_cell(ECHO_SRC),
        nbformat.v4.new_code_cell(MEASURE_SRC.format(arrays=ARRAYS)),
    ]
    path = folder / f"widgets_{n}.ipynb"
    nbformat.write(nb, path)
    return path


class Session:
    """One notebook open in its own browser context, with everything off-host blocked."""

    def __init__(self, browser, lab, path: Path) -> None:
        self.context = browser.new_context(viewport={"width": 1280, "height": 900})
        self.blocked: list[str] = []
        self.errors: list[str] = []
        self.ws_bytes = 0
        self.counting = False
        self.context.route("**/*", self._route)
        self.page = self.context.new_page()
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("websocket", self._socket)
        self.lab = LabPage(lab, self.page, path).open()

    def _route(self, r) -> None:
        if is_local(r.request.url):
            r.continue_()
        else:
            self.blocked.append(r.request.url)
            r.abort()

    def _socket(self, ws) -> None:
        if "/api/kernels/" not in ws.url:
            return

        def received(payload: str | bytes) -> None:
            if self.counting:
                self.ws_bytes += len(payload.encode() if isinstance(payload, str) else payload)

        ws.on("framereceived", received)

    def check(self) -> None:
        if self.blocked:
            raise SystemExit(f"requests left 127.0.0.1 (aborted): {self.blocked}")
        if self.errors:
            raise SystemExit(f"page errors: {self.errors}")

    def run(self, i: int) -> list[dict[str, Any]]:
        """Run cell ``i``, wait for it and the kernel; return its outputs (fail on an error)."""
        count = self.page.evaluate(EXEC_COUNT_JS, i)
        self.page.evaluate(RUN_CELL_JS, i)
        self.wait(i, count)
        outputs = self.page.evaluate(CELL_OUTPUTS_JS, i)
        for o in outputs:
            if o.get("output_type") == "error":
                raise SystemExit(f"cell {i} failed: {o['ename']}: {o['evalue']}")
        return outputs

    def wait(self, i: int, count: int) -> None:
        self.page.wait_for_function(CELL_DONE_JS, arg=[i, count], timeout=300_000)

    def settle(self) -> None:
        """Let the kernel take the last update (and echo it) before the next measurement."""
        time.sleep(SETTLE_S)
        self.page.wait_for_function(
            "() => window.jupyterapp.shell.currentWidget.context.sessionContext.session"
            "?.kernel?.status === 'idle'"
        )

    def close(self) -> None:
        self.context.close()


def pick_array(s: Session, ident: str, through_kernel: bool) -> dict[str, Any]:
    """Time one pick of ``ident``: from what the view keeps, or (forgotten first) through the
    kernel. Fails the run if a kept array waited for the kernel, or a forgotten one did not."""
    if s.page.evaluate(PICKED_JS, DISPLAY) == ident:  # untimed: show another array first
        s.page.evaluate(SELECT_ARRAY_JS, [DISPLAY, NEUTRAL, NEUTRAL.split(":", 1)[1], False])
        s.settle()
    name = ident.split(":", 1)[1]
    t = s.page.evaluate(SELECT_ARRAY_JS, [DISPLAY, ident, name, through_kernel])
    if through_kernel and (t["immediate"] or not t["loading"]):
        raise SystemExit(f"a pick of {ident} after forgetting it was drawn without the kernel")
    if not through_kernel and (not t["immediate"] or t["loading"]):
        raise SystemExit(f"a pick of the prefetched {ident} waited for the kernel")
    t["target"] = ident
    return t


def measure(browser, lab, folder: Path, n: int, rounds: int, renders: int) -> dict[str, Any]:
    started = time.perf_counter()
    s = Session(browser, lab, notebook(folder, n))
    try:
        s.run(SETUP)
        # The collective count decides when the ledger is complete: ask the kernel first.
        out = s.page.evaluate(
            """() => new Promise((resolve, reject) => {
                const k = window.jupyterapp.shell.currentWidget.context.sessionContext
                    .session.kernel;
                const f = k.requestExecute({code: 'print(len(report.collectives))',
                                            silent: false, store_history: false});
                let text = '';
                f.onIOPub = m => { if (m.header.msg_type === 'stream') text += m.content.text; };
                f.done.then(() => resolve(text), reject);
            })"""
        )
        n_coll = int(out.strip())

        initial = []
        for r in range(renders):
            count = s.page.evaluate(EXEC_COUNT_JS, DISPLAY)
            s.counting = r == 0
            initial.append(s.page.evaluate(INITIAL_RENDER_JS, [DISPLAY, n, n_coll]))
            s.wait(DISPLAY, count)
            s.settle()
            s.counting = False
        ws_bytes = s.ws_bytes

        s.run(ECHO)
        s.page.wait_for_function(
            "i => !!window.jupyterapp.shell.currentWidget.content.widgets[i].node"
            ".querySelector('.echo-send')",
            arg=ECHO,
        )
        s.page.wait_for_function(PREFETCH_DONE_JS, arg=DISPLAY, timeout=120_000)
        devices = (0, n - 1)
        kinds = ("device", "array", "via_kernel", "echo")
        times: dict[str, list[dict[str, float]]] = {k: [] for k in kinds}
        warmup = 1
        for r in range(warmup + rounds):
            shift = r % len(kinds)
            for kind in kinds[shift:] + kinds[:shift]:
                if kind == "device":
                    t = s.page.evaluate(SELECT_DEVICE_JS, [DISPLAY, devices[r % 2]])
                    t["target"] = devices[r % 2]
                elif kind in ("array", "via_kernel"):
                    via = kind == "via_kernel"
                    t = pick_array(s, ARRAYS[(r + via) % 2], through_kernel=via)
                else:
                    t = s.page.evaluate(ECHO_JS, [ECHO])
                if r >= warmup:
                    times[kind].append(t)
                s.settle()

        kernel_out = s.run(MEASURE)
        text = "".join(
            "".join(o["text"]) if isinstance(o["text"], list) else o["text"]
            for o in kernel_out
            if o.get("output_type") == "stream"
        )
        line = next(x for x in text.splitlines() if x.startswith("BENCH "))
        kernel = json.loads(line[len("BENCH ") :])
        if kernel["devices"] != n:
            raise SystemExit(f"kernel has {kernel['devices']} devices, wanted {n}")
        s.check()
    finally:
        s.close()
        lab.delete_sessions()
    return {
        "devices": n,
        "initial": initial,
        "ws_bytes": ws_bytes,
        "device": times["device"],
        "array": times["array"],
        "via_kernel": times["via_kernel"],
        "echo": times["echo"],
        "kernel": kernel,
        "wall_s": time.perf_counter() - started,
    }


# For the diagnostic run only, loaded from JUPYTER_CONFIG_PATH by that run's server.
NODELAY_MARK = "shardviz benchmark: TCP_NODELAY on kernel websockets"
NODELAY_PATCH = f"""\
# Written by benchmarks/widgets.py for its diagnostic run: jupyter_server leaves Nagle's
# algorithm on for the kernel websocket, so a small frame can wait for a delayed ACK.
import sys
from jupyter_server.services.kernels.websocket import KernelWebsocketHandler as _Handler

_open = _Handler.open


async def _open_nodelay(self, *args, **kwargs):
    self.set_nodelay(True)
    return await _open(self, *args, **kwargs)


_Handler.open = _open_nodelay
print({NODELAY_MARK!r}, file=sys.stderr)
"""


def _series(browser, root: Path, sizes, rounds: int, renders: int, server: str) -> list[dict]:
    """One JupyterLab server in ``root``; one notebook, kernel and browser context per size."""
    rows = []
    (root / "lab").mkdir(parents=True)
    (root / "nb").mkdir()
    with running_lab(root / "lab") as lab:
        patched = NODELAY_MARK in (root / "lab" / "server.log").read_text(encoding="utf-8")
        if patched != (server == "nodelay"):
            raise SystemExit(f"the {server} server was {'' if patched else 'not '}patched")
        for n in sizes:
            row = measure(browser, lab, root / "nb", n, rounds, renders)
            row["browser"] = f"Chromium {browser.version}"
            row["server"] = server
            print(f"[{server}] {summary_line(row)}", file=sys.stderr)
            rows.append(row)
    return rows


def run(rounds: int, renders: int, sizes: tuple[int, ...], nodelay: int | None) -> list[dict]:
    """Measure every size on a stock server, then (diagnostic) ``nodelay`` devices on one whose
    kernel websocket sets TCP_NODELAY."""
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="shardviz-widgets-") as tmp, sync_playwright() as p:
        tmp_path = Path(tmp)
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            rows = _series(browser, tmp_path / "stock", sizes, rounds, renders, "stock")
            if nodelay:
                extra = tmp_path / "nodelay-config"
                extra.mkdir()
                (extra / "jupyter_server_config.py").write_text(NODELAY_PATCH, encoding="utf-8")
                before = os.environ.get("JUPYTER_CONFIG_PATH")
                os.environ["JUPYTER_CONFIG_PATH"] = os.pathsep.join(
                    [str(extra), *([before] if before else [])]
                )
                try:
                    rows += _series(
                        browser, tmp_path / "nodelay", (nodelay,), rounds, renders, "nodelay"
                    )
                finally:
                    if before is None:
                        del os.environ["JUPYTER_CONFIG_PATH"]
                    else:
                        os.environ["JUPYTER_CONFIG_PATH"] = before
        finally:
            browser.close()
    return rows


# ---------------------------------------------------------------------------------------------
# Reporting


def _med(xs: list[dict[str, Any]], key: str) -> float:
    return C.median([x[key] for x in xs])


def _ms(x: float) -> str:
    return f"{x:.1f}"


def _pair(xs: list[dict[str, Any]]) -> str:
    """``DOM / painted`` medians in ms."""
    return f"{_ms(_med(xs, 'dom'))} / {_ms(_med(xs, 'paint'))}"


def synced(row: dict[str, Any]) -> int:
    """Bytes of the ``payload`` and ``array`` traits as first sent (the JSON text the JS parses)."""
    k = row["kernel"]
    return k["payload_bytes"] + k["array_bytes"]


def summary_line(row: dict[str, Any]) -> str:
    return (
        f"{row['devices']} devices: first render {_ms(row['initial'][0]['paint'])} ms, "
        f"prefetch done {_ms(row['initial'][0]['prefetched'])} ms, "
        f"device {_ms(_med(row['device'], 'paint'))} ms, "
        f"prefetched array {_ms(_med(row['array'], 'paint'))} ms, "
        f"array through the kernel {_ms(_med(row['via_kernel'], 'paint'))} ms, "
        f"echo {_ms(_med(row['echo'], 'paint'))} ms, synced {C.fmt_bytes(synced(row))} "
        f"({row['wall_s']:.0f} s)"
    )


def _over(xs: list[dict[str, Any]], ms: float = ROUND_TRIP_TARGET_MS) -> str:
    """How many round trips took over ``ms`` to the painted frame: ``7/30``."""
    return f"{sum(x['paint'] > ms for x in xs)}/{len(xs)}"


def _by_array(xs: list[dict[str, Any]], ident: str) -> list[dict[str, Any]]:
    return [x for x in xs if x["target"] == ident]


def _per_array(xs: list[dict[str, Any]]) -> str:
    """Median to the painted frame for each of ``ARRAYS``: ``12.0 / 14.5``."""
    return " / ".join(_ms(_med(_by_array(xs, a), "paint")) for a in ARRAYS)


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def markdown(rows: list[dict[str, Any]], rounds: int, renders: int) -> str:
    v = C.versions("anywidget", "playwright")
    stock = [r for r in rows if r["server"] == "stock"]
    lines = [
        *C.preamble("benchmarks/widgets.py --write", ("jax", "jupyterlab", "ipywidgets")),
        f"{rows[0]['browser']} headless, driven by Playwright {v['playwright']}; anywidget "
        f"{v['anywidget']}. MLP train step (batch 256, 512 -> 2048 -> 512, float32, Megatron "
        "placement) on a (2, N/2) mesh: `sv.explain(..., run=False)`, then `sv.Explorer(report)`."
        f" Render: the first display (cold) and the median of {renders - 1} re-runs. "
        f"Interactions: medians of {rounds} of each kind, the four kinds alternating in each "
        "round (one warm-up round dropped); array picks start once the prefetch is done. Times "
        "read DOM / painted, in ms. Sizes in binary units (KiB = 1024 bytes); the target's MB "
        "is 1,000,000 bytes.",
        "",
        "| devices | synced payload + array | widget state with ES module | static HTML "
        "| websocket, cell + prefetch | first render | re-render | prefetch done "
        "| select a device | select a prefetched array | select an array through the kernel "
        "| bare echo widget |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in stock:
        k = r["kernel"]
        first = r["initial"][0]
        again = r["initial"][1:]
        lines.append(
            f"| {r['devices']} | {C.fmt_bytes(synced(r))} | {C.fmt_bytes(k['state_bytes'])} "
            f"| {C.fmt_bytes(k['static_html_bytes'])} | {C.fmt_bytes(r['ws_bytes'])} "
            f"| {_ms(first['dom'])} / {_ms(first['paint'])} | {_pair(again)} "
            f"| {_ms(first['prefetched'])} / {_ms(_med(again, 'prefetched'))} "
            f"| {_pair(r['device'])} | {_pair(r['array'])} | {_pair(r['via_kernel'])} "
            f"| {_pair(r['echo'])} |"
        )
    a, b = ARRAYS
    lines += [
        "",
        "Prefetch done: first display / median of the re-runs, from running the cell. "
        f"Selecting an array, each of the two (`{a}` / `{b}`): the distinct tiles, the `array` "
        "trait Python sends, Python's time to build it (in the kernel, median of 15), and the "
        "pick to the painted frame (median), prefetched and through the kernel; how many picks "
        "through the kernel and round trips of the bare echo widget took over 50 ms to the "
        "painted frame; what the prefetch sends (arrays and their JSON text within the "
        f"{rows[0]['kernel']['prefetch_budget']:,}-byte budget, in how many messages) and "
        "Python's time to build it (median of 3; a view's prefetch runs it in a background "
        "thread of the kernel); and what Python builds once per display (report payload, "
        "static HTML; ms).",
        "",
        "| devices | tiles | `array` JSON | Python ms | prefetched pick ms "
        "| pick through the kernel ms | through the kernel > 50 ms | echoes > 50 ms "
        "| prefetched arrays | prefetch messages | prefetch Python ms | report payload ms "
        "| static HTML ms |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in stock:
        k = r["kernel"]
        pa, pb = k["picked"][a], k["picked"][b]
        lines.append(
            f"| {r['devices']} | {pa['tiles']} / {pb['tiles']} "
            f"| {C.fmt_bytes(pa['json_bytes'])} / {C.fmt_bytes(pb['json_bytes'])} "
            f"| {C.fmt_ms(pa['json_s'])} / {C.fmt_ms(pb['json_s'])} "
            f"| {_per_array(r['array'])} | {_per_array(r['via_kernel'])} "
            f"| {_over(r['via_kernel'])} | {_over(r['echo'])} "
            f"| {k['prefetch_arrays']} of {k['arrays']}, {C.fmt_bytes(k['prefetch_bytes'])} "
            f"| {k['prefetch_messages']} | {C.fmt_ms(k['prefetch_s'])} "
            f"| {C.fmt_ms(k['report_json_s'])} | {C.fmt_ms(k['static_html_s'])} |"
        )
    for r in rows:
        if r["server"] != "nodelay":
            continue
        lines += [
            "",
            f"Diagnostic, not what users get: {r['devices']} devices again on a second server "
            "whose kernel websocket sets TCP_NODELAY (a config file loaded for that run only "
            "patches jupyter_server's handler): select an array through the kernel "
            f"{_pair(r['via_kernel'])} ms, {_over(r['via_kernel'])} over 50 ms; bare echo widget "
            f"{_pair(r['echo'])} ms, {_over(r['echo'])} over 50 ms; select a prefetched array "
            f"{_pair(r['array'])} ms; select a device {_pair(r['device'])} ms.",
        ]
    big = next((r for r in stock if r["devices"] == 512), None)
    lines += ["", "Targets:", ""]
    if big is None:
        lines.append("- no verdict: 512 devices were not measured in this run.")
        return "\n".join(lines)
    size = synced(big)
    dev, arr = _med(big["device"], "paint"), _med(big["array"], "paint")
    kern = _med(big["via_kernel"], "paint")
    lines += [
        f"- {_verdict(size <= PAYLOAD_TARGET)}: 512 devices: synced payload <= 1 MB: "
        f"{size:,} bytes ({C.fmt_bytes(size)}). With anywidget's ES module and CSS the widget "
        f"state is {big['kernel']['state_bytes']:,} bytes; everything the kernel websocket "
        f"delivered from running the cell until the prefetch was done (state, static HTML, "
        f"messages, {big['kernel']['prefetch_bytes']:,} bytes of prefetched array JSON) "
        f"{big['ws_bytes']:,} bytes.",
        f"- {_verdict(max(dev, arr) <= ROUND_TRIP_TARGET_MS)}: 512 devices: interaction "
        "round trip <= 50 ms (median, to the painted frame), for what a user does once the "
        f"explorer has been shown for a moment (its prefetch was done "
        f"{_ms(_med(big['initial'][1:], 'prefetched'))} ms after the cell was run): select a "
        f"device {_ms(dev)} ms, select a prefetched array {_ms(arr)} ms (both front end only).",
        f"- {_verdict(kern <= ROUND_TRIP_TARGET_MS)}: 512 devices: select an array through "
        "the kernel <= 50 ms (median, to the painted frame); reported, not part of the target "
        "above (what a pick gets before the prefetch has arrived, or for an array beyond its "
        f"budget): {_ms(kern)} ms ({_over(big['via_kernel'])} picks over 50 ms, and "
        f"{_over(big['echo'])} round trips of the bare echo widget).",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=30, help="clicks of each kind per size")
    ap.add_argument("--renders", type=int, default=5, help="runs of the display cell per size")
    ap.add_argument("--devices", type=int, nargs="*", default=list(SIZES))
    ap.add_argument(
        "--no-nodelay",
        action="store_true",
        help="skip the diagnostic run at the largest size with TCP_NODELAY on the server",
    )
    ap.add_argument("--write", action="store_true", help="update benchmarks/README.md")
    a = ap.parse_args(argv)
    nodelay = None if a.no_nodelay or not a.devices else max(a.devices)
    rows = run(a.rounds, max(2, a.renders), tuple(a.devices), nodelay)
    C.RESULTS.mkdir(parents=True, exist_ok=True)
    (C.RESULTS / "widgets.json").write_text(json.dumps(rows, indent=1), encoding="utf-8")
    text = markdown(rows, a.rounds, max(2, a.renders))
    print(text)
    if a.write:
        C.replace_section(C.README, "widgets", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
