"""End to end in real JupyterLab (layer 3): notebooks run in Lab's own kernel and page.

Every test opens a fresh copy of a notebook, runs all cells, and clicks through the widgets;
the ``viewer`` fixture fails a test on any request leaving 127.0.0.1 and on any JS error.
"""

from __future__ import annotations

import nbformat

from .jupyterlab import NOTEBOOKS, LabPage, lab  # noqa: F401 -- the session's JupyterLab server


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


def _texts(locator) -> list[str]:
    return [t.strip() for t in locator.all_inner_texts()]


def test_explorer_notebook_end_to_end(lab, viewer, artifacts):  # noqa: F811
    page = LabPage(lab, viewer.page, NOTEBOOKS / "09_explorer.ipynb").open()
    shots = artifacts / "lab"
    shots.mkdir(exist_ok=True)
    try:
        page.run_all()
        cell = page.cell_tagged("explorer")
        devices = cell.locator(".sv-x-dev")
        devices.first.wait_for(timeout=60_000)
        assert devices.count() == 8

        # A device: its tiles light up.
        cell.locator('.sv-x-dev[data-device="2"]').click()  # (the notebook selected 5)
        cell.locator(".sv-x-tile.sv-selected").first.wait_for(timeout=10_000)
        assert cell.locator(".sv-x-tile.sv-selected").count() >= 1
        cell.screenshot(path=str(shots / "explorer-device.png"))

        # A collective: its device groups light up on the mesh.
        cell.locator("tr.sv-x-coll").first.click()
        cell.locator(".sv-x-dev[data-group]").first.wait_for(timeout=10_000)
        assert cell.locator(".sv-x-dev[data-group]").count() == 8
        cell.screenshot(path=str(shots / "explorer-collective.png"))

        # Prefetch: the kernel sends the arrays ahead, so a pick draws before Python answers.
        cell.locator('.sv-x-root[data-prefetch="done"]').wait_for(timeout=60_000)
        picked, drawn = cell.locator(".sv-x-pick").evaluate(
            """pick => {
                const root = pick.closest('.sv-x-root');
                const id = 'mid:dot_general.0';
                pick.value = id;
                pick.dispatchEvent(new Event('change', {bubbles: true}));
                const name = root.querySelector('.sv-x-array .sv-x-name');
                return [id, !root.querySelector('.sv-x-loading') && !!name
                            && name.textContent === id.slice(4)];
            }"""
        )
        assert drawn, "a prefetched array is drawn in the change handler itself"
        page.run_cell_with(f"assert explorer.selected_array == {picked!r}\nprint('picked')")
        assert "picked" in viewer.page.locator(".jp-Notebook .jp-CodeCell").last.inner_text()

        # A misspelt axis: flagged inline, and the kernel still runs the next cell.
        w1 = cell.locator(".widget-text:has([title^='params/w1:'])").locator("input")
        w1.fill("P('modle', None)")
        cell.get_by_text("modle", exact=False).last.wait_for(timeout=10_000)
        # ... and the panes say they show the last valid configuration, naming the box.
        cell.locator('.sv-x-status[data-status="stale"]').wait_for(timeout=10_000)
        assert cell.locator(".sv-x-status").inner_text() == "showing the last valid configuration"
        assert cell.locator(".sv-x-staleline").inner_text().startswith("fix params/w1: ")
        cell.screenshot(path=str(shots / "explorer-invalid-spec.png"))
        page.run_cell_with("print('kernel alive', 6 * 7)")
        assert (
            "kernel alive 42" in viewer.page.locator(".jp-Notebook .jp-CodeCell").last.inner_text()
        )
        w1.fill("P(None, 'model')")
        cell.locator('.sv-x-status[data-status="stale"]').wait_for(state="detached", timeout=10_000)
        assert cell.locator(".sv-x-staleline").is_hidden()

        # Renaming the axes carries the new names into the spec boxes: nothing turns red.
        names = cell.locator(".widget-text", has_text="axis names").locator("input")
        names.fill("dp, tp")
        viewer.page.wait_for_function(
            "el => el.value === \"P(None, 'tp')\"", arg=w1.element_handle(), timeout=10_000
        )
        assert cell.locator(".shardviz-invalid").count() == 0
        names.fill("data, model")
        viewer.page.wait_for_function(
            "el => el.value === \"P(None, 'model')\"", arg=w1.element_handle(), timeout=10_000
        )

        # Another strategy: the ledger and the memory pane change.
        ledger_before = _texts(cell.locator("tr.sv-x-coll"))
        memory_before = cell.locator(".sv-x-mempane").inner_text()
        cell.locator(".widget-dropdown", has_text="strategy").locator("select").select_option("dp")
        viewer.page.wait_for_function(
            """el => { const rows = [...el.querySelectorAll('tr.sv-x-coll')];
                       return rows.length > 0 && rows.every(r => r.textContent.includes('data'))
                              && !rows.some(r => r.textContent.includes('model')); }""",
            arg=cell.element_handle(),
            timeout=180_000,
        )
        assert _texts(cell.locator("tr.sv-x-coll")) != ledger_before
        assert cell.locator(".sv-x-mempane").inner_text() != memory_before
        # The new report's arrays are prefetched too (its own generation).
        cell.locator('.sv-x-root[data-prefetch="done"]').wait_for(timeout=60_000)
        cell.screenshot(path=str(shots / "explorer-dp.png"))

        # The live training view drew its points.
        live_cell = page.cell_tagged("live")
        live_cell.locator(".sv-l-pt").first.wait_for(timeout=60_000)
        assert live_cell.locator(".sv-l-pt").count() == 30
        live_cell.screenshot(path=str(shots / "live.png"))
        viewer.assert_clean()
    finally:
        lab.delete_sessions()
