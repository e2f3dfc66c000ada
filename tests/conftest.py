"""Every test process runs on fake CPU devices (8 unless SHARDVIZ_TEST_DEVICES says otherwise),
set before jax's backend starts."""

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402

jax.config.update("jax_num_cpu_devices", int(os.environ.get("SHARDVIZ_TEST_DEVICES", "8")))


from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

TESTS = Path(__file__).resolve().parent
#: The docs build and the notebook tests share one worker: the notebook tests reuse the runs the
#: build made (tests/test_notebooks.py), which live in the build's process environment.
DOCS_GROUP = "docs-and-notebooks"


def pytest_configure(config):
    config.addinivalue_line("markers", "xdist_group(name): tests that share one xdist worker")


def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist (``make test`` runs ``-n 2 --dist loadgroup``) each file stays on one
    worker, so a module's fixtures (most of them compiles) run once, and the docs build and the
    notebook tests share one; without xdist the marks change nothing."""
    for item in items:
        path = Path(str(item.fspath)).resolve()
        if TESTS / "docs" in path.parents or path.name == "test_notebooks.py":
            group = DOCS_GROUP
        else:
            group = str(path.relative_to(TESTS))
        item.add_marker(pytest.mark.xdist_group(group))
