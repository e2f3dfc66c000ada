"""Layer 3 of the browser tests: a real JupyterLab server on 127.0.0.1, driven by Playwright.

``lab`` (session scope) starts ``python -m jupyterlab`` from this venv in a temporary root with
its own config, runtime, settings and workspaces folders, a random token and no network use
(no news, no update check). ``LabPage`` opens a fresh copy of a notebook in its own workspace,
runs all cells, and waits for the kernel, so each test sees an unexecuted notebook.
What mattered offline is written down in ``../shared/notes/browser-testing.md``.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
START_TIMEOUT_S = 90
RUN_TIMEOUT_MS = 300_000
KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Lab:
    """A running JupyterLab: where it is and how to reach it."""

    url: str
    token: str
    root: Path

    def api(self, path: str, method: str = "GET") -> object:
        req = urllib.request.Request(f"{self.url}{path}?token={self.token}", method=method)
        with urllib.request.urlopen(req, timeout=10) as r:
            body = r.read()
        return json.loads(body) if body else None

    def delete_sessions(self) -> None:
        """Stop every kernel session, so the next test starts clean."""
        for s in self.api("/api/sessions") or []:
            self.api(f"/api/sessions/{s['id']}", method="DELETE")


def _seed_settings(settings: Path) -> None:
    """Notebook windowing off (else Lab 4 detaches off-screen cells), no news toasts."""
    tracker = settings / "@jupyterlab" / "notebook-extension"
    tracker.mkdir(parents=True, exist_ok=True)
    (tracker / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))
    notify = settings / "@jupyterlab" / "apputils-extension"
    notify.mkdir(parents=True, exist_ok=True)
    (notify / "notification.jupyterlab-settings").write_text(json.dumps({"fetchNews": "false"}))


@contextlib.contextmanager
def running_lab(root: Path) -> Iterator[Lab]:
    """Start JupyterLab in the empty folder ``root``; stop it on leaving (also for scripts)."""
    for sub in ("work", "config", "runtime", "settings", "ws"):
        (root / sub).mkdir()
    _seed_settings(root / "settings")
    port, token = _free_port(), secrets.token_hex(16)
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(root / "config"),
        "JUPYTER_RUNTIME_DIR": str(root / "runtime"),
        "PYTHONPATH": str(ROOT),
    }
    cmd = [
        sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root",
        "--ip=127.0.0.1", f"--port={port}", "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root / 'work'}",
        "--LabApp.expose_app_in_browser=True", "--LabApp.news_url=",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        f"--LabApp.workspaces_dir={root / 'ws'}", f"--LabApp.user_settings_dir={root / 'settings'}",
    ]  # fmt: skip
    log = open(root / "server.log", "w")  # noqa: SIM115 -- closed below
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    server = Lab(url=f"http://127.0.0.1:{port}", token=token, root=root / "work")
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                pytest.fail(f"JupyterLab exited: {(root / 'server.log').read_text()[-2000:]}")
            try:
                server.api("/api/status")
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail("JupyterLab did not start in time; see its log in " + str(root))
                time.sleep(0.25)
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture(scope="session")
def lab(tmp_path_factory):
    """A JupyterLab server for the session (the kernel gets the test's device count)."""
    with running_lab(tmp_path_factory.mktemp("lab")) as server:
        yield server


class LabPage:
    """One notebook opened in Lab in a page of its own (a fresh copy, a fresh workspace)."""

    def __init__(self, lab: Lab, page, notebook: Path) -> None:
        self.lab, self.page = lab, page
        self.name = f"{notebook.stem}-{uuid.uuid4().hex[:8]}.ipynb"
        nb = json.loads(notebook.read_text(encoding="utf-8"))
        # Without a kernelspec Lab asks which kernel to start, in a dialog.
        nb.setdefault("metadata", {}).setdefault("kernelspec", KERNELSPEC)
        (lab.root / self.name).write_text(json.dumps(nb), encoding="utf-8")

    def open(self) -> LabPage:
        ws = uuid.uuid4().hex
        self.page.goto(
            f"{self.lab.url}/lab/workspaces/{ws}/tree/{self.name}?reset&token={self.lab.token}"
        )
        self.page.wait_for_function(
            """name => {
                const app = window.jupyterapp;
                const w = app && app.shell.currentWidget;
                if (!w || !w.context || w.context.path !== name) return false;
                const k = w.context.sessionContext.session?.kernel;
                return !!k && k.status === 'idle';
            }""",
            arg=self.name,
            timeout=120_000,
        )
        return self

    def run_all(self) -> None:
        """Run every cell and wait until each has an execution count and the kernel is idle."""
        self.page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
        self.wait_idle()

    def wait_idle(self) -> None:
        self.page.wait_for_function(
            """() => {
                const w = window.jupyterapp.shell.currentWidget;
                const k = w.context.sessionContext.session?.kernel;
                if (!k || k.status !== 'idle') return false;
                const cells = w.content.widgets.filter(c => c.model.type === 'code');
                return cells.every(c => c.model.executionCount !== null);
            }""",
            timeout=RUN_TIMEOUT_MS,
        )

    def cell(self, index: int):
        """The locator of the code or markdown cell at ``index``."""
        return self.page.locator(".jp-Notebook .jp-Cell").nth(index)

    def cell_tagged(self, tag: str):
        """The cell whose first source line is ``# view: <tag>``: a stable handle on a cell."""
        return self.page.locator(".jp-Notebook .jp-CodeCell", has_text=f"# view: {tag}").first

    def run_cell_with(self, source: str) -> None:
        """Append a code cell with ``source`` at the end, run it, wait for the kernel."""
        self.page.evaluate(
            """src => {
                const app = window.jupyterapp;
                const nb = app.shell.currentWidget.content;
                nb.activeCellIndex = nb.widgets.length - 1;
                return app.commands.execute('notebook:insert-cell-below').then(() => {
                    nb.activeCell.model.sharedModel.setSource(src);
                    return app.commands.execute('notebook:run-cell');
                });
            }""",
            source,
        )
        self.wait_idle()
