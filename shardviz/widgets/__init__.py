"""Interactive views: anywidget widgets whose synced state is the model's JSON.

The front-end code is plain ES modules and CSS in ``static/``, shipped in the wheel (no bundler,
no CDN). Each widget's mime bundle also carries the static HTML view, so saved notebooks and
viewers without a kernel still show a picture.
"""

from __future__ import annotations

from shardviz.widgets.mesh_view import MeshView as MeshView

# The explorer, its controls and the live view import ipywidgets and jax: loaded on first use.
# (``live()`` itself is ``shardviz.live``: here the name is the submodule's.)
_LAZY = {
    "Explorer": "shardviz.widgets.app",
    "ExplorerWidget": "shardviz.widgets.explorer.widget",
    "ExplorerSession": "shardviz.widgets.session",
    "Controls": "shardviz.widgets.controls",
    "Config": "shardviz.widgets.controls",
    "connect": "shardviz.widgets.session",
    "LiveRun": "shardviz.widgets.live.widget",
    "LiveWidget": "shardviz.widgets.live.widget",
}

__all__ = ["MeshView", *_LAZY]


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'shardviz.widgets' has no attribute {name!r}")
    import importlib

    mod = importlib.import_module(module)
    value = getattr(mod, name)
    globals()[name] = value
    return value
