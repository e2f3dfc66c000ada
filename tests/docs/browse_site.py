"""Open every page of a built docs site in Chromium, served over http from 127.0.0.1, and print
what went wrong as one line of JSON: ``python tests/docs/browse_site.py docs/_build/html``.

Run by ``test_browser.py`` in a process of its own: Playwright's sync API allows one running
instance per process, and ``tests/browser`` keeps one open for its whole session.

Recorded as problems: a request that would leave the machine (aborted), an HTTP error for a
file of the site, a JS error, a console error, a dialog, and a plotly figure not drawn.
"""

from __future__ import annotations

import json
import sys
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for browser.conftest

from browser.conftest import chromium, is_local  # noqa: E402

#: Milliseconds a page gets to load, and a plotly figure to draw.
LOAD_MS = 30_000
DRAW_MS = 15_000


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 (the base class's name)
        pass


def pages_of(html: Path) -> list[str]:
    """The site's pages, relative to its root (theme files under ``_static`` are not pages)."""
    return sorted(
        p.relative_to(html).as_posix()
        for p in html.rglob("*.html")
        if "_static" not in p.relative_to(html).parts
    )


#: How many code blocks of the page are wider than the column they sit in.
CODE_SCROLLS = (
    "() => [...document.querySelectorAll('div.highlight pre')]"
    ".filter(e => e.scrollWidth > e.clientWidth + 1).length"
)


def browse(html: Path) -> dict:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(html)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    root = f"http://127.0.0.1:{httpd.server_port}/"
    pages = pages_of(html)
    problems: list[str] = []
    current = {"page": ""}
    figures = 0

    def note(what: str) -> None:
        problems.append(f"{current['page']}: {what}")

    def route(r) -> None:
        if is_local(r.request.url):
            r.continue_()
        else:
            note(f"request to leave the machine (aborted): {r.request.url}")
            r.abort()

    try:
        with chromium() as browser:
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
                page.goto(root + name, wait_until="load", timeout=LOAD_MS)
                wide = page.evaluate(CODE_SCROLLS)
                if wide:
                    note(f"{wide} code block(s) scroll sideways at 1280 px (cut off)")
                graphs = page.locator(".plotly-graph-div")
                for i in range(graphs.count()):
                    try:
                        graphs.nth(i).locator(".main-svg").first.wait_for(
                            state="attached", timeout=DRAW_MS
                        )
                        figures += 1
                    except Exception:  # noqa: BLE001 (a problem of the page, recorded)
                        note(f"plotly figure {i} was not drawn")
            context.close()
    finally:
        httpd.shutdown()
        httpd.server_close()
    return {"pages": pages, "figures": figures, "problems": problems}


if __name__ == "__main__":
    print(json.dumps(browse(Path(sys.argv[1]).resolve())))
