"""Nothing selected is one value, ``NO_SELECTION``, in both widgets and in their error messages."""

from __future__ import annotations

import pytest
import traitlets

from shardviz.widgets.explorer.widget import ExplorerWidget
from shardviz.widgets.mesh_view import MeshView
from shardviz.widgets.selection import NO_SELECTION, NO_SELECTION_CHOICE
from tests.render.fixtures import mesh_2x4
from tests.render.report_fixtures import dp_report


def test_the_value_is_what_the_front_ends_send() -> None:
    assert NO_SELECTION == -1  # explorer.js and mesh_view.js send -1 when a click clears
    assert NO_SELECTION_CHOICE == " or -1 for none"


def test_both_widgets_start_with_nothing_selected_and_can_go_back_to_it() -> None:
    mesh_view = MeshView(mesh_2x4())
    explorer = ExplorerWidget(dp_report())
    assert mesh_view.selected_device == NO_SELECTION
    assert (explorer.selected_device, explorer.selected_collective) == (NO_SELECTION,) * 2
    mesh_view.selected_device = explorer.selected_device = 3
    explorer.selected_collective = 0
    mesh_view.selected_device = explorer.selected_device = NO_SELECTION
    explorer.selected_collective = NO_SELECTION
    assert mesh_view.selected_device == explorer.selected_device == NO_SELECTION
    assert explorer.selected_collective == NO_SELECTION


@pytest.mark.parametrize(
    ("widget", "trait"),
    [
        (lambda: MeshView(mesh_2x4()), "selected_device"),
        (lambda: ExplorerWidget(dp_report()), "selected_device"),
        (lambda: ExplorerWidget(dp_report()), "selected_collective"),
    ],
    ids=["mesh-view-device", "explorer-device", "explorer-collective"],
)
def test_an_invalid_selection_says_how_to_select_nothing(widget, trait: str) -> None:
    w = widget()
    with pytest.raises(traitlets.TraitError) as err:
        setattr(w, trait, 999)
    assert str(err.value).endswith(NO_SELECTION_CHOICE)
    assert getattr(w, trait) == NO_SELECTION
