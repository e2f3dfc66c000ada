"""Every test process runs on fake CPU devices (8 unless SHARDVIZ_TEST_DEVICES says otherwise),
set before jax's backend starts."""

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402

jax.config.update("jax_num_cpu_devices", int(os.environ.get("SHARDVIZ_TEST_DEVICES", "8")))


#: The docs build and the notebook tests share one xdist worker: the notebook tests reuse the runs
#: the build made (tests/course/test_notebooks.py), which live in the build's process environment.
DOCS_GROUP = "docs-and-notebooks"


#: The work units that took longest in a full run (2026-11-29, `--durations`): the docs build
#: with the notebooks (about 15 minutes), then the README's snippets and the files of
#: whole-notebook or twenty-process tests; the rest go out largest first (xdist's order).
LONGEST_FIRST = (
    DOCS_GROUP,
    "tests/docs/test_readme.py",
    "tests/explainer/test_lifecycle.py",
    "tests/widgets/test_pipeline_explorer.py",
    "tests/capture/test_moe_model_flops.py",
    "tests/browser/test_course_views_fit.py",
)


def _scope(nodeid: str) -> str:
    """The work unit a test belongs to: its file, or the docs group."""
    path = nodeid.split("::", 1)[0]
    if path == "tests/course/test_notebooks.py" or (
        path.startswith("tests/docs/") and path != "tests/docs/test_readme.py"
    ):
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

        def _assign_work_unit(self, node) -> None:  # type: ignore[no-untyped-def]
            """The longest units go out first, so that neither worker is left with one of
            them at the end while the other waits."""
            for scope in reversed(LONGEST_FIRST):
                if scope in self.workqueue:
                    self.workqueue.move_to_end(scope, last=False)
            super()._assign_work_unit(node)

    def pytest_xdist_make_scheduler(config, log):
        """``make test`` runs ``-n 2``: files, not single tests, are shared out."""
        return _ByFile(config, log)
