"""Which renderer draws which model object in which format, registered with the model.

The model asks :mod:`shardviz.model.display` for a view (``str(report)``,
``comparison.figure()``, ``report.save_html(path)``) and never imports a renderer; importing
:mod:`shardviz.render` calls :func:`register_views`, which fills that registry from here.
"""

from __future__ import annotations

from shardviz.model import display
from shardviz.model.array import ArrayLayout, TreeLayout
from shardviz.model.compare import Comparison
from shardviz.model.findings import Findings
from shardviz.model.mesh import MeshLayout
from shardviz.model.op_profile import OpProfile
from shardviz.model.physical import PhysicalLayout
from shardviz.model.program import Report
from shardviz.model.schedule import Schedule
from shardviz.model.search import Search
from shardviz.model.serving import ServingComparison, SliceChoice
from shardviz.model.side_by_side import TreesOnOneScale
from shardviz.model.traffic import CollectiveTraffic
from shardviz.render.compare.html import comparison_html
from shardviz.render.compare.mpl import comparison_mpl
from shardviz.render.compare.plotly import comparison_figure
from shardviz.render.compare.text import comparison_text
from shardviz.render.findings.html import findings_html, findings_page
from shardviz.render.findings.text import findings_text
from shardviz.render.html import array_html, mesh_html, page, tree_html
from shardviz.render.op_profile import op_profile_html, op_profile_page, op_profile_text
from shardviz.render.physical import physical_html, physical_page, physical_text
from shardviz.render.report.html import report_html
from shardviz.render.report.text import report_text
from shardviz.render.schedule.html import schedule_html, schedule_page
from shardviz.render.schedule.mpl import schedule_mpl
from shardviz.render.schedule.plotly import schedule_figure
from shardviz.render.schedule.text import schedule_text
from shardviz.render.search.html import search_html, search_page
from shardviz.render.search.text import search_text
from shardviz.render.serving.html import serving_html, serving_page, slice_html, slice_page
from shardviz.render.serving.mpl import serving_mpl
from shardviz.render.serving.plotly import serving_figure
from shardviz.render.serving.text import serving_text, slice_text
from shardviz.render.side_by_side import (
    side_by_side_html,
    side_by_side_page,
    side_by_side_text,
)
from shardviz.render.text import array_text, mesh_text, tree_text
from shardviz.render.traffic_view import (
    collective_traffic_html,
    collective_traffic_page,
    collective_traffic_text,
)


def report_page(report: Report) -> str:
    """The report as one self-contained offline HTML document, titled by its function."""
    return page(f"shardviz: {report.function}", [report_html(report)])


def comparison_page(comparison: Comparison) -> str:
    """The comparison as one self-contained offline HTML document."""
    title = f"shardviz: {comparison.model} under {len(comparison.results)} strategies"
    return page(title, [comparison_html(comparison)])


#: (model class, format, view): every view the model's methods can ask for.
VIEWS: tuple[tuple[type, display.Format, display.View], ...] = (
    (MeshLayout, "text", mesh_text),
    (MeshLayout, "html", mesh_html),
    (ArrayLayout, "text", array_text),
    (ArrayLayout, "html", array_html),
    (TreeLayout, "text", tree_text),
    (TreeLayout, "html", tree_html),
    (Report, "text", report_text),
    (Report, "html", report_html),
    (Report, "page", report_page),
    (Comparison, "text", comparison_text),
    (Comparison, "html", comparison_html),
    (Comparison, "page", comparison_page),
    (Comparison, "plotly", comparison_figure),
    (Comparison, "matplotlib", comparison_mpl),
    (Search, "text", search_text),
    (Search, "html", search_html),
    (Search, "page", search_page),
    (Findings, "text", findings_text),
    (Findings, "html", findings_html),
    (Findings, "page", findings_page),
    (Schedule, "text", schedule_text),
    (Schedule, "html", schedule_html),
    (Schedule, "page", schedule_page),
    (Schedule, "plotly", schedule_figure),
    (Schedule, "matplotlib", schedule_mpl),
    (TreesOnOneScale, "text", side_by_side_text),
    (TreesOnOneScale, "html", side_by_side_html),
    (TreesOnOneScale, "page", side_by_side_page),
    (CollectiveTraffic, "text", collective_traffic_text),
    (CollectiveTraffic, "html", collective_traffic_html),
    (CollectiveTraffic, "page", collective_traffic_page),
    (PhysicalLayout, "text", physical_text),
    (PhysicalLayout, "html", physical_html),
    (PhysicalLayout, "page", physical_page),
    (OpProfile, "text", op_profile_text),
    (OpProfile, "html", op_profile_html),
    (OpProfile, "page", op_profile_page),
    (ServingComparison, "text", serving_text),
    (ServingComparison, "html", serving_html),
    (ServingComparison, "page", serving_page),
    (ServingComparison, "plotly", serving_figure),
    (ServingComparison, "matplotlib", serving_mpl),
    (SliceChoice, "text", slice_text),
    (SliceChoice, "html", slice_html),
    (SliceChoice, "page", slice_page),
)


def register_views() -> None:
    """Register every view in :data:`VIEWS` with the model's display registry."""
    for cls, fmt, view in VIEWS:
        display.register(cls, fmt, view)
