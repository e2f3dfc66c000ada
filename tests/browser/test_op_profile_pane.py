"""The Explorer's op profile pane in a real Chromium, offline (issue 41): the step's predicted
time, flops and bytes by module, by layer and its costliest ops, as ``sv.op_profile`` counts them.

As in test_explorer_widget.py, the Explorer's ES module is rendered with a fake model holding a
real ``ExplorerWidget``'s state; the report is a real compile of a small two-layer model explained
for ``target="v5e"`` (so every op has a predicted time). Every expected row is computed from
``sv.op_profile(report)``, not from the payload the pane draws. The user's names carry
``<b>x</b>`` (the step's name and a named scope): they must read as text. The ``viewer``
fixture fails a test on any request leaving the machine, JS error or dialog.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import pytest

import shardviz as sv
from shardviz.model.op_profile import OpProfile
from shardviz.model.units import format_seconds
from shardviz.render.op_profile import TOP_OPS
from shardviz.widgets.explorer.widget import ExplorerWidget
from tests.analysis.test_op_profile import T, V, _params
from tests.browser.conftest import SKIP_ENV
from tests.browser.fake_model import mount_explorer
from tests.browser.test_fit import _OVERFLOW_JS
from tests.render.report_fixtures import megatron_report

pytestmark = pytest.mark.skipif(
    os.environ.get(SKIP_ENV) == "1", reason=f"{SKIP_ENV}=1: browser tests skipped on request"
)

MARKUP = "<b>x</b>"
LAYERS = 2
PANE = ".sv-x-oppane"


def _loss(p: dict[str, jax.Array], tok: jax.Array) -> jax.Array:
    x = p["embed"][tok]
    for i in range(LAYERS):
        with jax.named_scope(f"layer_{i}"):
            with jax.named_scope("attn"):
                s = jax.nn.softmax((x @ p["wq"][i]) @ x.T, axis=-1)
                x = x + s @ x
            with jax.named_scope(f"mlp {MARKUP}"):  # a user's scope name that looks like markup
                x = x + jax.nn.relu(x @ p["w1"][i]) @ p["w2"][i]
    logits = x @ p["embed"].T
    return -jnp.mean(jax.nn.log_softmax(logits)[jnp.arange(T), tok])


def _step() -> Callable[..., Any]:
    def step(p: dict[str, jax.Array], tok: jax.Array) -> dict[str, jax.Array]:
        g = jax.grad(_loss)(p, tok)
        with jax.named_scope("sgd"):
            return jax.tree.map(lambda a, d: a - 0.1 * d, p, g)

    step.__name__ = step.__qualname__ = f"step_{MARKUP}"
    return step


@pytest.fixture(scope="module")
def report() -> sv.Report:
    """A real compile of the two-layer step, explained for a v5e (predicted times)."""
    return sv.explain(_step(), _params(LAYERS), jnp.arange(T) % V, run=False, target="v5e")


@pytest.fixture(scope="module")
def profile(report: sv.Report) -> OpProfile:
    return sv.op_profile(report)


def _rows(page, group: str) -> list[list[str]]:
    """The cells of the pane's ``group`` table, one list per row below the header."""
    return page.evaluate(
        """([pane, g]) => [...document.querySelectorAll(
             `${pane} table[data-group="${g}"] tr[data-name]`)]
           .map(r => [...r.cells].map(c => c.textContent))""",
        [PANE, group],
    )


def _header(page, group: str) -> list[str]:
    return page.evaluate(
        """([pane, g]) => [...document.querySelector(
             `${pane} table[data-group="${g}"] tr`).cells].map(c => c.textContent)""",
        [PANE, group],
    )


#: Cells a reader would misread: a cell's text closer than GAP px to its neighbour's ("25.8%"
#: running into "49.2 kFLOP"), or a header not aligned with its column's text.
_CRAMPED_JS = """(pane) => {
  const GAP = 6;
  const text = (cell) => {
    const r = document.createRange();
    r.selectNodeContents(cell);
    return r.getBoundingClientRect();
  };
  const out = [];
  for (const table of document.querySelectorAll(`${pane} table`)) {
    const [head, ...rows] = table.rows;
    for (const row of table.rows)
      for (let i = 1; i < row.cells.length; i++) {
        const gap = text(row.cells[i]).left - text(row.cells[i - 1]).right;
        if (row.cells[i].textContent && gap < GAP)
          out.push(`${table.dataset.group}: "${row.cells[i - 1].textContent}" and ` +
                   `"${row.cells[i].textContent}" ${Math.round(gap)} px apart`);
      }
    for (const row of rows)
      for (let i = 0; i < row.cells.length; i++) {
        const right = getComputedStyle(row.cells[i]).textAlign === "right";
        const [h, c] = [text(head.cells[i]), text(row.cells[i])];
        const off = right ? h.right - c.right : h.left - c.left;
        if (Math.abs(off) > 1)
          out.push(`${table.dataset.group}: header "${head.cells[i].textContent}" ` +
                   `${Math.round(off)} px off its column's text "${row.cells[i].textContent}"`);
      }
  }
  return out;
}"""


def _percent(cell: str) -> float:
    assert cell.endswith("%"), cell
    return float(cell[:-1])


def test_the_pane_shows_the_step_by_module_by_layer_and_its_costliest_ops(viewer, report, profile):
    page = mount_explorer(viewer, ExplorerWidget(report))
    pane = page.locator(PANE)
    assert pane.count() == 1
    assert pane.locator("h4").inner_text() == f"Op profile of step_{MARKUP} on {profile.target}"
    assert profile.seconds is not None and profile.seconds > 0  # the target gives times

    # By module: one row per module the analysis found, predicted shares adding up to the step.
    modules = _rows(page, "module")
    assert [r[0] for r in modules] == [_named(g) for g in profile.modules]
    names = {g.name for g in profile.modules}
    assert {"attention", "mlp", "embedding", "loss", "optimizer"} <= names
    assert _header(page, "module") == ["module", "predicted", "share", "flops", "HBM bytes"]
    assert sum(_percent(r[2]) for r in modules) == pytest.approx(100, abs=0.5)
    assert [r[1] for r in modules] == [format_seconds(g.seconds) for g in profile.modules]

    # By layer: the two numbered layers and the top level, adding up the same way.
    layers = _rows(page, "layer")
    assert [r[0] for r in layers] == [_named(g) for g in profile.layers]
    assert [g.name for g in profile.layers] == ["layer 0", "layer 1", "top level"]
    assert sum(_percent(r[2]) for r in layers) == pytest.approx(100, abs=0.5)
    assert layers[0][1:] == layers[1][1:]  # the two layers are the same work

    # The costliest ops, the costliest first, each with its module and layer.
    ops = _rows(page, "op")
    costliest = sorted(profile.ops, key=lambda o: o.seconds or 0.0, reverse=True)
    assert len(ops) == min(TOP_OPS, len(profile.ops)) > 0
    assert ops[0][1] == format_seconds(costliest[0].seconds)
    assert _header(page, "op")[-2:] == ["module", "layer"]
    assert {r[-2] for r in ops} <= names
    assert {r[-1] for r in ops} <= {g.name for g in profile.layers}
    # Numbers right-aligned under their headers, names left.
    align = page.evaluate(
        f"""() => [...document.querySelector('{PANE} table[data-group="module"] tr[data-name]')
              .cells].map(c => getComputedStyle(c).textAlign)"""
    )
    assert align[0] in ("left", "start") and set(align[1:]) == {"right"}
    assert page.evaluate(_CRAMPED_JS, PANE) == []
    viewer.screenshot("explorer-op-profile")
    viewer.assert_clean()


def test_the_users_names_read_as_text_not_markup(viewer, report):
    page = mount_explorer(viewer, ExplorerWidget(report))
    pane = page.locator(PANE)
    assert pane.count() == 1
    assert pane.locator("b").count() == 0  # no element made from the user's names
    assert f"step_{MARKUP}: " in pane.locator(".sv-x-dim").first.inner_text()
    assert MARKUP in pane.locator("h4").inner_text()
    # The scope "mlp <b>x</b>" still puts the layers' feed-forward matmuls in the MLP.
    mlp = next(r for r in _rows(page, "module") if r[0].startswith("mlp ("))
    assert mlp[3] != "0 FLOP"
    viewer.assert_clean()


@pytest.mark.parametrize("width", [800, 1000])
def test_nothing_in_the_pane_sticks_out_or_scrolls(viewer, report, width):
    """At the widths of a notebook's output area with Lab's file browser open (test_fit.py)."""
    viewer.page.set_viewport_size({"width": width, "height": 900})
    page = mount_explorer(viewer, ExplorerWidget(report))
    assert page.locator(PANE).count() == 1
    assert page.evaluate(_OVERFLOW_JS, f".sv-x-root, {PANE}") == []
    page.locator(PANE).scroll_into_view_if_needed()
    viewer.screenshot(f"fit-op-profile-{width}")
    viewer.assert_clean()


def test_no_pane_without_a_compiled_schedule(viewer):
    """A report with no op list (e.g. read from an older save) shows no empty pane."""
    page = mount_explorer(viewer, ExplorerWidget(megatron_report()))
    assert page.locator(".sv-x-root").count() == 1
    assert page.locator(PANE).count() == 0
    viewer.assert_clean()


def _named(g) -> str:
    """A group's first cell: its name and op count."""
    return f"{g.name} ({g.ops} op{'' if g.ops == 1 else 's'})"
