"""Exercises of notebook 07 (pipeline parallelism: stages, microbatches, the bubble)."""

from __future__ import annotations

from functools import cache
from typing import Any

from shardviz.course.answers import whole_number
from shardviz.course.exercise import exercise

#: 07.1's pipeline: the notebook's 4-layer transformer on 2 stages (2 layers each), its batch
#: of 16 sequences cut into 16 microbatches.
STAGES_1, MICRO_1, LAYERS, BATCH_1 = 2, 16, 4, 16
#: 07.2's pipeline: 8 stages, a batch of 256 sequences, a bubble of at most 10%.
STAGES_2, BATCH_2, BOUND = 8, 256, 0.10


@cache
def _ring_trips(stages: int, microbatches: int) -> tuple[int, tuple[tuple[int, int], ...]]:
    """GSPMD's pipeline forward (the zoo transformer, shrunk: the loop's trip count depends
    only on the stages and the microbatches) compiled on ``stages`` devices, not run: the
    trip count of the stage ring's collective-permute and its pairs."""
    import jax

    import shardviz as sv
    from shardviz.strategies.pipeline.gspmd import pipelined_loss, stage_constraint
    from shardviz.strategies.pipeline.stages import STAGE_AXIS, stack_layers
    from shardviz.strategies.zoo import get_model

    model = get_model(
        "transformer", layers=LAYERS, batch=BATCH_1, d_model=32, heads=2, d_ff=64, seq=8, vocab=64
    )
    mesh = sv.Mesh(range(stages), (stages,), (STAGE_AXIS,))
    shapes = jax.eval_shape(model.init_params, jax.random.key(0))
    layers = jax.eval_shape(lambda ls: stack_layers(ls, stages), shapes["layers"])
    params = {
        k: jax.tree.map(lambda a: sv.mark_sharding(a, mesh, ()), v) for k, v in shapes.items()
    }
    params["layers"] = jax.tree.map(
        lambda a: sv.mark_sharding(a, mesh, (STAGE_AXIS,) + (None,) * (a.ndim - 1)), layers
    )
    batch = jax.tree.map(
        lambda a: sv.mark_sharding(a, mesh, ()),
        jax.eval_shape(model.make_batch, jax.random.key(1)),
    )
    constrain = stage_constraint(mesh.jax_mesh)

    def loss(p: Any, b: Any) -> Any:
        return pipelined_loss(
            p, b, stages=stages, microbatches=microbatches, constrain_stages=constrain
        )

    report = sv.explain(loss, params, batch, run=False)
    ring = [
        c
        for c in report.collectives_of("collective-permute")
        if len(c.pairs) == stages and c.axes == (STAGE_AXIS,)
    ]
    if not ring:
        raise RuntimeError("the compiled pipeline has no stage-ring collective-permute")
    return ring[0].trips or 0, ring[0].pairs


@exercise(
    "07.1",
    "how often the stage ring's permute runs",
    "the same 4-layer transformer as a GSPMD pipeline of 2 stages (2 layers each), its batch "
    "of 16 cut into 16 microbatches: how many times does the forward's stage-ring "
    "collective-permute run per step? (a whole number)",
    wrong=(16, 32, 18),
)
def permute_runs(answer: Any) -> tuple[bool, str, str]:
    got = whole_number(answer, "a number of runs")
    trips, pairs = _ring_trips(STAGES_1, MICRO_1)
    ring = ", ".join(f"{s}->{t}" for s, t in pairs)
    head = (
        f"compiled the forward of a {STAGES_1}-stage pipeline over {MICRO_1} microbatches: its "
        f"collective-permute over 'stage' ({ring}) sits in a loop that runs"
    )
    if got == trips:
        return True, f"{head} {trips} times per step, as you said", ""
    message = f"{head} {'more' if trips > got else 'fewer'} than the {got} times you said"
    hint = (
        "each trip of the loop moves every stage's result one stage on; the loop ends when the "
        "last microbatch has left the last stage: count the trips the first microbatch needs "
        "to reach the last stage, then one more trip for each microbatch behind it"
    )
    return False, message, hint


def _bubble(microbatches: int) -> tuple[float, int, float]:
    """GPipe's and 1F1B's schedules for 07.2's stages and ``microbatches``: GPipe's idle
    share of the stages x time grid, its length in time units, and 1F1B's idle share."""
    from shardviz.model.schedule import schedule

    gpipe = schedule("gpipe", STAGES_2, microbatches)
    one_f_one_b = schedule("1f1b", STAGES_2, microbatches)
    return gpipe.schedule_bubble_fraction, gpipe.length, one_f_one_b.schedule_bubble_fraction


def _within(bubble: float) -> bool:
    return bubble <= BOUND + 1e-12


@exercise(
    "07.2",
    "enough microbatches for a small bubble",
    "a pipeline of 8 stages trains on a batch of 256 sequences, cut into M equal "
    "microbatches (M divides 256): what is the smallest M that keeps the bubble at or under "
    "10% of each stage's time? (a whole number)",
    wrong=(32, 63, 128, 8),
)
def microbatches_for_bound(answer: Any) -> tuple[bool, str, str]:
    m = whole_number(answer, "a number of microbatches")
    if BATCH_2 % m:
        return (
            False,
            f"a batch of {BATCH_2} sequences does not cut into {m} equal microbatches",
            "every microbatch has the same number of sequences, so M must divide the batch",
        )
    bubble, length, other = _bubble(m)
    smaller = [k for k in range(1, m) if BATCH_2 % k == 0 and _within(_bubble(k)[0])]
    right = _within(bubble) and not smaller
    message = (
        f"the GPipe schedule of {STAGES_2} stages x {m} microbatches is {length} time units "
        f"long and each stage idles {bubble:.1%} of them (1F1B: {other:.1%}), "
        f"{'within' if _within(bubble) else 'above'} the bound of {BOUND:.0%}"
    )
    if _within(bubble) and smaller:
        message += "; a smaller M that divides the batch keeps it within the bound too"
    hint = (
        "the fill and the drain cost S - 1 time units each, whatever M is, so the idle share is "
        "(S - 1) / (M + S - 1): solve it for M, then take the first M that divides the batch "
        "(more microbatches than needed only shrink each one's matmuls)"
    )
    return right, message, hint
