"""The serving views by model class and format, for :func:`shardviz.render.views.register_views`."""

from __future__ import annotations

from shardviz.model import display
from shardviz.model.serving import ServingComparison, SliceChoice
from shardviz.render.serving.html import serving_html, serving_page, slice_html, slice_page
from shardviz.render.serving.mpl import serving_mpl
from shardviz.render.serving.plotly import serving_figure
from shardviz.render.serving.text import serving_text, slice_text

__all__ = ["SERVING_VIEWS"]

SERVING_VIEWS: tuple[tuple[type, display.Format, display.View], ...] = (
    (ServingComparison, "text", serving_text),
    (ServingComparison, "html", serving_html),
    (ServingComparison, "page", serving_page),
    (ServingComparison, "plotly", serving_figure),
    (ServingComparison, "matplotlib", serving_mpl),
    (SliceChoice, "text", slice_text),
    (SliceChoice, "html", slice_html),
    (SliceChoice, "page", slice_page),
)
