"""The views registered with the model: each model method draws with the renderer named here."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from shardviz.model import (
    ArrayLayout,
    Comparison,
    Findings,
    MeshLayout,
    Report,
    TreeLayout,
    display,
)
from shardviz.model.op_profile import OpProfile
from shardviz.model.physical import PhysicalLayout
from shardviz.model.schedule import Schedule
from shardviz.model.search import Search
from shardviz.model.serving import ServingComparison, SliceChoice
from shardviz.model.side_by_side import TreesOnOneScale
from shardviz.model.traffic import CollectiveTraffic
from shardviz.render.compare.html import comparison_html
from shardviz.render.html import array_html, mesh_html, page, tree_html
from shardviz.render.report.html import report_html
from shardviz.render.report.text import report_text
from shardviz.render.text import array_text, mesh_text, tree_text
from shardviz.render.views import VIEWS, comparison_page, report_page

from .compare_fixtures import comparison
from .fixtures import make_layout, mesh_2x4, tree_example
from .report_fixtures import dp_report, nasty_report

MODEL_CLASSES = (
    MeshLayout,
    ArrayLayout,
    TreeLayout,
    Report,
    Comparison,
    Findings,
    Search,
    Schedule,
    TreesOnOneScale,
    CollectiveTraffic,
    PhysicalLayout,
    OpProfile,
    ServingComparison,
    SliceChoice,
)


def test_every_format_a_model_method_asks_for_is_registered() -> None:
    asked = set()
    for cls in MODEL_CLASSES:
        if issubclass(cls, display.Shown):  # print, notebook HTML and save_html
            asked |= {(cls, "text"), (cls, "html"), (cls, "page")}
        source = inspect.getsource(cls)
        for fmt in ("text", "html", "page", "plotly", "matplotlib"):
            if f'display.render(self, "{fmt}")' in source or (
                fmt == "page" and "display.save_page(self" in source
            ):
                asked.add((cls, fmt))
    assert (Report, "page") in asked and (Comparison, "matplotlib") in asked
    assert asked == {(cls, fmt) for cls, fmt, _ in VIEWS}
    for cls, fmt in asked:
        assert display.find_view(cls, fmt) is not None, (cls, fmt)


@pytest.mark.parametrize(
    ("obj", "text", "html"),
    [
        (mesh_2x4(), mesh_text, mesh_html),
        (make_layout("w", (8, 16), ("data", "model"), mesh_2x4()), array_text, array_html),
        (tree_example(), tree_text, tree_html),
        (dp_report(), report_text, report_html),
    ],
    ids=["mesh", "array", "tree", "report"],
)
def test_str_and_repr_html_are_the_registered_views(obj: object, text, html) -> None:
    assert str(obj) == text(obj)
    assert obj._repr_html_() == html(obj)


def test_pages_wrap_the_html_view_under_a_title(tmp_path: Path) -> None:
    r, c = nasty_report(), comparison()
    assert report_page(r) == page(f"shardviz: {r.function}", [report_html(r)])
    title = f"shardviz: {c.model} under {len(c.results)} strategies"
    assert comparison_page(c) == page(title, [comparison_html(c)])
    for obj, expected in ((r, report_page(r)), (c, comparison_page(c))):
        path = obj.save_html(str(tmp_path / "out.html"))
        assert Path(path).read_text(encoding="utf-8") == expected
