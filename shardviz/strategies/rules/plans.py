"""A plan's specs as a :class:`~shardviz.strategies.rules.RuleSet`, for ``compare`` and the
Explorer.

The rules reproduce the plan exactly: parameter rules per leaf pattern (layer numbers as
``\\d+``, siblings with the same specs as one alternation), optimizer rules the same way
(``compare`` mirrors them onto Adam's ``mu``/``nu``), gradients like the optimizer state (the
reduction lands where the update happens, as in ZeRO-2), and one batch rule. Each pattern is
checked against every parameter path; one that would catch a leaf with other specs is
replaced by exact paths.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from shardviz.model import Spec
from shardviz.model.roles import role_parts
from shardviz.strategies.rules import Rule, RuleSet


def jax_entries(spec: Spec) -> tuple:
    """A model spec (axes per dim) in jax's spelling: ``None``, ``'a'`` or ``('a', 'b')``."""
    return tuple(None if not e else e[0] if len(e) == 1 else tuple(e) for e in spec)


def _split_path(path: str) -> tuple[str, str]:
    arg, _, inner = path.partition("/")
    return arg, inner


def param_and_optimizer_specs(
    specs: Mapping[str, Spec],
) -> tuple[dict[str, Spec], dict[str, Spec]]:
    """Parameter inner path -> spec, and -> its optimizer state's spec (read from the first
    optimizer leaf mirroring it; the parameter's own spec when nothing mirrors it)."""
    params: dict[str, Spec] = {}
    opt_leaves: list[tuple[str, Spec]] = []
    for path, spec in specs.items():
        role, _, inner = role_parts(path)  # inside a state object too (state/params/w1)
        if role == "params":
            params[inner] = spec
        elif role == "optimizer":
            opt_leaves.append((inner, spec))
    # A leaf mirrors the first parameter (in parameter order) its path ends with: look up
    # each of its path's suffixes (one pass per leaf, not one per leaf and parameter).
    order = {k: i for i, k in enumerate(params)}
    optimizer: dict[str, Spec] = {}
    for inner, spec in opt_leaves:
        parts = inner.split("/")
        suffixes = ("/".join(parts[i:]) for i in range(len(parts)))
        k = min((x for x in suffixes if x in order), key=order.__getitem__, default=None)
        if k is not None and k not in optimizer:
            optimizer[k] = spec
    return params, {k: optimizer.get(k, s) for k, s in params.items()}


def _pattern(paths: Sequence[str]) -> str:
    """One regex for ``paths``: layer numbers as ``\\d+``, the last parts as alternatives."""
    parents = {
        "/".join(r"\d+" if p.isdigit() else re.escape(p) for p in path.split("/")[:-1])
        for path in paths
    }
    lasts = sorted({re.escape(path.rsplit("/", 1)[-1]) for path in paths})
    last = lasts[0] if len(lasts) == 1 else "(?:" + "|".join(lasts) + ")"
    if len(parents) != 1:
        return "^(?:" + "|".join(re.escape(p) for p in sorted(paths)) + ")$"
    parent = parents.pop()
    return f"^{parent}/{last}$" if parent else f"^{last}$"


def _place(path: str) -> tuple[str, str]:
    """A path's parent with layer numbers as ``*``, and its last part: a pattern of
    :func:`_pattern` can catch only paths of the same place."""
    parent, _, last = path.rpartition("/")
    return "/".join("*" if p.isdigit() else p for p in parent.split("/")) if parent else "", last


def _rules(specs: Mapping[str, Spec]) -> tuple[Rule, ...]:
    """Rules giving each path its spec; replicated leaves need none (unmatched replicate)."""
    by_shape: dict[tuple[str, Spec], list[str]] = {}
    at: dict[tuple[str, str], list[str]] = {}  # every path by its place
    for path, spec in specs.items():
        place = _place(path)
        at.setdefault(place, []).append(path)
        if any(spec):
            by_shape.setdefault((place[0], spec), []).append(path)
    rules: list[Rule] = []
    for (parent, spec), paths in by_shape.items():
        pattern = _pattern(paths)
        lasts = {p.rpartition("/")[2] for p in paths}
        found = re.compile(pattern)
        caught = {p for last in lasts for p in at.get((parent, last), []) if found.search(p)}
        if caught != set(paths):  # it would catch another leaf: name each exactly
            pattern = "^(?:" + "|".join(re.escape(p) for p in sorted(paths)) + ")$"
        rules.append((pattern, jax_entries(spec)))
    return tuple(rules)


def _batch_rules(specs: Mapping[str, Spec]) -> tuple[Rule, ...]:
    data = [(path, spec) for path, spec in specs.items() if role_parts(path)[0] == "batch" and spec]
    split = {spec[0] for _, spec in data}
    if len(split) == 1 and all(not any(s[1:]) for _, s in data):
        axes = split.pop()
        return ((".*", jax_entries((axes,))),) if axes else ()
    return tuple(  # not one split of dim 0 for all: one rule per leaf
        (f"^{re.escape(_split_path(p)[1])}$", jax_entries(s)) for p, s in data if any(s)
    )


def rule_set_of(
    specs: Mapping[str, Spec],
    axes: Sequence[str],
    *,
    name: str = "suggested",
    title: str = "suggested plan",
    description: str = "",
    mesh_shape: tuple[int, ...] = (),
    host: tuple[str, ...] = (),
    remat: str | None = None,
    activations: Mapping[str, Spec] | None = None,
) -> RuleSet:
    """The rule set that gives the arguments of a train step ``specs`` (leaf path -> spec,
    as a plan holds them), for :func:`~shardviz.strategies.runner.compare`.

    ``mesh_shape`` is kept in ``extra["mesh_shape"]``: pass ``compare`` a mesh of that shape
    (its default mesh for two axes is 2 x n/2). ``host`` names the trees kept in pinned host
    memory (``("optimizer",)``: ZeRO-Offload, as :class:`~shardviz.strategies.rules.RuleSet`);
    ``remat`` a published decoder's remat policy (``None``: the model's own);
    ``activations`` its named activations' specs (name -> spec; the others are left to the
    compiler).
    """
    params, optimizer = param_and_optimizer_specs(specs)
    opt_rules = _rules(optimizer)
    return RuleSet(
        name=name,
        title=title,
        params=_rules(params),
        grads=opt_rules,
        optimizer=opt_rules,
        batch=_batch_rules(specs),
        activations=tuple(
            (re.escape(name), jax_entries(spec)) for name, spec in (activations or {}).items()
        ),
        axes=tuple(axes),
        description=description,
        strict=False,
        extra={"mesh_shape": tuple(mesh_shape)},
        host=tuple(host),
        remat=remat,
    )
