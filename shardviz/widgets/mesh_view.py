"""``MeshView``: the device mesh (and optionally one array's tiles), click a device to select it.

Synced state is plain JSON from the model (``MeshLayout.to_json()``, ``ArrayLayout.to_json()``)
plus what the static HTML view draws: the device colours
(:func:`~shardviz.render.colors.device_color`) and the laid-out grids (``grids``: the JSON of
the very view objects the static HTML prints its words from, :mod:`shardviz.render.grid_view`).
The front end only draws and highlights them, so the live view and the static view show the
same cells and words.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anywidget
import traitlets

from shardviz.model._codec import to_data
from shardviz.model.array import ArrayLayout
from shardviz.model.mesh import MeshLayout
from shardviz.render.colors import device_color
from shardviz.render.grid_view import mesh_grid_view, tiled_array_view
from shardviz.render.html import array_html, mesh_html
from shardviz.widgets.esm import widget_module
from shardviz.widgets.explorer.payload import dumps
from shardviz.widgets.selection import NO_SELECTION, NO_SELECTION_CHOICE
from shardviz.widgets.static_bundle import with_static_html

STATIC = Path(__file__).parent / "static"


def device_colors(mesh: MeshLayout) -> dict[str, str]:
    """Device id (as a string, the way JSON carries object keys) -> its ``#rrggbb`` colour.

    Args:
        mesh: the mesh whose devices to colour.

    Returns:
        One entry per device, in mesh order.
    """
    return {str(d.id): device_color(d.id) for d in mesh.devices}


def grids_json(mesh: MeshLayout, array: ArrayLayout | None) -> str:
    """The ``grids`` state, as JSON text: the mesh's :class:`~shardviz.render.grid_view.
    MeshGridView` and the array's :class:`~shardviz.render.grid_view.TiledArrayView` (or
    ``null``)."""
    return dumps(
        {
            "mesh": to_data(mesh_grid_view(mesh)),
            "array": to_data(tiled_array_view(array)) if array is not None else None,
        }
    )


class MeshView(anywidget.AnyWidget):
    """An interactive mesh: a grid of device cells, and the tiles of an array if one is given.

    Clicking a device selects it (``selected_device``) and highlights it and every tile it
    holds; setting ``selected_device`` from Python moves the highlight.

    Args:
        mesh_layout: the mesh to draw.
        array_layout: an array on that mesh whose tiles to draw, or ``None``.

    Raises:
        TypeError: if the arguments are not a ``MeshLayout`` / ``ArrayLayout``.
        ValueError: if the array lives on a different mesh.
    """

    _esm = widget_module("mesh_view.js")
    _css = STATIC / "mesh_view.css"

    #: ``MeshLayout.to_json()``.
    mesh = traitlets.Unicode("").tag(sync=True)
    #: ``ArrayLayout.to_json()``, or ``""`` for no array.
    array = traitlets.Unicode("").tag(sync=True)
    #: The selected device's id, or ``-1`` for none.
    selected_device = traitlets.Int(NO_SELECTION).tag(sync=True)
    #: JSON text: ``{"mesh": MeshGridView, "array": TiledArrayView or null}``
    #: (:func:`grids_json`), the grids as the static view lays them out.
    grids = traitlets.Unicode("").tag(sync=True)
    #: Device id (string key) -> ``#rrggbb`` colour, from ``device_color``.
    colors = traitlets.Dict(key_trait=traitlets.Unicode(), value_trait=traitlets.Unicode()).tag(
        sync=True
    )

    def __init__(
        self,
        mesh_layout: MeshLayout,
        array_layout: ArrayLayout | None = None,
        **kwargs: Any,
    ) -> None:
        if not isinstance(mesh_layout, MeshLayout):
            raise TypeError(
                f"MeshView takes a MeshLayout, got {type(mesh_layout).__name__}; for a "
                "shardviz.Mesh or jax mesh pass shardviz.layout(mesh)"
            )
        if array_layout is not None:
            if not isinstance(array_layout, ArrayLayout):
                raise TypeError(
                    f"array_layout must be an ArrayLayout or None, got "
                    f"{type(array_layout).__name__}; use shardviz.layout(x)"
                )
            if array_layout.mesh != mesh_layout:
                raise ValueError(
                    f"array {array_layout.name!r} lives on mesh "
                    f"{dict(array_layout.mesh.shape)} over devices "
                    f"{list(array_layout.mesh.device_ids)}, not on the mesh given "
                    f"({dict(mesh_layout.shape)} over {list(mesh_layout.device_ids)}); "
                    "pass array_layout.mesh as the mesh"
                )
        self._mesh_layout = mesh_layout
        self._array_layout = array_layout
        super().__init__(
            mesh=mesh_layout.to_json(),
            array=array_layout.to_json() if array_layout is not None else "",
            colors=device_colors(mesh_layout),
            grids=grids_json(mesh_layout, array_layout),
            **kwargs,
        )

    @traitlets.validate("selected_device")
    def _check_selected(self, proposal: dict[str, Any]) -> int:
        value = proposal["value"]
        if value != NO_SELECTION and value not in self._mesh_layout.device_ids:
            raise traitlets.TraitError(
                f"selected_device={value} is not a device of this mesh; use one of "
                f"{list(self._mesh_layout.device_ids)}{NO_SELECTION_CHOICE}"
            )
        return value

    @property
    def mesh_layout(self) -> MeshLayout:
        """The mesh drawn."""
        return self._mesh_layout

    @property
    def array_layout(self) -> ArrayLayout | None:
        """The array whose tiles are drawn, or ``None``."""
        return self._array_layout

    def static_html(self) -> str:
        """The static HTML+SVG view of the same state (mesh, then the array if any)."""
        parts = [mesh_html(self._mesh_layout)]
        if self._array_layout is not None:
            parts.append(array_html(self._array_layout))
        return "".join(parts)

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        """The live widget view plus a static ``text/html`` for viewers without a kernel."""
        return with_static_html(super()._repr_mimebundle_(**kwargs), self.static_html())
