"""The spec tree drawn with ipywidgets: folders that open and close, one row per spec box.

:mod:`.spec_tree` decides the folders; this module only lays them out, so that a state of
hundreds of leaves shows a few folder lines until one is opened (each opens on its own, unlike
an ``Accordion``), and every box keeps a width a spec fits in.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence

import ipywidgets as widgets
from ipywidgets.widgets.widget_string import TextStyle

from shardviz.widgets.spec_tree import Group

__all__ = ["BOX_WIDTH", "Fold", "box_layout", "folds_for", "leaf_label", "path_row"]

#: A spec box's whole width and its label's: the input keeps at least 240 px.
BOX_WIDTH, LABEL_WIDTH = "380px", "130px"
#: A folder's lines are indented by this much per level.
INDENT = "18px"


def box_layout() -> dict:
    """The layout and style keywords of a spec box: pass the same ones to every box of a
    group (one layout and one style widget for all, not two per box)."""
    return {
        "layout": widgets.Layout(width=BOX_WIDTH, min_width=BOX_WIDTH),
        "style": TextStyle(description_width=LABEL_WIDTH),
    }


class Fold(widgets.VBox):
    """A folder: a header button (``▸ layers/3 · 11 leaves``) that shows or hides its body,
    which is made the first time it opens (a closed folder costs two widgets)."""

    def __init__(
        self, title: str, body: Callable[[], Sequence[widgets.Widget]], *, expanded: bool
    ) -> None:
        self.title = title
        self._make_body: Callable[[], Sequence[widgets.Widget]] | None = body
        self.header = widgets.Button(
            layout=widgets.Layout(width="auto", max_width="100%"), tooltip=title
        )
        self.header.add_class("sv-spec-fold")
        self.body = widgets.VBox(layout=widgets.Layout(margin=f"0 0 0 {INDENT}"))
        self.header.on_click(lambda _: self.toggle())
        super().__init__([self.header, self.body])
        self.expanded = expanded

    @property
    def expanded(self) -> bool:
        """Whether the body shows."""
        return self.body.layout.display != "none"

    @expanded.setter
    def expanded(self, value: bool) -> None:
        if value and self._make_body is not None:
            make, self._make_body = self._make_body, None
            self.body.children = tuple(make())
        self.body.layout.display = "" if value else "none"
        self.header.description = f"{'▾' if value else '▸'} {self.title}"

    def toggle(self) -> None:
        self.expanded = not self.expanded


def leaf_label(path: str, title: str) -> str:
    """A box's label: the leaf's own name, with its path and shape on hover (escaped HTML;
    the browser tests find a box by its path there)."""
    name = path.rsplit("/", 1)[-1]
    return f'<span title="{html.escape(title)}">{html.escape(name, quote=False)}</span>'


def path_row(folder: str, box: widgets.Widget, message: widgets.Widget) -> widgets.VBox:
    """A spec box with its folder's path before it (the filtered list, where boxes of many
    folders stand together), and its message."""
    where = widgets.HTML(
        f'<span style="color:#57606a">{html.escape(folder)}/</span>',
        layout=widgets.Layout(min_width="0", overflow="hidden"),
    )
    line = widgets.HBox([where, box], layout=widgets.Layout(flex_flow="row wrap"))
    return widgets.VBox([line, message])


def folds_for(
    groups: Sequence[Group],
    row: Callable[[str], Sequence[widgets.Widget]],
    title: Callable[[Group], str],
    *,
    open_first: bool,
    open_all: bool,
) -> tuple[list[Fold], dict[str, Fold]]:
    """One :class:`Fold` per group (a leaf's ``row`` widgets first, then sub-folders);
    returns the top folds and every fold made so far by its group's path (filled in as
    folders open: a folder's sub-folders are made with its body). ``open_all`` opens every
    folder (a small program); ``open_first`` only the first top folder (the parameters)."""
    by_path: dict[str, Fold] = {}

    def build(group: Group, is_open: bool) -> Fold:
        def body() -> list[widgets.Widget]:
            rows = [w for leaf in group.leaves for w in row(leaf)]
            return [*rows, *(build(c, open_all) for c in group.children)]

        fold = Fold(title(group), body, expanded=is_open)
        by_path[group.path or group.name] = fold
        return fold

    top = [build(g, open_all or (open_first and i == 0)) for i, g in enumerate(groups)]
    return top, by_path
