"""The docs site (``make docs``), built once per session and checked page by page.

The ``site`` fixture runs the same Sphinx command as ``make docs`` (warnings are errors, every
notebook and how-to page executed) into a temporary folder, so a test run never reads a stale
``docs/_build``. ``SHARDVIZ_DOCS_HTML=docs/_build/html`` checks a build made by ``make docs``
instead, without building again (the build test then checks that build's log, if it can).

The build takes minutes (it runs every course notebook): these tests carry the ``docs``
marker, so ``pytest -m "not docs"`` leaves them out in a quick local run.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
NOTEBOOKS = ROOT / "notebooks"
#: A folder holding a built site to check instead of building one.
HTML_ENV = "SHARDVIZ_DOCS_HTML"
#: The longest the build may take before the test gives up on it.
BUILD_TIMEOUT = 40 * 60
#: Set for the rest of the session once this session's build succeeded: its execution cache
#: (the course notebooks run in a fresh kernel, as ``tests/course/test_notebooks.py`` runs them),
#: which that test reads instead of running every notebook a second time.
EXECUTED_ENV = "SHARDVIZ_DOCS_EXECUTED"
HERE = Path(__file__).resolve().parent


def pytest_configure(config):
    config.addinivalue_line("markers", "docs: builds or checks the docs site (minutes)")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.docs)


def sphinx_command(out: Path) -> list[str]:
    """What ``make docs`` runs, writing into ``out``."""
    return [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b", "html", str(DOCS), str(out)]


@dataclass
class Site:
    """A built site: its HTML folder, and the build's exit code, log and duration (None when
    the site was built elsewhere)."""

    html: Path
    returncode: int | None = None
    log: str = ""
    seconds: float | None = None

    def pages(self) -> list[Path]:
        """Every HTML page of the site (theme assets under ``_static`` are not pages)."""
        return sorted(
            p for p in self.html.rglob("*.html") if "_static" not in p.relative_to(self.html).parts
        )

    def page(self, name: str) -> str:
        path = self.html / name
        assert path.is_file(), f"the site has no page {name}"
        return path.read_text(encoding="utf-8")

    def require_built(self) -> None:
        if self.returncode not in (None, 0):
            pytest.fail(f"the docs build failed (exit {self.returncode}):\n{tail(self.log)}")


def tail(log: str, lines: int = 60) -> str:
    return "\n".join(log.splitlines()[-lines:])


@pytest.fixture(scope="session")
def site(tmp_path_factory) -> Site:
    given = os.environ.get(HTML_ENV)
    if given:
        html = Path(given).resolve()
        if not (html / "index.html").is_file():
            pytest.fail(f"{HTML_ENV}={given}: no index.html there; run `make docs` first")
        return Site(html=html)
    out = tmp_path_factory.mktemp("docs") / "html"
    env = {k: v for k, v in os.environ.items() if k != "SHARDVIZ_DEVICES"}
    start = time.monotonic()
    proc = subprocess.run(
        sphinx_command(out),
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=BUILD_TIMEOUT,
    )
    seconds = time.monotonic() - start
    (out.parent / "build.log").write_text(proc.stdout, encoding="utf-8")
    if proc.returncode == 0:
        os.environ[EXECUTED_ENV] = str(out.parent / ".jupyter_cache")
    return Site(html=out, returncode=proc.returncode, log=proc.stdout, seconds=seconds)


@pytest.fixture(scope="session")
def built(site: Site) -> Site:
    """The site, failing the test at once if it did not build."""
    site.require_built()
    return site


class PageParser(HTMLParser):
    """The ids a page defines, the links it makes and the resources it loads."""

    RESOURCES = {"script": "src", "img": "src", "iframe": "src", "source": "src", "embed": "src"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[str] = []
        self.resources: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        for key in ("id", "name"):
            if a.get(key):
                self.ids.add(a[key])
        if tag == "a" and "href" in a:
            self.links.append(a["href"])
        elif tag == "link" and a.get("href"):
            self.resources.append(a["href"])
        elif tag in self.RESOURCES and a.get(self.RESOURCES[tag]):
            self.resources.append(a[self.RESOURCES[tag]])


def parse(path: Path) -> PageParser:
    parser = PageParser()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser
