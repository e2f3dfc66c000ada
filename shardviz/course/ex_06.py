"""Exercises of notebook 06 (expert parallelism and sequence parallelism)."""

from __future__ import annotations

from typing import Any

from shardviz.course.answers import byte_count, bytes_verdict
from shardviz.course.exercise import exercise
from shardviz.course.programs import mesh as course_mesh
from shardviz.model.units import format_bytes

#: The zoo's "moe" layer: experts, d_model, d_ff, capacity per expert per group, groups of
#: 64 tokens (16 of them), in float32.
EXPERTS, D_MODEL, D_FF, CAPACITY, GROUPS, GROUP_SIZE = 8, 128, 256, 20, 16, 64


@exercise(
    "06.1",
    "the expert weights' spec",
    "on the 2 x 4 mesh ('data', 'expert'), write the spec of the expert weights w_in "
    "[experts=8, d_model=128, d_ff=256] so that each device holds two whole experts (every "
    "row and column of them) and the 'data' axis holds copies (a PartitionSpec or a tuple)",
    wrong=(
        (None, None, "expert"),
        ("data", None, None),
        (("data", "expert"), None, None),
        ("expert", "data", None),
    ),
)
def expert_weights_spec(answer: Any) -> tuple[bool, str, str]:
    import jax.numpy as jnp

    import shardviz as sv

    shape = (EXPERTS, D_MODEL, D_FF)
    sharding = sv.named_sharding(
        course_mesh((2, 4), ("data", "expert")), answer, shape, name="w_in"
    )
    layout = sv.layout_of(shape, jnp.float32, sharding, name="w_in")
    experts, whole, copies = set(), True, set()
    for tile in layout.tiles:
        e, d, f = tile.key
        experts.add(e[1] - e[0])
        whole = whole and d == (0, D_MODEL) and f == (0, D_FF)
        copies.add(sum(t.key == tile.key for t in layout.tiles))
    per_device = sorted(experts)
    right = per_device == [2] and whole and copies == {2}
    cut = "whole" if whole else "cut inside (a slice of d_model or d_ff)"
    message = (
        f"w_in {layout.spec_str}: each device holds {'/'.join(map(str, per_device))} of the "
        f"{EXPERTS} experts, {cut}; each piece is on {'/'.join(map(str, sorted(copies)))} "
        f"device{'s' * (max(copies) > 1)}"
    )
    hint = (
        "expert parallelism cuts only the experts dimension (the first), over the axis named "
        "for it; d_model and d_ff stay whole, and an axis the spec leaves out keeps copies"
    )
    return right, message, hint


def gshard_report(shape: tuple[int, int]) -> Any:
    """GShard's MoE layer written with shard_map (dispatch all-to-all, the local experts,
    combine all-to-all) on a ``shape`` mesh ('data', 'expert'), compiled, not run."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import PartitionSpec as P

    import shardviz as sv
    from shardviz.strategies.moe import route

    mesh = course_mesh(shape, ("data", "expert"))
    tokens = P(("data", "expert"))
    specs = {"w_gate": P(), "w_in": P("expert"), "w_out": P("expert")}

    def layer(p: Any, x: Any) -> Any:
        logits = jnp.einsum("gsd,de->gse", x, p["w_gate"])
        routing = route(logits, top_k=2, capacity=CAPACITY)
        dispatched = jnp.einsum("gsec,gsd->egcd", routing.dispatch, x)
        mine = jax.lax.all_to_all(dispatched, "expert", 0, 1, tiled=True)
        hidden = jax.nn.gelu(jnp.einsum("egcd,edf->egcf", mine, p["w_in"]))
        out = jnp.einsum("egcf,efd->egcd", hidden, p["w_out"])
        back = jax.lax.all_to_all(out, "expert", 1, 0, tiled=True)
        return jnp.einsum("gsec,egcd->gsd", routing.combine, back)

    shapes = {
        "w_gate": (D_MODEL, EXPERTS),
        "w_in": (EXPERTS, D_MODEL, D_FF),
        "w_out": (EXPERTS, D_FF, D_MODEL),
    }
    params = {
        k: jax.ShapeDtypeStruct(s, jnp.float32, sharding=sv.named_sharding(mesh, specs[k], s))
        for k, s in shapes.items()
    }
    x = jax.ShapeDtypeStruct(
        (GROUPS, GROUP_SIZE, D_MODEL),
        jnp.float32,
        sharding=sv.named_sharding(mesh, tokens, (GROUPS, GROUP_SIZE, D_MODEL)),
    )
    moe = jax.shard_map(layer, mesh=mesh.jax_mesh, in_specs=(specs, tokens), out_specs=tokens)
    return sv.explain(moe, params, x, run=False, diagnose=False)


@exercise(
    "06.2",
    "bytes of the dispatch all-to-all",
    "the same hand-written GShard layer on a 1 x 8 mesh (all eight devices along 'expert', one "
    "expert each): how many bytes does one device send in the dispatch all-to-all? (a number)",
    wrong=(122_880, 163_840, 20_480, 286_720, 1_146_880),
)
def dispatch_bytes(answer: Any) -> tuple[bool, str, str]:
    predicted = byte_count(answer)
    report = gshard_report((1, 8))
    dispatch = report.traffic("all-to-all", axes="expert").collective
    moved = dispatch.moved_bytes
    right = abs(predicted - moved) <= 0.005 * moved
    message = bytes_verdict(
        predicted, right, moved, "what one device sends in the dispatch all-to-all (1 x 8 mesh)",
        f"its operand is {format_bytes(dispatch.in_bytes, exact=True)} per device",
    )  # fmt: skip
    hint = (
        "each device still holds 2 groups' slots for all 8 experts (16 groups over 8 devices): "
        "an all-to-all over n devices keeps 1/n of that and sends 1/n to each of the n - 1 others"
    )
    return right, message, hint
