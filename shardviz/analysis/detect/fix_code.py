"""A fix's code as the user would paste it: the mesh named (``NamedSharding(mesh, P(...))``,
so no ``jax.set_mesh`` context is needed) and each leaf spelled as the code reaches it.

The detectors write fixes with the placeholder names ``mesh`` and the leaf's path; once the
explainer knows the names in the user's code (the variable the mesh is bound to, the
arguments' variables and how each leaf is reached), :func:`pasteable` writes the code again
from the fix's fields.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from shardviz.analysis.detect.candidate import Candidate
from shardviz.analysis.detect.inputs import spec_code
from shardviz.model.findings import Fix

#: Said when the mesh's variable is not known: what ``mesh`` stands for.
MESH_HINT = (
    "mesh: the Mesh your arrays are placed on (or wrap the call in `with jax.set_mesh(mesh):` "
    "and pass the P(...) alone)"
)


@dataclass(frozen=True)
class CodeNames:
    """Names in the user's code: ``mesh`` (the mesh's variable, ``""`` unknown); per leaf
    path, how the function's body reaches it (``params['w1']``) and how the code that
    calls it does (``state[0]['w1']``)."""

    mesh: str = ""
    inside: dict[str, str] = field(default_factory=dict)
    outside: dict[str, str] = field(default_factory=dict)


def sharding_code(fix: Fix, names: CodeNames) -> str:
    """``NamedSharding(mesh, P('data', None))``."""
    return f"NamedSharding({names.mesh or 'mesh'}, {spec_code(fix.spec)})"


def _code(fix: Fix, names: CodeNames) -> str:
    sharding = sharding_code(fix, names)
    if fix.kind == "spec":
        leaf = names.outside.get(fix.leaf, fix.leaf.replace("/", "_"))
        return f"{leaf} = jax.device_put({leaf}, {sharding})"
    if fix.kind == "constraint" and fix.line:
        name = fix.code.split("=", 1)[0].strip()
        return f"{name} = jax.lax.with_sharding_constraint({name}, {sharding})  # after {fix.line}"
    if fix.kind == "constraint":
        leaf = names.inside.get(fix.leaf, fix.leaf.replace("/", "_"))
        return f"{leaf} = jax.lax.with_sharding_constraint({leaf}, {sharding})"
    if fix.kind == "mesh" and "create_device_mesh" in fix.code:  # the mesh named in each line
        return re.sub(r"\bmesh\b(?!_)", names.mesh or "mesh", fix.code)
    if fix.kind == "mesh" and fix.devices:
        mesh = names.mesh or "mesh"
        order = ", ".join(str(i) for i in fix.devices)
        return f"{mesh} = sv.reordered_mesh({mesh}, [{order}])  # then place the arrays on it again"
    if fix.kind == "mesh":
        head = fix.code.split("=", 1)[1].strip() if "=" in fix.code else fix.code
        return f"{names.mesh or 'mesh'} = {head}  # then place the arrays on it again"
    return fix.code


def pasteable(fix: Fix, names: CodeNames) -> Fix:
    """``fix`` with code that runs where it is pasted: the mesh named, the leaf reached as
    the user's code reaches it, and, when the mesh's variable is not known, a comment saying
    what ``mesh`` is."""
    code = _code(fix, names)
    if not names.mesh and fix.kind in ("spec", "constraint", "mesh"):
        code += ("  # " if "  # " not in code else "; ") + MESH_HINT
    return replace(fix, code=code)


def with_code(cand: Candidate, names: CodeNames) -> Candidate:
    """``cand`` with every fix's code :func:`pasteable`."""
    return replace(cand, fixes=tuple(pasteable(f, names) for f in cand.fixes))
