"""End to end in real JupyterLab (layer 3): notebooks run in Lab's own kernel and page.

Every test opens a fresh copy of a notebook, runs all cells, and clicks through the widgets;
the ``viewer`` fixture fails a test on any request leaving 127.0.0.1 and on any JS error.
"""

from __future__ import annotations

import nbformat

from .jupyterlab import LabPage, lab  # noqa: F401 -- the session's JupyterLab server


def _notebook(tmp_path, *sources: str):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s) for s in sources]
    path = tmp_path / "lab_check.ipynb"
    nbformat.write(nb, path)
    return path


def test_mesh_view_renders_and_selects_in_jupyterlab(lab, viewer, tmp_path):  # noqa: F811
    path = _notebook(
        tmp_path,
        "import shardviz as sv\nsv.use_cpu_devices(8)\n"
        "mesh = sv.Mesh(range(8), (2, 4), ('data', 'model'))",
        "# view: mesh\nview = sv.MeshView(sv.layout(mesh))\nview",
    )
    page = LabPage(lab, viewer.page, path).open()
    try:
        page.run_all()
        cell = page.cell_tagged("mesh")
        devices = cell.locator("[data-device]")
        devices.first.wait_for(timeout=60_000)
        assert devices.count() == 8
        cell.locator("[data-device='5']").first.click()
        # The click travels to the kernel: Python sees the selection.
        page.run_cell_with("assert view.selected_device == 5, view.selected_device\nprint('ok')")
        out = viewer.page.locator(".jp-Notebook .jp-CodeCell").last
        assert "ok" in out.inner_text()
        viewer.assert_clean()
    finally:
        lab.delete_sessions()
