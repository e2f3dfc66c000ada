"""A big pytree's leaves folded by path: leaves that differ only in a list index (a layer's
weight, once per layer) and share their shape, dtype and spec are one row,
``params/layers/*/wq ×8``, so a 274-leaf training state reads in a screen or two."""

from __future__ import annotations

import re
from dataclasses import dataclass

from shardviz.model.array import ArrayLayout, TreeLayout

#: Above this many leaves, trees are folded; smaller ones list every leaf.
FOLD_LEAVES = 32

_INDEX = re.compile(r"^\d+$")


@dataclass(frozen=True)
class LeafRow:
    """One row of a leaf table: its name (a pattern when folded), its first leaf (whose
    layout every leaf of the row shares) and how many leaves it stands for."""

    name: str
    leaf: ArrayLayout
    count: int = 1

    @property
    def label(self) -> str:
        """``params/layers/*/wq ×8`` or the leaf's own path."""
        return self.name + (f" ×{self.count}" if self.count > 1 else "")


def _parts(name: str) -> list[str]:
    return name.split("/")


def _key(leaf: ArrayLayout) -> tuple:
    pattern = "/".join("*" if _INDEX.match(p) else p for p in _parts(leaf.name))
    return (pattern, leaf.shape, leaf.dtype, leaf.spec)


def _pattern(names: list[str]) -> str:
    """The names with each index that differs between them written ``*``."""
    split = [_parts(n) for n in names]
    first = split[0]
    return "/".join(
        "*" if _INDEX.match(p) and any(s[i] != p for s in split[1:]) else p
        for i, p in enumerate(first)
    )


def leaf_rows(tree: TreeLayout, above: int = FOLD_LEAVES) -> list[LeafRow]:
    """The rows of ``tree``'s leaf table, in order of first appearance; folded only when the
    tree has more than ``above`` leaves."""
    if len(tree) <= above:
        return [LeafRow(leaf.name, leaf) for leaf in tree]
    groups: dict[tuple, list[ArrayLayout]] = {}
    for leaf in tree:
        groups.setdefault(_key(leaf), []).append(leaf)
    return [LeafRow(_pattern([x.name for x in g]), g[0], len(g)) for g in groups.values()]
