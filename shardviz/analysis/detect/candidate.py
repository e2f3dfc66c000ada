"""A finding as a detector first makes it: the problem, and the fixes worth trying."""

from __future__ import annotations

from dataclasses import dataclass

from shardviz.analysis.detect.inputs import spec_code
from shardviz.model.array import Spec
from shardviz.model.findings import Finding, Fix

#: What a fix must improve to count as helping: the remats left, the bytes moved per step,
#: the peak memory per device, the flops per device, the estimated communication time on
#: the report's target (the bytes moved no more than before), or the communication the
#: predicted step waits for there (``"exposed"``: it and the predicted step both lower, the
#: bytes moved no more).
Goal = str  # "remats" | "moved" | "peak" | "flops" | "communication" | "exposed" | "gone"


@dataclass(frozen=True)
class Candidate:
    """A finding with the fixes to try, best first, and what they must improve."""

    finding: Finding
    fixes: tuple[Fix, ...] = ()
    goal: Goal = "moved"
    #: Report the finding only if one of its fixes helps (a cost the compiler may have had
    #: good reason for, worth saying only when there is something better).
    only_with_fix: bool = False


def spec_fix(leaf: str, spec: Spec, why: str) -> Fix:
    """Place an argument leaf with another spec."""
    return Fix(
        kind="spec",
        description=f"place {leaf} as {spec_code(spec)} ({why})",
        code=f"{spec_code(spec)}  # the spec for {leaf}, where it is placed (device_put or rules)",
        leaf=leaf,
        spec=spec,
    )


def constraint_fix(leaf: str, spec: Spec, function: str, why: str) -> Fix:
    """Constrain an argument leaf to a spec at the top of the function."""
    name = leaf.rsplit("/", 1)[-1]
    return Fix(
        kind="constraint",
        description=f"constrain {leaf} to {spec_code(spec)} at the top of {function} ({why})",
        code=f"{name} = jax.lax.with_sharding_constraint({name}, {spec_code(spec)})",
        leaf=leaf,
        spec=spec,
    )


def constraint_at_fix(
    line: str,
    code: str,
    value: str,
    shape: tuple[int, ...],
    spec: Spec,
    why: str,
    place: str = "",
) -> Fix:
    """Constrain the value made at ``line`` (of ``shape``) to a spec, right where it is made."""
    name = code.split("=", 1)[0].strip() if "=" in code else "value"
    if not name.isidentifier():
        name = "value"
    return Fix(
        kind="constraint",
        description=f"constrain {value} to {spec_code(spec)} where it is made, at {place or line} ({why})",
        code=f"{name} = jax.lax.with_sharding_constraint({name}, {spec_code(spec)})  # after {place or line}",
        leaf=value,
        spec=spec,
        line=line,
        shape=shape,
    )


def without_constraint(code: str) -> str | None:
    """``code`` with its ``with_sharding_constraint(x, s)`` call replaced by ``x``
    (``return h`` for ``return jax.lax.with_sharding_constraint(h, s)``); ``None`` when the
    line has no such call that can be read."""
    text = code.split("  #", 1)[0].rstrip()
    start = text.find("with_sharding_constraint(")
    if start < 0:
        return None
    head = text[:start]
    for prefix in ("jax.lax.", "lax."):
        if head.endswith(prefix):
            head = head[: -len(prefix)]
    depth, i = 0, start + len("with_sharding_constraint(")
    arg_start, arg_end = i, None
    while i < len(text):
        ch = text[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0:
                break
            depth -= 1
        elif ch == "," and depth == 0 and arg_end is None:
            arg_end = i
        i += 1
    if arg_end is None or i >= len(text):
        return None
    return head + text[arg_start:arg_end].strip() + text[i + 1 :]


def drop_constraint_fix(line: str, code: str, why: str, place: str = "") -> Fix:
    """Remove a sharding constraint the program has at ``line``: the line deleted when it
    only constrains a value in place (``y = wsc(y, s)``), else the call replaced by its
    value (``return h`` for ``return wsc(h, s)``)."""
    plain = without_constraint(code) if code else None
    if plain is None:
        text = f"# delete: {code}" if code else f"# delete the with_sharding_constraint at {line}"
    elif "=" in plain and plain.split("=", 1)[0].strip() == plain.split("=", 1)[1].strip():
        text = f"# delete: {code}"
    else:
        text = f"{plain.strip()}  # instead of: {code.strip()}"
    return Fix(
        kind="drop-constraint",
        description=f"remove the sharding constraint at {place or line} ({why})",
        code=text,
        line=line,
    )


def mesh_fix(shape: tuple[int, ...], axes: tuple[str, ...], why: str) -> Fix:
    """The same devices in a mesh of another shape (same axis names)."""
    return Fix(
        kind="mesh",
        description=f"reshape the mesh to {dict(zip(axes, shape, strict=True))} ({why})",
        code=f"mesh = jax.make_mesh({shape}, {axes})",
        mesh_shape=shape,
    )


def order_fix(shape: tuple[int, ...], devices: tuple[int, ...], words: str) -> Fix:
    """The same devices in another order (a permutation), the mesh's shape and names kept."""
    order = ", ".join(str(i) for i in devices)
    return Fix(
        kind="mesh",
        description=f"reorder the mesh's devices: {words}",
        code=f"mesh = sv.reordered_mesh(mesh, [{order}])",
        mesh_shape=shape,
        devices=devices,
    )
