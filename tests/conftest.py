"""Every test process runs on fake CPU devices (8 unless SHARDVIZ_TEST_DEVICES says otherwise),
set before jax's backend starts."""

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402

jax.config.update("jax_num_cpu_devices", int(os.environ.get("SHARDVIZ_TEST_DEVICES", "8")))


#: The docs build and the notebook tests share one xdist worker: the notebook tests reuse the runs
#: the build made (tests/test_notebooks.py), which live in the build's process environment.
DOCS_GROUP = "docs-and-notebooks"


def _scope(nodeid: str) -> str:
    """The work unit a test belongs to: its file, or the docs group."""
    path = nodeid.split("::", 1)[0]
    if path.startswith("tests/docs/") or path == "tests/test_notebooks.py":
        return DOCS_GROUP
    return path


try:
    from xdist.scheduler import LoadScopeScheduling
except ImportError:  # the suite also runs without pytest-xdist, in one process
    pass
else:

    class _ByFile(LoadScopeScheduling):
        """Each file on one worker, so a module's fixtures (most of them compiles) run once;
        the docs build and the notebook tests that reuse its runs on the same one."""

        def _split_scope(self, nodeid: str) -> str:
            return _scope(nodeid)

    def pytest_xdist_make_scheduler(config, log):
        """``make test`` runs ``-n 2``: files, not single tests, are shared out."""
        return _ByFile(config, log)
