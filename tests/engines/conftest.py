"""One cluster of 2 engines x 4 CPU devices for every test of this folder (starting one takes
seconds): the tests that break a cluster start their own."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("ipyparallel")

#: The engines import the test modules by name (functions are sent by reference), so they
#: get the directory pytest imported them from.
TESTS_DIR = str(Path(__file__).resolve().parent.parent)


@pytest.fixture(scope="package")
def two():
    from shardviz.engines import cluster

    c = cluster(processes=2, devices_per_process=4, timeout=120)
    try:
        c.execute(f"import sys; sys.path.insert(0, {TESTS_DIR!r})")
        yield c
    finally:
        c.stop()
