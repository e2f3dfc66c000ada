"""Every page of the docs site opened in Chromium, served from 127.0.0.1: no JS error, no console
error, no request leaving the machine, no missing file, and plotly figures drawn offline.

The browser setup is the one of ``tests/browser`` (Debian's ``/usr/bin/chromium``; never
``playwright install``; ``SHARDVIZ_SKIP_BROWSER=1`` skips).
"""

from __future__ import annotations

import os
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import pytest
from browser.conftest import CHROMIUM, CHROMIUM_ARGS, SKIP_ENV, _missing, is_local

from .conftest import Site

#: Milliseconds a page gets to load, and a plotly figure to draw.
LOAD_MS = 30_000
DRAW_MS = 15_000


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 (the base class's name)
        pass


@pytest.fixture(scope="module")
def server(built: Site):
    """The built site over http on 127.0.0.1, as a reader's browser would get it."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(built.html)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_port}/"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_every_page_opens_in_chromium_offline(built: Site, server: str) -> None:
    if os.environ.get(SKIP_ENV) == "1":
        pytest.skip(f"{SKIP_ENV}=1: browser tests skipped on request")
    problem = _missing()
    if problem:
        pytest.fail(problem, pytrace=False)
    from playwright.sync_api import sync_playwright

    pages = [p.relative_to(built.html).as_posix() for p in built.pages()]
    assert len(pages) > 20, pages
    problems: list[str] = []
    current = {"page": ""}

    def note(what: str) -> None:
        problems.append(f"{current['page']}: {what}")

    def route(r) -> None:
        if is_local(r.request.url):
            r.continue_()
        else:
            note(f"request to leave the machine (aborted): {r.request.url}")
            r.abort()

    figures = 0
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            context.route("**/*", route)
            context.on(
                "response",
                lambda r: note(f"HTTP {r.status} for {r.url}") if r.status >= 400 else None,
            )
            page = context.new_page()
            page.on("pageerror", lambda exc: note(f"JS error: {exc}"))
            page.on(
                "console",
                lambda m: note(f"console.{m.type}: {m.text}") if m.type == "error" else None,
            )
            page.on("dialog", lambda d: (note(f"dialog: {d.message}"), d.dismiss()))
            for name in pages:
                current["page"] = name
                page.goto(server + name, wait_until="load", timeout=LOAD_MS)
                graphs = page.locator(".plotly-graph-div")
                for i in range(graphs.count()):
                    drawn = graphs.nth(i).locator(".main-svg").first
                    try:
                        drawn.wait_for(state="attached", timeout=DRAW_MS)
                        figures += 1
                    except Exception:  # noqa: BLE001 (reported below, page by page)
                        note(f"plotly figure {i} was not drawn")
            context.close()
        finally:
            browser.close()
    assert not problems, "\n".join(problems)
    print(f"{len(pages)} pages opened, {figures} plotly figures drawn")
