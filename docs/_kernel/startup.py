"""Run by the docs build's kernel before each notebook: plotly figures drawn offline.

Plotly's notebook renderers put script tags for its CDN (and MathJax's) into the output. The
docs site loads nothing from the network, so figures are rendered here as a bare ``<div>`` and
its ``Plotly.newPlot`` call; the site serves its own copy of plotly.js on the pages that have
one (see ``_ext/shardviz_docs.py``). This file must not import jax: the notebook's first cell
chooses the devices.
"""

from __future__ import annotations

from typing import Any


def _offline_plotly() -> None:
    try:
        import plotly.io as pio
        from plotly.io.base_renderers import MimetypeRenderer
    except ImportError:  # no plotly: nothing to configure
        return

    class OfflineHtml(MimetypeRenderer):
        """A figure as HTML that needs plotly.js already on the page, and nothing else."""

        def to_mimebundle(self, fig_dict: dict[str, Any]) -> dict[str, str]:
            html = pio.to_html(
                fig_dict,
                include_plotlyjs=False,
                include_mathjax=False,
                full_html=False,
                validate=False,
                config={"displaylogo": False},
            )
            return {"text/html": html}

    pio.renderers["shardviz_docs"] = OfflineHtml()
    pio.renderers.default = "shardviz_docs"


_offline_plotly()
del _offline_plotly
