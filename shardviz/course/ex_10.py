"""Exercises of notebook 10 (debugging a partition spec: findings, their fixes, and why)."""

from __future__ import annotations

from functools import cache
from typing import Any

from shardviz.course.answers import specs_for
from shardviz.course.exercise import exercise
from shardviz.course.programs import mesh as course_mesh
from shardviz.model.units import format_bytes

#: The colleague's program of section 11: a two-layer forward pass, 128 -> 512 -> 128, on a
#: batch of 64, on the 2 x 4 mesh ('data', 'model').
D, H, BATCH = 128, 512, 64
NAMES = ("w1", "w2", "x")
#: Where the colleague placed things: both weights whole on every device, the batch over
#: 'model'.
COLLEAGUE = {"w1": (None, None), "w2": (None, None), "x": ("model", None)}


def colleague_forward(params: dict[str, Any], x: Any) -> Any:
    """The colleague's forward pass (the same code as the notebook's)."""
    import jax.numpy as jnp

    h = jnp.tanh(x @ params["w1"])
    return h @ params["w2"]


def _placed(specs: dict[str, Any]) -> tuple[dict[str, Any], Any]:
    """The colleague's weights and batch (ones) placed as ``specs`` on the 2 x 4 mesh."""
    import jax.numpy as jnp

    import shardviz as sv

    mesh = course_mesh()
    shapes = {"w1": (D, H), "w2": (H, D), "x": (BATCH, D)}
    placed = {n: sv.mark_sharding(jnp.ones(s), mesh, specs[n], name=n) for n, s in shapes.items()}
    return {"w1": placed["w1"], "w2": placed["w2"]}, placed["x"]


def _diagnosed(specs: dict[str, Any]) -> tuple[Any, list[Any]]:
    """The forward pass with its arguments placed as ``specs``, explained compile-only with its
    fixes tried (what ``sv.diagnose`` gives): the report and its findings (without the one
    that depends on the process's other arrays)."""
    import shardviz as sv

    params, x = _placed(specs)
    report = sv.explain(colleague_forward, params, x, run=False).try_fixes()
    found = list(report.findings or ())
    return report, found


def _findings_text(n: int) -> str:
    return {0: "no finding", 1: "one finding"}.get(n, f"{n} findings")


def _kind(answer: Any) -> str:
    from shardviz.model.findings import FINDING_KINDS

    if not isinstance(answer, str):
        raise ValueError(f"name a finding's kind as a string, e.g. 'uneven'; got {answer!r}")
    text = answer.strip().lower().replace("_", "-").replace(" ", "-")
    if text not in FINDING_KINDS:
        raise ValueError(f"{answer!r} is not a kind of finding; shardviz's are {FINDING_KINDS}")
    return text


@cache
def _colleague_kinds() -> tuple[tuple[str, str], ...]:
    """The colleague's program as placed: (kind, title) of each finding."""
    _, found = _diagnosed(COLLEAGUE)
    return tuple((f.kind, f.title) for f in found)


@exercise(
    "10.1",
    "name the finding",
    "the colleague's forward pass keeps w1 and w2 whole on every device and places the batch "
    "x with P('model', None) on the 2 x 4 mesh: which kind of finding does sv.diagnose "
    "report for it? (a kind, as finding.kind spells it, e.g. 'uneven')",
    wrong=("replicated", "uneven", "regather", "imbalance"),
)
def colleague_kind(answer: Any) -> tuple[bool, str, str]:
    kind = _kind(answer)
    found = _colleague_kinds()
    kinds = {k for k, _ in found}
    right = kinds == {kind}
    if right:
        message = f"sv.diagnose found one finding, of kind {kind!r}: {found[0][1]}"
    else:
        message = (
            f"sv.diagnose compiled the program and found {_findings_text(len(found))}, "
            f"none of kind {kind!r}"
        )
    hint = (
        "look at the program, not the weights alone: 'replicated' is one leaf left whole "
        "while its peers are split, and here nothing is split but the batch. Which mesh "
        "axis does no spec name, and what do the devices along it do?"
    )
    return right, message, hint


def _quarters(report: Any) -> list[str]:
    """The weights that some device holds more than a quarter of."""
    over = []
    for name in ("w1", "w2"):
        leaf = report.arguments[f"params/{name}"]
        if leaf.max_bytes_per_device * 4 > leaf.nbytes:
            over.append(f"{name} ({format_bytes(leaf.max_bytes_per_device)} per device)")
    return over


@cache
def _fewest_moved() -> int:
    """The bytes moved per device by the best plan the judge knows: Megatron's column-then-
    row pair over 'model', the batch over 'data'."""
    report, _ = _diagnosed({"w1": (None, "model"), "w2": ("model", None), "x": ("data", None)})
    return sum(c.moved_bytes for c in report.collectives)


@exercise(
    "10.2",
    "fix the colleague's specs",
    "write specs for the colleague's w1, w2 and x (a dict {'w1': ..., 'w2': ..., 'x': ...}) "
    "on the same 2 x 4 mesh so that sv.diagnose finds nothing, no device holds more than a "
    "quarter of either weight, and the forward pass moves as few bytes as any such plan",
    wrong=(
        {"w1": (), "w2": (), "x": (("data", "model"), None)},
        {"w1": (None, "model"), "w2": (None, "model"), "x": ("data", None)},
        {"w1": (None, "model"), "w2": ("model", None), "x": ("model", None)},
        {"w1": ("model", None), "w2": ("model", None), "x": ("data", None)},
    ),
)
def colleague_fix(answer: Any) -> tuple[bool, str, str]:
    specs = specs_for(answer, NAMES)
    report, found = _diagnosed(specs)
    over = _quarters(report)
    moved = sum(c.moved_bytes for c in report.collectives)
    best = _fewest_moved()
    ledger = ", ".join(f"{c.kind} over {'/'.join(c.axes)}" for c in report.collectives)
    right = not found and not over and moved <= best
    message = (
        f"sv.diagnose found {_findings_text(len(found))}"
        + (f" ({', '.join(sorted({f.kind for f in found}))})" if found else "")
        + f"; the forward pass has {ledger or 'no collective'}, moving "
        f"{format_bytes(moved, exact=True)} per device"
        + (f"; more than a quarter on a device: {', '.join(over)}" if over else "")
    )
    if found:
        hint = "read the finding (print(sv.diagnose(...))): it says what it costs and why"
    elif over:
        hint = (
            "the weights must be cut too: each over the 4-way axis, so that a device keeps "
            "a quarter of each"
        )
    else:
        hint = (
            f"it works, but a plan that moves {format_bytes(best, exact=True)} per device "
            "exists: communicate at the block's narrow point (the [64, 128] output rather "
            "than the [64, 512] hidden activation), as Megatron pairs its two matmuls; and "
            "make sure every device's batch rows are its own"
        )
    return right, message, hint
