"""The views notebooks 10-12 show, in JupyterLab at 1280 x 800 with the file browser open: nothing
scrolls sideways, nothing sticks out of the output area, no text is cut (issue 40).

The course's views, enumerated from the notebooks' ``view-*`` tags and displayed objects:
10 shows the findings (section 1), the search (section 5) and a comparison (section 6); 11 a
comparison on two targets (section 4, with the "reconciled" column) and the mesh on the chips
(section 8); 12 the KV cache's layouts (section 2), the serving comparison (section 3), the
smallest slice (section 5) and the offload comparison (section 6). One notebook shows each of
them once, in one JupyterLab session: from the notebooks' own calls where they take seconds,
from the real calls' saved JSON (``tests/fixtures/course_views``) where the call takes minutes,
and from the hand-built fixtures of ``tests/render`` for the comparisons' variants (two
targets, argument bytes that do not reconcile, several hosts). Every ``<details>`` is opened,
so the full reports inside a comparison are measured too.
"""

from __future__ import annotations

import json
import os

import nbformat
import pytest

from tests.browser.conftest import SKIP_ENV

from .jupyterlab import ROOT, LabPage, lab  # noqa: F401 -- the session's JupyterLab server

pytestmark = pytest.mark.skipif(
    os.environ.get(SKIP_ENV) == "1", reason=f"{SKIP_ENV}=1: browser tests skipped on request"
)

FIXTURES = ROOT / "tests" / "fixtures" / "course_views"

_SETUP = """\
import json
import pathlib

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz as sv

sv.use_cpu_devices(8)
from shardviz.model.physical import PhysicalLayout  # noqa: E402
from shardviz.model.serving import ServingComparison, SliceChoice  # noqa: E402
from shardviz.strategies import get_model  # noqa: E402

FIX = pathlib.Path({fixtures!r})
"""

#: (tag, the cell's code after its ``# view: <tag>`` line), in the course's order.
VIEWS: dict[str, str] = {
    "findings": "from tests.render.findings_fixtures import findings\nfindings()",
    "search": "from tests.render.test_search_views import search\nsearch()",
    "compare": (
        "mesh8 = sv.Mesh(range(8), (8,), ('data',))\n"
        "small = get_model('mlp', d_model=64, d_hidden=256, batch=1024)\n"
        "sv.compare(small, ['zero1', 'dp', 'fsdp'], mesh=mesh8, steps=2)"
    ),
    "compare-targets": "from tests.render.compare_fixtures import comparison_targets\n"
    "comparison_targets()",
    "compare-unreconciled": "from tests.render.compare_fixtures import comparison_edges\n"
    "comparison_edges()",
    "compare-hosts": "from tests.render.host_fixtures import comparison_two_hosts\n"
    "comparison_two_hosts()",
    "physical": "PhysicalLayout.from_json((FIX / 'physical_megatron.json').read_text())",
    "kv-cache": (
        "mesh = sv.Mesh(range(8), (2, 1, 4), ('data', 'sequence', 'tensor'))\n"
        "keys = jax.ShapeDtypeStruct((4, 16, 8192, 4, 128), jnp.bfloat16,\n"
        "    sharding=NamedSharding(mesh.jax_mesh, P(None, 'data', None, 'tensor')))\n"
        "sv.layout(keys, name='keys (dp+tp)')"
    ),
    "serving": "ServingComparison.from_json((FIX / 'serving_decode.json').read_text())",
    "slice": "SliceChoice.from_json((FIX / 'slice_checked.json').read_text())",
    "offload": "sv.compare('mlp', ['zero2', 'zero-offload'])",
}

#: What a person would see cut or scrolled in one output area: an element past its right
#: edge, a box that scrolls or clips sideways, text cut without an ellipsis and a tooltip.
_FIT_JS = """(area) => {
  const edge = area.getBoundingClientRect().right;
  const out = [];
  if (area.scrollWidth > area.clientWidth + 1)
    out.push(`the output area scrolls: ${area.scrollWidth} px in ${area.clientWidth} px`);
  for (const e of area.querySelectorAll('*')) {
    if (!e.checkVisibility()) continue;
    const cls = typeof e.className === 'string' ? e.className : e.className.baseVal;
    const what = `${e.tagName}.${cls} "${(e.textContent || '').trim().slice(0, 40)}"`;
    const r = e.getBoundingClientRect();
    if (r.width > 0 && r.right > edge + 1)
      out.push(`${what} ends ${Math.round(r.right - edge)} px past the output area`);
    if (e instanceof SVGElement && !(e instanceof SVGSVGElement)) continue;
    const s = getComputedStyle(e);
    const cut = s.textOverflow === 'ellipsis' && e.title;  // abbreviated, whole on hover
    if (e.scrollWidth > e.clientWidth + 1 && s.overflowX !== 'visible' && !cut)
      out.push(`${what} scrolls or clips: ${e.scrollWidth} px in ${e.clientWidth} px`);
  }
  return out;
}"""


def _notebook(path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(_SETUP.format(fixtures=str(FIXTURES)))]
    nb.cells += [nbformat.v4.new_code_cell(f"# view: {tag}\n{code}") for tag, code in VIEWS.items()]
    nbformat.write(nb, path)


def _sidebar_open(page) -> float:
    """Open the file browser in the left sidebar; the width of the notebook's output areas."""
    page.evaluate("window.jupyterapp.commands.execute('filebrowser:activate')")
    page.locator("#filebrowser").wait_for(state="visible", timeout=10_000)
    return page.evaluate(
        "() => document.querySelector('.jp-Notebook .jp-OutputArea-output').clientWidth"
    )


def test_every_course_view_fits_the_output_area_at_1280_px(lab, viewer, artifacts, tmp_path):  # noqa: F811
    for name in ("physical_megatron.json", "serving_decode.json", "slice_checked.json"):
        json.loads((FIXTURES / name).read_text(encoding="utf-8"))  # saved, and JSON
    path = tmp_path / "course_views.ipynb"
    _notebook(path)
    shots = artifacts / "course-views"
    shots.mkdir(exist_ok=True)
    viewer.page.set_viewport_size({"width": 1280, "height": 800})
    page = LabPage(lab, viewer.page, path).open()
    try:
        page.run_all()
        width = _sidebar_open(viewer.page)
        # the column a learner has at 1280 px with the file browser open
        assert 700 < width < 900, width
        problems: dict[str, list[str]] = {}
        for tag in VIEWS:
            cell = page.cell_tagged(tag)
            area = cell.locator(".jp-OutputArea-output").last
            area.wait_for(timeout=60_000)
            errors = cell.locator(
                ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']"
            )
            assert errors.count() == 0, f"{tag}: {errors.first.inner_text()[:2000]}"
            assert cell.locator(".jp-OutputArea-output [class*='sv-']").count() >= 1, tag
            area.evaluate("a => a.querySelectorAll('details').forEach(d => { d.open = true; })")
            cell.screenshot(path=str(shots / f"{tag}.png"))
            found = area.evaluate(_FIT_JS)
            if found:
                problems[tag] = found[:12]
        assert not problems, json.dumps(problems, indent=1, ensure_ascii=False)
        viewer.assert_clean()
    finally:
        lab.delete_sessions()
