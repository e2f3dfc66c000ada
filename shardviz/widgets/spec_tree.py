"""How the Explorer's spec controls are arranged for hundreds of leaves, with no widgets.

A training state's leaves (``state/params/layers/3/wq``, ``state/opt/0/mu/layers/3/wq``, ...)
are grouped by module path into a tree (parameters first), optimizer leaves that mirror a
parameter (Adam's ``mu`` and ``nu``: same path under the optimizer, same shape) are found so
they can follow the parameter's spec, and patterns (``layers/*/wq``) and logical axis rules
(``embed=data, mlp=model``) pick and set many leaves at once.
:class:`~shardviz.widgets.controls.Controls` draws the result.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from shardviz.capture.spec_text import SpecEntries
from shardviz.errors import SpecError, problem
from shardviz.model.roles import leaf_role, parts_of, role_of

__all__ = [
    "Group",
    "group_tree",
    "logical_specs",
    "matches",
    "mirrors",
    "parse_rules",
    "sections",
]


def _param_rest(path: str) -> tuple[str, ...] | None:
    """The components after a parameter leaf's ``params`` component (``layers/3/wq``)."""
    parts = parts_of(path)
    for i, part in enumerate(parts):
        if role_of(part) == "params":
            return tuple(parts[i + 1 :]) or tuple(parts[i:])
    return None


def mirrors(shapes: Mapping[str, Sequence[int]]) -> dict[str, str]:
    """Optimizer leaves that mirror a parameter: ``{optimizer leaf: parameter leaf}``.

    A leaf mirrors a parameter when it is optimizer state (:func:`leaf_role`), its path ends
    with the parameter's path below ``params`` (``opt/0/mu/layers/3/wq`` ends with
    ``layers/3/wq``) and the shapes agree; the longest such ending wins. Scalars (Adam's
    ``count``) mirror nothing.
    """
    params: dict[tuple[str, ...], str] = {}
    for path in shapes:
        rest = _param_rest(path)
        if rest is not None and leaf_role(path) == "params":
            params.setdefault(rest, path)
    out: dict[str, str] = {}
    for path, shape in shapes.items():
        if leaf_role(path) != "optimizer" or not tuple(shape):
            continue
        parts = tuple(parts_of(path))
        for start in range(len(parts)):
            param = params.get(parts[start:])
            if param is not None and tuple(shapes[param]) == tuple(shape):
                out[path] = param
                break
    return out


@dataclass
class Group:
    """One folder of the spec tree: its leaves (full paths) and its sub-folders.

    ``name`` is the folder's path relative to its parent (single-child chains are joined:
    ``opt/0/mu``); ``path`` the full module path (``state/params/layers/3``).
    """

    name: str
    path: str
    leaves: list[str] = field(default_factory=list)
    children: list[Group] = field(default_factory=list)

    def all_leaves(self) -> list[str]:
        """Every leaf at or below this folder, in display order."""
        return [*self.leaves, *(p for c in self.children for p in c.all_leaves())]

    def has_params(self) -> bool:
        return any(leaf_role(p) == "params" for p in self.all_leaves())


def _natural(text: str) -> tuple:
    """Sort key: ``layers/10`` after ``layers/9``."""
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", text))


def group_tree(paths: Iterable[str]) -> Group:
    """The leaves as a tree of folders by module path (the path without the leaf's name).

    Folders holding parameters come first, then the others in the leaves' order; numbered
    folders (``layers/0`` ... ``layers/10``) in number order; a folder with one sub-folder
    and no leaves of its own is joined with it (``opt/0/mu``).
    """
    root = Group("", "")
    order: dict[str, int] = {}
    for i, path in enumerate(paths):
        parts = parts_of(path)
        node = root
        for depth, part in enumerate(parts[:-1]):
            here = "/".join(parts[: depth + 1])
            child = next((c for c in node.children if c.path == here), None)
            if child is None:
                child = Group(part, here)
                node.children.append(child)
                order.setdefault(here, i)
            node = child
        node.leaves.append(path)
    _arrange(root, order)
    return root


def _arrange(node: Group, order: Mapping[str, int]) -> None:
    for child in node.children:
        _arrange(child, order)
    for i, child in enumerate(node.children):
        while len(child.children) == 1 and not child.leaves:
            only = child.children[0]
            child = Group(f"{child.name}/{only.name}", only.path, only.leaves, only.children)
        node.children[i] = child
    numbered = all(c.name.isdigit() for c in node.children)
    node.children.sort(
        key=lambda c: (not c.has_params(), _natural(c.name) if numbered else order[c.path])
    )


def sections(root: Group) -> list[Group]:
    """The top folders the controls show: each argument, split into its own top folders when
    it holds parameters beside other leaves (``state`` -> ``state/params``, ``state/opt``);
    parameters first. Leaves at the top (bare array arguments) make one folder, after the others."""
    out: list[Group] = []
    for arg in root.children:
        mixed = arg.has_params() and any(not c.has_params() for c in arg.children)
        if mixed and not arg.leaves:
            out.extend(
                Group(f"{arg.name}/{c.name}", c.path, c.leaves, c.children) for c in arg.children
            )
        else:
            out.append(arg)
    if root.leaves:
        out.append(Group("arguments", "", list(root.leaves)))
    out.sort(key=lambda g: not g.has_params())
    return out


# --- patterns -------------------------------------------------------------------------------


def _component(pattern: str) -> re.Pattern[str]:
    return re.compile("".join(".*" if c == "*" else re.escape(c) for c in pattern) + r"\Z")


def matches(pattern: str, path: str) -> bool:
    """Whether ``path`` ends with ``pattern``, compared component by component: ``*`` matches
    within one component, ``**`` any number of them. ``layers/*/wq`` matches
    ``state/params/layers/3/wq`` and ``state/opt/0/mu/layers/3/wq``; ``wq`` every ``wq``.
    Case-insensitive; an empty pattern matches everything."""
    wanted = parts_of(pattern.strip().lower())
    if not wanted:
        return True
    parts = parts_of(path.lower())
    return any(_match_from(wanted, parts[start:]) for start in range(len(parts)))


def _match_from(pattern: Sequence[str], parts: Sequence[str]) -> bool:
    """Whether ``parts`` (to its end) matches ``pattern`` exactly."""
    if not pattern:
        return not parts
    head, rest = pattern[0], pattern[1:]
    if head == "**":
        return any(_match_from(rest, parts[i:]) for i in range(len(parts) + 1))
    return bool(parts) and bool(_component(head).match(parts[0])) and _match_from(rest, parts[1:])


# --- logical axis rules ---------------------------------------------------------------------

#: What a logical rule maps a name to: no axis, one mesh axis, or several.
Axes = tuple[str, ...]


def _split_top(text: str) -> list[str]:
    """``text`` split at commas, semicolons and newlines outside parentheses."""
    items, depth, current = [], 0, ""
    for ch in text:
        depth += (ch == "(") - (ch == ")")
        if ch in ",;\n" and depth == 0:
            items.append(current)
            current = ""
        else:
            current += ch
    return [i.strip() for i in [*items, current] if i.strip()]


def parse_rules(text: str) -> dict[str, Axes]:
    """Logical axis rules typed as ``embed=data, mlp=model, heads=(model, seq), norm=None``.

    Raises:
        SpecError: an item without ``=``, an empty or repeated name (says which and how).
    """
    rules: dict[str, Axes] = {}
    for item in _split_top(text):
        name, sep, value = (s.strip() for s in item.partition("="))
        if not sep or not name:
            raise SpecError(
                problem(
                    "logical rules",
                    f"{item!r} is not a rule",
                    "write each rule as name=axis, e.g. embed=data, mlp=model",
                )
            )
        if name in rules:
            raise SpecError(
                problem("logical rules", f"{name!r} has two rules", "keep one rule per name")
            )
        inner = value.strip("()")
        axes = tuple(a.strip().strip("'\"") for a in inner.split(",") if a.strip())
        rules[name] = () if axes in ((), ("None",)) else axes
    return rules


def logical_specs(
    paths: Iterable[str],
    logical_axes: Mapping[str, Sequence[str | None]],
    rules: Mapping[str, Axes],
) -> tuple[dict[str, SpecEntries], list[str]]:
    """Each leaf's spec from its logical dim names (``logical_axes``: pattern -> names, the
    first pattern a leaf :func:`matches` wins) under ``rules``; and the names no rule maps
    (kept whole, for the controls to say so). Leaves no pattern matches are left out."""
    specs: dict[str, SpecEntries] = {}
    unmapped: list[str] = []
    for path in paths:
        names = next((n for pat, n in logical_axes.items() if matches(pat, path)), None)
        if names is None:
            continue
        entries: list[str | tuple[str, ...] | None] = []
        for name in names:
            axes = rules.get(name, ()) if name is not None else ()
            if name is not None and name not in rules and name not in unmapped:
                unmapped.append(name)
            entries.append(None if not axes else axes[0] if len(axes) == 1 else tuple(axes))
        specs[path] = tuple(entries)
    return specs, unmapped
