"""What an integer selection trait (a device id, a ledger position) holds when nothing is picked.

Shared by :class:`~shardviz.widgets.explorer.widget.ExplorerWidget` and
:class:`~shardviz.widgets.mesh_view.MeshView`, whose front ends send the same value when a
click clears the selection.
"""

from __future__ import annotations

#: The value of ``selected_device`` / ``selected_collective`` with nothing selected.
NO_SELECTION = -1
#: Appended to a list of valid choices in an error message: how to select nothing.
NO_SELECTION_CHOICE = f" or {NO_SELECTION} for none"
