"""Every page of the docs site opened in Chromium, served from 127.0.0.1: no JS error, no console
error, no request leaving the machine, no missing file, plotly figures drawn offline, and no
code block scrolling sideways at 1280 px (code wraps in the text column).

The browser setup is the one of ``tests/browser`` (Debian's ``/usr/bin/chromium``; never
``playwright install``; ``SHARDVIZ_SKIP_BROWSER=1`` skips). The pages are opened by
``browse_site.py`` in a process of its own (see there why).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from browser.conftest import SKIP_ENV, _missing

from .conftest import Site

BROWSE = Path(__file__).resolve().parent / "browse_site.py"
#: Seconds for opening every page.
TIMEOUT = 15 * 60


def test_every_page_opens_in_chromium_offline(built: Site) -> None:
    if os.environ.get(SKIP_ENV) == "1":
        pytest.skip(f"{SKIP_ENV}=1: browser tests skipped on request")
    problem = _missing()
    if problem:
        pytest.fail(problem, pytrace=False)
    proc = subprocess.run(
        [sys.executable, str(BROWSE), str(built.html)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert proc.returncode == 0, f"browse_site.py failed:\n{proc.stdout}\n{proc.stderr}"
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(result["pages"]) > 20, result["pages"]
    assert not result["problems"], "\n".join(result["problems"])
    print(f"{len(result['pages'])} pages opened, {result['figures']} plotly figures drawn")
