"""Layer 2 of the browser tests: shardviz's self-contained pages opened in a real Chromium, offline.

Playwright (dev extra) drives Debian's ``/usr/bin/chromium`` (``make browser-deps`` installs it;
never ``playwright install``, which downloads a browser of its own). One headless browser per
session; each test gets a fresh context whose every request is routed: ``file:``, ``data:``,
``blob:``, ``about:`` and 127.0.0.1/localhost go through, anything else is recorded and
aborted. Page errors, console errors and dialogs are recorded too, and a test that saw any of
them fails.

Missing Playwright or Chromium FAILS the tests with what to do; ``SHARDVIZ_SKIP_BROWSER=1``
skips them instead.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
LOCAL_SCHEMES = {"file", "data", "blob", "about"}
LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1"}
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "browser"
SKIP_ENV = "SHARDVIZ_SKIP_BROWSER"
HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config, items):
    if os.environ.get(SKIP_ENV) != "1":
        return
    mark = pytest.mark.skip(reason=f"{SKIP_ENV}=1: browser tests skipped on request")
    for item in items:
        if HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(mark)


def is_local(url: str) -> bool:
    """Whether a request stays on this machine."""
    parts = urlsplit(url)
    if parts.scheme in LOCAL_SCHEMES:
        return True
    return parts.scheme in {"http", "https", "ws", "wss"} and parts.hostname in LOCAL_HOSTS


def _missing() -> str | None:
    fix_skip = f"(or set {SKIP_ENV}=1 to skip the browser tests)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError as e:
        return (
            f"Playwright is not importable ({e}). Install the dev extra: "
            f".venv/bin/pip install -e '.[dev]' (or `make venv`) {fix_skip}."
        )
    if not os.access(CHROMIUM, os.X_OK):
        return (
            f"{CHROMIUM} is missing: the browser tests drive Debian's Chromium. Install it with "
            "`make browser-deps` (apt-get install -y chromium, as root); do not run "
            f"`playwright install` {fix_skip}."
        )
    return None


@contextlib.contextmanager
def chromium() -> Iterator[Any]:
    """Debian's Chromium, headless, through Playwright (closed at the end of the block).

    Playwright's sync API allows one instance per process: a process that needs a browser
    while the ``browser`` fixture holds one uses that one.
    """
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture(scope="session")
def browser():
    """One headless Chromium for the whole session."""
    problem = _missing()
    if problem:
        pytest.fail(problem, pytrace=False)
    with chromium() as b:
        yield b


@pytest.fixture(scope="session")
def artifacts() -> Path:
    """``test-artifacts/browser/`` (gitignored): this run's pages and their screenshots."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for old in [*ARTIFACTS.glob("*.html"), *ARTIFACTS.glob("*.png")]:
        old.unlink()  # nothing stale from an earlier run, e.g. a FAILED-*.png
    return ARTIFACTS


@dataclass
class Viewer:
    """A fresh browser context and page, with everything that went wrong recorded."""

    page: object
    artifacts: Path
    blocked: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)

    def open(self, path: Path):
        """Open a local file and wait until it has loaded; return the page."""
        self.page.goto(Path(path).resolve().as_uri(), wait_until="load")
        return self.page

    def write(self, name: str, html: str) -> Path:
        """Write a page into the artifacts folder; return its path."""
        path = self.artifacts / f"{name}.html"
        path.write_text(html, encoding="utf-8")
        return path

    def screenshot(self, name: str) -> Path:
        path = self.artifacts / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path

    def problems(self) -> list[str]:
        out = [f"request to leave the machine (aborted): {u}" for u in self.blocked]
        out += [
            f"non-local request that bypassed the route: {u}"
            for u in self.requests
            if not is_local(u) and u not in self.blocked
        ]
        out += [f"JS error: {e}" for e in self.errors]
        out += [f"dialog opened: {d}" for d in self.dialogs]
        return out

    def assert_clean(self) -> None:
        """No request left the machine, no JS error, no dialog."""
        problems = self.problems()
        assert not problems, "\n".join(problems)


@pytest.fixture
def viewer(browser, artifacts, request):
    """A fresh context per test that routes every request (only local ones pass)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    v = Viewer(page=None, artifacts=artifacts)

    def route(r):
        url = r.request.url
        if is_local(url):
            r.continue_()
        else:
            v.blocked.append(url)
            r.abort()

    context.route("**/*", route)
    context.on("request", lambda req: v.requests.append(req.url))
    page = context.new_page()
    page.on("pageerror", lambda exc: v.errors.append(f"pageerror: {exc}"))
    page.on(
        "console",
        lambda msg: (
            v.errors.append(f"console.{msg.type}: {msg.text}") if msg.type == "error" else None
        ),
    )

    def dialog(d):
        v.dialogs.append(f"{d.type}: {d.message}")
        d.dismiss()

    page.on("dialog", dialog)
    v.page = page
    try:
        yield v
    finally:
        failed = getattr(request.node, "rep_call", None)
        if failed is not None and failed.failed:  # keep what the person would have seen
            try:
                name = re.sub(r"[^\w.-]+", "_", request.node.name)
                v.screenshot(f"FAILED-{name}")
            except Exception:  # best effort only: the test has failed already
                pass
        context.close()
    # After the test body: anything recorded after its own assert_clean() still fails it.
    problems = v.problems()
    if problems and not (failed is not None and failed.failed):
        pytest.fail("\n".join(problems), pytrace=False)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    rep = yield
    if rep.when == "call":
        item.rep_call = rep
    return rep
