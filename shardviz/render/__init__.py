"""Renderers: pure functions from model objects to text and self-contained HTML.

No jax here: every function takes a model object (a live array's layout, a hypothetical one,
or a hand-built test fixture). The geometry both backends draw is in :mod:`.geometry`.
Importing this package registers every view with the model (:mod:`.views`), so ``str(report)``
and ``report._repr_html_()`` find their renderer without the model naming one.
"""

from shardviz.model.units import format_bytes as format_bytes
from shardviz.render.colors import device_color as device_color
from shardviz.render.colors import text_color_for as text_color_for
from shardviz.render.geometry import ArrayGrid as ArrayGrid
from shardviz.render.geometry import MeshGrid as MeshGrid
from shardviz.render.geometry import array_grid as array_grid
from shardviz.render.geometry import devices_label as devices_label
from shardviz.render.geometry import mesh_grid as mesh_grid
from shardviz.render.html import array_html as array_html
from shardviz.render.html import mesh_html as mesh_html
from shardviz.render.html import page as page
from shardviz.render.html import tree_html as tree_html
from shardviz.render.text import array_text as array_text
from shardviz.render.text import mesh_text as mesh_text
from shardviz.render.text import tree_text as tree_text
from shardviz.render.views import register_views

register_views()
