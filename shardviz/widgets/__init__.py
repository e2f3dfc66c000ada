"""Interactive views: anywidget widgets whose synced state is the model's JSON.

The front-end code is plain ES modules and CSS in ``static/``, shipped in the wheel (no bundler,
no CDN). Each widget's mime bundle also carries the static HTML view, so saved notebooks and
viewers without a kernel still show a picture.
"""

from __future__ import annotations

from shardviz.widgets.mesh_view import MeshView as MeshView

__all__ = ["MeshView"]
