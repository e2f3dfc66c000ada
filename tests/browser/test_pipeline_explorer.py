"""``Explorer.pipeline`` in real JupyterLab: move the microbatch slider, see the schedule redraw.

A small transformer (4 layers, batch 16) as a 2-stage pipeline on 8 fake CPU devices: the
Schedule pane first draws 2 x S x M = 16 slots (a forward and a backward per stage and
microbatch); one step of the slider to the right (keyboard, as a person would) reruns the
comparison in the background and the pane redraws with 8 microbatches: 32 slots.
"""

from __future__ import annotations

import nbformat

from .jupyterlab import LabPage, lab  # noqa: F401 -- the session's JupyterLab server

SETUP = "import shardviz as sv\nsv.use_cpu_devices(8)"
EXPLORER = (
    "# view: pipeline\n"
    "explorer = sv.Explorer.pipeline('transformer', ['pp'], stages=2, microbatches=4,\n"
    "    layers=4, batch=16, d_model=32, seq=16, d_ff=64, heads=2, vocab=64)\n"
    "explorer"
)
SLOTS = ".sv-pipe .sv-schedule rect.sv-slot"


def test_microbatch_slider_reruns_and_redraws_the_schedule(lab, viewer, tmp_path):  # noqa: F811
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(SETUP), nbformat.v4.new_code_cell(EXPLORER)]
    path = tmp_path / "pipeline_check.ipynb"
    nbformat.write(nb, path)
    page = LabPage(lab, viewer.page, path).open()
    try:
        page.run_all()
        cell = page.cell_tagged("pipeline")
        cell.locator(".sv-pipe[data-microbatches='4']").wait_for(timeout=60_000)
        assert cell.locator(SLOTS).count() == 2 * 2 * 4
        # The explorer's own panes are there too, under the schedule.
        cell.locator(".sv-x-dev").first.wait_for(timeout=60_000)

        slider = cell.locator(".widget-hslider", has_text="microbatches")
        assert slider.locator(".widget-readout").inner_text().strip() == "4"
        slider.locator(".noUi-handle").focus()
        viewer.page.keyboard.press("ArrowRight")  # 4 -> 8, the next divisor of 16
        cell.locator(".sv-pipe[data-microbatches='8']").wait_for(timeout=180_000)
        assert cell.locator(SLOTS).count() == 2 * 2 * 8
        assert slider.locator(".widget-readout").inner_text().strip() == "8"
        assert "showing 2 stages × 8 microbatches" in cell.inner_text()
        cell.screenshot(path=str(viewer.artifacts / "pipeline-explorer.png"))

        # Python reran the comparison with the new count; the kernel is free for more.
        page.run_cell_with(
            "r = explorer.comparison.results[0]\n"
            "assert (r.schedule.stages, r.schedule.microbatches) == (2, 8), r.schedule\n"
            "assert explorer.status == 'done', explorer.error\n"
            "print('reran', r.schedule.microbatches)"
        )
        assert "reran 8" in viewer.page.locator(".jp-Notebook .jp-CodeCell").last.inner_text()
        viewer.assert_clean()
    finally:
        lab.delete_sessions()
