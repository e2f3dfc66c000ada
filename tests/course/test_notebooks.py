"""The workshop notebooks run top to bottom in a fresh kernel and are stored without outputs.

Every ``notebooks/*.ipynb`` is picked up. Each runs in its own kernel process (so its first
cell's ``use_cpu_devices`` works whatever this process did with jax), started from this
interpreter: a kernelspec named ``python3`` pointing at ``sys.executable`` is put first on
``JUPYTER_PATH`` for the run.

Cells tagged ``view-<what>`` must display an SVG view (``text/html`` containing ``<svg``).

The docs build runs the same notebooks top to bottom in a fresh kernel of this interpreter
(warnings and errors fail it). When this session built the docs (``tests/docs`` runs first),
its execution cache holds each notebook's outputs: a notebook whose code cells are exactly
those cached is checked on those outputs instead of being run a second time. Anything else
(no build this session, a notebook changed since, no cache record) runs here.
"""

from __future__ import annotations

import json
import os
import sys
from functools import cache
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK_DIR = ROOT / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
CELL_TIMEOUT = 600
#: Views the first notebook must show as SVG (by cell tag).
REQUIRED_VIEWS = {
    "02_mesh_and_tiles.ipynb": {"view-mesh", "view-tiles", "view-tree"},
    "07_pipeline.ipynb": {"view-schedule"},
}


def _kernel_env(tmp: Path) -> dict[str, str]:
    """Environment for the kernel: our interpreter's kernelspec first, the repo importable."""
    spec_dir = tmp / "kernels" / "python3"
    spec_dir.mkdir(parents=True, exist_ok=True)
    (spec_dir / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "Python 3 (shardviz tests)",
                "language": "python",
            }
        )
    )
    env = {"JUPYTER_PATH": os.pathsep.join([str(tmp), os.environ.get("JUPYTER_PATH", "")])}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    env["JAX_PLATFORMS"] = os.environ.get("JAX_PLATFORMS", "cpu")
    return env


#: Set by ``tests/docs/conftest.py`` once this session's docs build succeeded.
DOCS_EXECUTED = "SHARDVIZ_DOCS_EXECUTED"


def _from_docs_build(path: Path, nb: nbformat.NotebookNode) -> nbformat.NotebookNode | None:
    """``nb`` with the outputs the docs build's run of the same notebook gave, or ``None``
    (no build this session, no record of it, or its code cells differ from ``nb``'s)."""
    root = os.environ.get(DOCS_EXECUTED)
    if not root or not Path(root).is_dir():
        return None
    try:
        from jupyter_cache import get_cache
    except ImportError:
        return None
    code = [c for c in nb.cells if c.cell_type == "code"]
    for folder in Path(root).iterdir():
        cache = get_cache(str(folder))
        for record in cache.list_cache_records():
            uri = Path(record.uri)
            if uri.name != path.name or uri.parent.name != path.parent.name:
                continue
            ran = [c for c in cache.get_cache_bundle(record.pk).nb.cells if c.cell_type == "code"]
            if [c.source for c in ran] != [c.source for c in code]:
                return None
            for cell, done in zip(code, ran, strict=True):
                cell["outputs"] = done.get("outputs", [])
                cell["execution_count"] = done.get("execution_count")
            return nb
    return None


@cache
def _executed(path: Path, tmp: Path) -> nbformat.NotebookNode:
    """Run a copy of the notebook once (shared by the tests of that notebook), or take the
    docs build's run of it (see the module docstring)."""
    nb = nbformat.read(path, as_version=4)
    reused = _from_docs_build(path, nb)
    if reused is not None:
        return reused
    with pytest.MonkeyPatch.context() as mp:
        for key, value in _kernel_env(tmp).items():
            mp.setenv(key, value)
        client = nbclient.NotebookClient(
            nb,
            timeout=CELL_TIMEOUT,
            kernel_name="python3",
            store_widget_state=True,
            resources={"metadata": {"path": str(path.parent)}},
        )
        client.execute()
    return nb


@pytest.fixture(scope="module")
def kernel_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("jupyter")


def _ids(p: Path) -> str:
    return p.name


def test_there_are_notebooks() -> None:
    assert NOTEBOOKS, f"no notebooks found in {NOTEBOOK_DIR}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids)
def test_notebook_is_stored_clean(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    dirty = [
        i
        for i, cell in enumerate(nb.cells)
        if cell.cell_type == "code" and (cell.get("outputs") or cell.get("execution_count"))
    ]
    assert not dirty, (
        f"{path.name}: code cells {dirty} have outputs or execution counts; clear them"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids)
def test_notebook_runs_without_errors(path: Path, kernel_dir: Path) -> None:
    nb = _executed(path, kernel_dir)
    errors = [
        (i, out.get("ename"), out.get("evalue"))
        for i, cell in enumerate(nb.cells)
        if cell.cell_type == "code"
        for out in cell.get("outputs", [])
        if out.get("output_type") == "error"
    ]
    assert not errors, f"{path.name}: error outputs {errors}"


def _html_outputs(cell: nbformat.NotebookNode) -> list[str]:
    return [
        out["data"]["text/html"]
        for out in cell.get("outputs", [])
        if out.get("output_type") in ("display_data", "execute_result")
        and "text/html" in out.get("data", {})
    ]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids)
def test_notebook_views_are_svg(path: Path, kernel_dir: Path) -> None:
    nb = _executed(path, kernel_dir)
    seen: set[str] = set()
    for i, cell in enumerate(nb.cells):
        tags = {t for t in cell.get("metadata", {}).get("tags", []) if t.startswith("view-")}
        if cell.cell_type != "code" or not tags:
            continue
        html = _html_outputs(cell)
        assert any("<svg" in h for h in html), (
            f"{path.name}: cell {i} (tags {sorted(tags)}) shows no text/html with an <svg>"
        )
        seen |= tags
    missing = REQUIRED_VIEWS.get(path.name, set()) - seen
    assert not missing, f"{path.name}: no cell tagged {sorted(missing)}"


#: A cell tagged so writes to stderr on purpose (its text says why); no cell of the course is.
OWN_STDERR = "stderr-expected"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids)
def test_notebook_cells_are_quiet(path: Path, kernel_dir: Path) -> None:
    """No cell shows stderr: the compiler's and libtpu's C++ log goes to the terminal that
    started the kernel (ipykernel 7 forwards fd 2 into the running cell), Python's warnings
    are the library's to handle, and progress is a widget, not a stderr line."""
    nb = _executed(path, kernel_dir)
    noisy = [
        (i, out.get("text", "")[:300])
        for i, cell in enumerate(nb.cells)
        if cell.cell_type == "code" and OWN_STDERR not in cell.get("metadata", {}).get("tags", [])
        for out in cell.get("outputs", [])
        if out.get("output_type") == "stream" and out.get("name") == "stderr"
    ]
    assert not noisy, f"{path.name}: cells write to stderr: {noisy}"
