"""The Explorer of a user's 274-leaf training state in real JupyterLab (issue 27, section 3):
the spec boxes stand in folders (parameters first, open; layers closed), Adam's moments follow
their parameters, every box is wide enough for a spec, the panes start just below the
controls, and the filter sets every ``wq`` at once, mirrors included, with one recompile.
"""

from __future__ import annotations

import nbformat

from .jupyterlab import LabPage, lab  # noqa: F401 -- the session's JupyterLab server

#: The notebook's output area at 1280 px with the file browser open is about 820 px wide.
VIEWPORT = {"width": 1280, "height": 1000}
#: How far below the cell's top the panes may start: the mesh, filter and follow lines and
#: the parameters' open folder (three boxes and a closed ``layers``), not 274 boxes.
PANES_WITHIN_PX = 800


def _notebook(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(
            "import shardviz as sv\nsv.use_cpu_devices(8)\n"
            "from tests.fixtures import user_llama\n"
            "step, state, batch = user_llama.make(user_llama.SMALL)\n"
            "import jax\nprint(len(jax.tree.leaves(state)), 'leaves')"
        ),
        nbformat.v4.new_code_cell(
            "# view: explorer\nexplorer = sv.Explorer(step, state, batch)\nexplorer"
        ),
    ]
    path = tmp_path / "llama_explorer.ipynb"
    nbformat.write(nb, path)
    return path


def _visible_box_widths(cell) -> list[float]:
    return cell.locator(".widget-text:has([title*=': shape']) input").evaluate_all(
        "els => els.filter(e => e.offsetParent !== null).map(e => e.getBoundingClientRect().width)"
    )


def test_a_274_leaf_state_in_jupyterlab(lab, viewer, tmp_path, artifacts):  # noqa: F811
    viewer.page.set_viewport_size(VIEWPORT)
    page = LabPage(lab, viewer.page, _notebook(tmp_path)).open()
    shots = artifacts / "lab"
    shots.mkdir(exist_ok=True)
    try:
        page.run_all()
        assert "274 leaves" in page.cell(0).inner_text()
        cell = page.cell_tagged("explorer")
        root = cell.locator(".sv-x-root")
        root.wait_for(timeout=180_000)

        folds = cell.locator(".sv-spec-fold")
        titles = [t.strip() for t in folds.all_inner_texts() if t.strip()]
        assert titles[0].startswith("▾ state/params · 91 leaves (+182 optimizer leaves follow)")
        assert any(t.startswith("▸ layers · 88 leaves") for t in titles), titles
        widths = _visible_box_widths(cell)
        assert len(widths) == 3, widths  # embed, final_norm, unembed; layers closed
        assert min(widths) >= 220, widths
        top = cell.bounding_box()["y"]
        assert root.bounding_box()["y"] - top <= PANES_WITHIN_PX
        cell.screenshot(path=str(shots / "llama-controls.png"))

        cell.locator(".widget-text", has_text="filter").locator("input").fill("layers/*/wq")
        wq = cell.locator(".widget-text:has([title*='/wq: shape']) input")
        viewer.page.wait_for_function(
            "cell => [...cell.querySelectorAll(\".widget-text:has([title*='/wq: shape']) input\")]"
            ".filter(e => e.offsetParent !== null).length === 8",
            arg=cell.element_handle(),
            timeout=10_000,
        )
        assert min(_visible_box_widths(cell)) >= 220
        assert "16 optimizer leaves follow them" in cell.inner_text()
        cell.locator(".widget-text", has_text="set to").locator("input").fill("model, data")
        cell.locator(".widget-button", has_text="set on the 8 matches").click()
        cell.locator(".sv-x-changes", has_text="since the last configuration").wait_for(
            timeout=300_000
        )
        assert wq.first.input_value() == "P('model', 'data')"
        cell.screenshot(path=str(shots / "llama-filtered.png"))
        page.run_cell_with(
            "a = explorer.report.arguments\n"
            "assert a['state/opt/0/mu/layers/3/wq'].spec == (('model',), ('data',))\n"
            "assert a['state/params/layers/3/wq'].spec == (('model',), ('data',))\n"
            "assert a['state/params/layers/3/wo'].spec == (('model',), ('data',))\n"
            "print('followed')"
        )
        assert "followed" in viewer.page.locator(".jp-Notebook .jp-CodeCell").last.inner_text()
        viewer.assert_clean()
    finally:
        lab.delete_sessions()
