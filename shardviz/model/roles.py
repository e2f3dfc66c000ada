"""What a leaf of a step's arguments is, read from its path: parameters, optimizer state or
input. One rule for the strategies (which rules place a leaf), the plan search and the
Explorer (its spec folders and array picker), so they never disagree."""

from __future__ import annotations

from collections.abc import Mapping

__all__ = [
    "argument_role",
    "leaf_role",
    "parts_of",
    "path_parts",
    "role_of",
    "role_parts",
    "searched_role",
]

#: Argument names that hold a model's parameters (Flax NNX and Equinox pass the module itself).
_MODEL_NAMES = ("model", "module", "net", "network")
#: Inside a state object, the beginnings of a field name that holds optimizer state
#: (``opt_state``, ``optimizer``, ``optax_state``); looser than an argument's ``opt*`` so that
#: a data field such as ``options`` or ``optical_flow`` stays data.
_OPTIMIZER_FIELDS = ("opt_", "optim", "optax")
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


def _field_role(name: str) -> str:
    """The role a field of a state object names: parameters as :func:`argument_role` reads
    them, optimizer state by :data:`_OPTIMIZER_FIELDS` (or ``opt`` alone), else ``batch``."""
    lower = name.lower()
    if argument_role(name) == "params":
        return "params"
    if lower == "opt" or lower.startswith(_OPTIMIZER_FIELDS):
        return "optimizer"
    return "batch"


def role_parts(path: str) -> tuple[str, str, str]:
    """A leaf's role, the part of its path that decides it, and the path below that part.

    The argument's name decides first (:func:`argument_role`: ``params/w1`` is a parameter,
    ``opt_state/0/mu/w1`` optimizer state); an argument whose name says neither (a state
    object, ``state``) is read by the first field below it that does: ``state/params/w1``
    is a parameter (``("params", "state/params", "w1")``), ``state/opt_state/0/mu/w1``
    optimizer state (``0/mu/w1``, which mirrors the parameter ``w1``), whatever holds them
    (a dict, a dataclass such as Flax's ``TrainState``, a namedtuple, nested). A path with
    neither is an input: ``("batch", argument, the rest)``.
    """
    parts = path_parts(path)
    for i, part in enumerate(parts):
        role = argument_role(part) if i == 0 else _field_role(part)
        if role != "batch" and part:
            return role, "/".join(parts[: i + 1]), "/".join(parts[i + 1 :]) or part
    return "batch", parts[0], "/".join(parts[1:]) or path


def leaf_role(path: str) -> str:
    """``params``, ``optimizer`` or ``batch`` for a leaf (:func:`role_parts`): the first
    component of its path that names parameters or an optimizer decides (``state/params/...``
    is a parameter, ``state/opt/...`` and ``opt_state/0/mu/params/w`` optimizer state); a
    path with neither is an input."""
    return role_parts(path)[0]


def searched_role(path: str, roles: Mapping[str, str]) -> tuple[str, str]:
    """A leaf's role as a plan search read it, and its path below the part that decided it:
    ``roles`` maps argument names, or the fields of a state object (``state/params``), to
    roles (a search's ``roles``); the longest one the path lies under decides, else
    :func:`role_parts`."""
    parts = path_parts(path)
    for i in range(len(parts), 0, -1):
        head = "/".join(parts[:i])
        if head in roles:
            return roles[head], "/".join(parts[i:]) or path
    role, _, inner = role_parts(path)
    return role, inner
