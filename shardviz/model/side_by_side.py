"""Several pytrees drawn side by side on one bar scale, so their bars compare by height.

Each tree's own view (:class:`~shardviz.model.array.TreeLayout`) scales its bars to its own
largest device, so a replicated state and the same state cut eight ways look equally tall.
:func:`on_one_scale` puts them in one picture where a bar's height means the same number of
bytes in every tree.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from shardviz.errors import LeafError, ShardvizError, problem
from shardviz.model import display
from shardviz.model._codec import JsonMixin
from shardviz.model.array import ArrayLayout, TreeLayout


@dataclass(frozen=True, eq=False)
class TreesOnOneScale(JsonMixin, display.Shown):
    """Trees of arrays to draw side by side, every bar chart on the same scale.

    ``print(x)`` gives the text view, a notebook shows the HTML view, ``x.save_html(path)``
    writes one offline page.

    Attributes:
        trees: the laid-out trees, in drawing order.
        titles: one title per tree (``"replicated"``, ``"FSDP"``).
    """

    trees: tuple[TreeLayout, ...]
    titles: tuple[str, ...]

    def __post_init__(self) -> None:
        if len(self.trees) != len(self.titles):
            raise ShardvizError(
                problem(
                    "TreesOnOneScale",
                    f"{len(self.trees)} tree(s) but {len(self.titles)} title(s)",
                    "give exactly one title per tree",
                )
            )

    def __iter__(self) -> Iterator[tuple[str, TreeLayout]]:
        """(title, tree) pairs, in drawing order."""
        return iter(zip(self.titles, self.trees, strict=True))

    def __len__(self) -> int:
        return len(self.trees)

    @property
    def largest(self) -> tuple[int, ...]:
        """Per tree, the bytes its fullest device holds (0 for an empty tree)."""
        return tuple(max(t.bytes_per_device.values(), default=0) for t in self.trees)

    @property
    def scale(self) -> int:
        """The bytes a full bar stands for: the largest per-device figure of all the trees
        (at least 1, so an empty picture still has a scale)."""
        return max((*self.largest, 1))

    @property
    def fractions(self) -> tuple[float, ...]:
        """Per tree, its tallest bar as a fraction of the scale (1.0 for the largest tree)."""
        return tuple(b / self.scale for b in self.largest)


def on_one_scale(
    *trees: TreeLayout | ArrayLayout, titles: Sequence[str] | None = None
) -> TreesOnOneScale:
    """Draw several trees (or arrays) side by side with one bar scale for all of them.

    Args:
        trees: laid-out pytrees (``sv.layout_tree(state)``) or arrays (``sv.layout(x)``, taken
            as a tree of one leaf).
        titles: one title per tree; by default ``tree 1``, ``tree 2``, ... (an array's own name
            for an array).

    Returns:
        A :class:`TreesOnOneScale`: leave it last in a notebook cell to see the bars, or
        ``print`` it.

    Raises:
        LeafError: an argument is not a laid-out tree or array.
        ShardvizError: no trees, or not one title per tree.
    """
    if not trees:
        raise ShardvizError(
            problem(
                "on_one_scale",
                "no trees were given",
                "pass the trees to compare, e.g. on_one_scale(sv.layout_tree(a), "
                "sv.layout_tree(b), titles=['a', 'b'])",
            )
        )
    laid_out: list[TreeLayout] = []
    default_titles: list[str] = []
    for i, tree in enumerate(trees, start=1):
        if isinstance(tree, TreeLayout):
            laid_out.append(tree)
            default_titles.append(f"tree {i}")
        elif isinstance(tree, ArrayLayout):
            laid_out.append(TreeLayout((tree,)))
            default_titles.append(tree.name or f"array {i}")
        else:
            raise LeafError(
                problem(
                    "on_one_scale",
                    f"argument {i} is a {type(tree).__name__}, not a laid-out tree or array",
                    "lay it out first: sv.layout_tree(state) for a pytree, sv.layout(x) for "
                    "one array",
                )
            )
    if titles is None:
        chosen = tuple(default_titles)
    elif isinstance(titles, str):
        raise ShardvizError(
            problem(
                "on_one_scale",
                f"titles={titles!r} is one string",
                "give a list with one title per tree, e.g. titles=['replicated', 'FSDP']",
            )
        )
    else:
        chosen = tuple(str(t) for t in titles)
        if len(chosen) != len(laid_out):
            raise ShardvizError(
                problem(
                    "on_one_scale",
                    f"{len(laid_out)} tree(s) but {len(chosen)} title(s)",
                    "give exactly one title per tree, in the same order",
                )
            )
    return TreesOnOneScale(tuple(laid_out), chosen)
