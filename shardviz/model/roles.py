"""What a leaf of a step's arguments is, read from its path: parameters, optimizer state or
input. One rule for the strategies (which rules place a leaf), the plan search and the
Explorer (its spec folders and array picker), so they never disagree."""

from __future__ import annotations

__all__ = ["argument_role", "leaf_role", "parts_of", "path_parts", "role_of"]

#: Argument names that hold a model's parameters (Flax NNX and Equinox pass the module itself).
_MODEL_NAMES = ("model", "module", "net", "network")
_OPEN, _CLOSE, _QUOTES = "[({", "])}", "'\""


def argument_role(arg_name: str) -> str:
    """Which rules of a strategy place an argument, by its name: ``params``-like and
    model-like names (``model``, ``net``: an NNX or Equinox module) the parameter rules,
    ``opt``-names the optimizer rules, anything else (inputs, whose dim 0 is the batch) the
    batch rules."""
    name = arg_name.lower()
    if "param" in name or name in _MODEL_NAMES or name.endswith("_model"):
        return "params"
    if name.startswith("opt"):
        return "optimizer"
    return "batch"


#: The Explorer's name for :func:`argument_role`.
role_of = argument_role


def path_parts(name: str) -> list[str]:
    """A leaf path's components: ``name`` split at each ``/`` that is outside brackets and
    quotes, so ``params['a/b']`` stays one component."""
    parts: list[str] = []
    current: list[str] = []
    depth, quote = 0, ""
    for ch in name:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in _QUOTES:
            quote = ch
        elif ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth = max(0, depth - 1)
        elif ch == "/" and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        current.append(ch)
    parts.append("".join(current))
    return parts


def parts_of(path: str) -> list[str]:
    """:func:`path_parts` without empty components."""
    return [p for p in path_parts(path) if p]


def leaf_role(path: str) -> str:
    """``params``, ``optimizer`` or ``batch`` for a leaf: the first component of its path
    that names parameters or an optimizer decides (``state/params/...`` is a parameter,
    ``state/opt/...`` and ``opt_state/0/mu/params/w`` optimizer state); a path with neither
    is an input."""
    for part in parts_of(path):
        role = argument_role(part)
        if role != "batch":
            return role
    return "batch"
