"""The plan search on a published decoder (a Llama at toy size): Megatron read from its layer
scan, the remat policy as a knob, and a memory cap that rules out pure data and pure tensor
parallelism."""

from __future__ import annotations

import dataclasses

import jax
import pytest

from shardviz.capture.mesh import Mesh
from shardviz.model.search import Plan, Search
from shardviz.strategies.candidates import Choice, GroupLink, Leaf, Space
from shardviz.strategies.rules.logical import logical_rule_set
from shardviz.strategies.rules.plans import rule_set_of
from shardviz.strategies.runner import compare
from shardviz.strategies.search.activations import activation_specs
from shardviz.strategies.search.inputs import search_inputs
from shardviz.strategies.search.progress import Quiet
from shardviz.strategies.search.rank import ranked
from shardviz.strategies.search.suggestions import (
    SuggestedPlan,
    SuggestedSearch,
    _Runner,
    _with_weights,
    suggest,
)
from shardviz.strategies.zoo import get_model

AXES = {"data": 2, "model": 4}

#: Llama 3.1's architecture (GQA, SwiGLU, RMSNorm, a scanned layer stack) at toy size: every
#: plan compiles in seconds.
TOY = dict(
    layers=2, d_model=64, heads=4, kv_heads=4, head_dim=16, ffn=256, vocab=512, seq=64, batch=8
)


@pytest.fixture(scope="module")
def mesh_2x4() -> Mesh:
    return Mesh(jax.devices(), (2, 4), ("data", "model"))


@pytest.fixture(scope="module")
def llama():
    return get_model("llama3.1-8b", **TOY)


@pytest.fixture(scope="module")
def space(llama, mesh_2x4) -> tuple[Space, object]:
    """The search's space for the toy Llama's train step on the 2 x 4 mesh (nothing compiled:
    the jaxpr is traced for its links)."""
    inputs = search_inputs(llama, (), mesh_2x4, None, None, 0)
    structure = inputs.structure()
    assert structure is not None
    leaves = _with_weights(inputs.leaves(), structure.weights)
    links = [(k.dims, k.reduced, k.stacked) for k in structure.links]
    return Space(leaves, AXES, links), inputs


def _specs_of(space: Space, choice: Choice) -> dict[str, tuple]:
    return {p: s for p, s in space.specs(choice).items() if p.startswith("params/layers/")}


def test_the_first_structure_seed_is_megatrons_split_not_the_layer_stack(space) -> None:
    """The stacked layer dim joins every layer weight; taken as a Megatron pair it used to
    hide the real pairs (heads, and the MLP's hidden dim), and the first seed split d_model."""
    sp, _ = space
    stacked = [k for k in sp.links if k.stacked]
    assert stacked, "the scan's stacked dim is a link"
    first, how = sp.link_seeds()[0]
    specs = _specs_of(sp, first)
    assert specs["params/layers/mlp/w_gate"] == ((), (), ("model",))  # columns
    assert specs["params/layers/mlp/w_up"] == ((), (), ("model",))
    assert specs["params/layers/mlp/w_down"] == ((), ("model",), ())  # rows
    assert specs["params/layers/attn/wq"][2] == ("model",)  # heads
    assert specs["params/layers/attn/wo"][1] == ("model",)
    assert all(not spec[0] for spec in specs.values()), "the layer dim stays whole"
    assert first.batch == ("data",)
    assert "'model' on layers/mlp" in how and "batch over 'data'" in how


def test_a_stacked_link_is_never_a_megatron_pair() -> None:
    """Two weights joined only by a stacked dim and by a pair: the pair is Megatron's."""
    f32 = 4
    leaves = [
        Leaf("params/layers/w1", "params", "layers/w1", "params", (2, 16, 64), f32),
        Leaf("params/layers/w2", "params", "layers/w2", "params", (2, 64, 16), f32),
        Leaf("batch/x", "batch", "x", "batch", (8, 16), f32),
    ]
    stack = ((("params/layers/w1", 0), ("params/layers/w2", 0)), False, True)
    pair = ((("params/layers/w1", 2), ("params/layers/w2", 1)), False, False)
    sp = Space(leaves, AXES, [stack, pair])
    first = sp.links[0]
    assert isinstance(first, GroupLink) and not first.stacked
    assert sorted(d for _, d in first.dims) == [1, 2]
    assert any(k.stacked for k in sp.links)


def test_the_remat_policy_is_a_knob_for_a_published_decoder_only(space, mesh_2x4) -> None:
    sp, inputs = space
    policies, own = inputs.remat_policies(offload=False)
    assert own == "full" and "none" in policies and "save_matmuls" in policies
    assert "offload" not in policies
    assert "offload" in inputs.remat_policies(offload=True)[0]
    plain = search_inputs(get_model("transformer"), (), mesh_2x4, None, None, 0)
    assert plain.remat_policies(offload=True) == ((), None)

    sp.remats, sp.own_remat = policies, own
    start = sp.replicated(("data", "model"))
    moves = dict(sp.moves(start))
    remat = moves["remat"]
    assert {c.remat for c, _ in remat} == {r for r in policies if r != "full"}
    back = dict(sp.moves(remat[0][0]))["remat"]
    # Back to the model's own policy is the plain choice again (compiled once, not twice).
    assert start in [c for c, _ in back]


def test_a_plans_rules_and_json_keep_its_remat(llama, mesh_2x4) -> None:
    rules = rule_set_of({}, ("data", "model"), remat="none")
    assert rules.remat == "none"
    plan = SuggestedPlan(
        label="#1", how="x", specs={}, report=None, peak_bytes=1, moved_bytes=0, remat="none"
    )
    assert plan.rules.remat == "none"
    search = SuggestedSearch(function="f", mesh=None, plans=(plan,), ranking="r")
    again = SuggestedSearch.from_json(search.to_json())
    assert again.plans[0].remat == "none" and again.plans[0].rules.remat == "none"
    assert Search.from_json(search.to_json()).plans[0].remat == "none"


def test_activations_offloaded_by_the_remat_policy_rank_after_plans_in_hbm() -> None:
    def plan(label: str, **kw) -> Plan:
        base = dict(how="", specs={}, report=None, peak_bytes=100, moved_bytes=10, fits=True)
        return Plan(label=label, **(base | kw))

    offloaded = plan("#1", remat="offload", moved_bytes=1, flops_per_device=1.0)
    in_hbm = plan("#2", remat="full", moved_bytes=50, flops_per_device=1.0)
    assert [p.label for p in ranked([offloaded, in_hbm], False)] == ["#2", "#1"]


def test_no_remat_does_less_work_and_ranks_first_unless_the_cap_needs_remat(
    space, llama, mesh_2x4
) -> None:
    """Two compiles of the same specs: remat 'none' keeps the layers' activations (higher
    peak) and recomputes nothing (fewer flops). Without a cap it ranks first; under a cap
    between the two peaks, the model's own 'full' does."""
    sp, inputs = space
    sp.remats, sp.own_remat = inputs.remat_policies(offload=False)
    runner = _Runner(sp, inputs, None, 600.0, Quiet())
    seed = next(c for c, how in sp.link_seeds())
    full = runner.try_choice(seed, "megatron")
    none = runner.try_choice(dataclasses.replace(seed, remat="none"), "no remat")
    assert full is not None and none is not None and full.compiled and none.compiled
    assert none.remat == "none" and full.remat is None
    assert none.flops_per_device < full.flops_per_device
    assert none.peak_bytes > full.peak_bytes
    assert ranked([full, none], False)[0] is none
    cap = (full.peak_bytes + none.peak_bytes) // 2
    capped = [dataclasses.replace(p, fits=p.peak_bytes <= cap) for p in (full, none)]
    assert ranked(capped, False)[0].remat is None
    # plan.rules (specs, pinned activations, remat) is the same program in compare.
    run = compare(llama, [none.rules], mesh=mesh_2x4, steps=1).results[0]
    assert run.loss_matches
    assert run.report.memory.peak_bytes == none.peak_bytes
    assert sum(c.moved_bytes * (c.trips or 1) for c in run.report.collectives) == none.moved_bytes


def test_under_a_cap_that_rules_out_dp_and_tp_it_finds_a_plan_as_good_as_any_builtin(
    llama, mesh_2x4, space
) -> None:
    """The issue's case: a memory cap under which pure data parallelism (everything
    replicated, the batch over all 8 devices) and pure tensor parallelism (the
    architecture's logical 'tp': Megatron over 'model', the batch whole) do not fit, by
    their compiled peaks. The search, seeded with the architecture's logical strategies as
    compare runs them, still finds a plan that fits, ranked at least as well as every
    built-in it compiled that fits."""
    sp, inputs = space
    runner = _Runner(sp, inputs, None, 600.0, Quiet())
    tp = sp.from_rule_set(logical_rule_set("tp", llama), {"tensor": ("model",)}, any_batch=True)
    assert tp is not None
    peaks = {}
    for name, choice in (("dp", sp.replicated(("data", "model"))), ("tp", tp)):
        plan = runner.try_choice(choice, name)
        assert plan is not None and plan.compiled and plan.peak_bytes
        peaks[name] = plan.peak_bytes
    cap = int(min(peaks.values()) * 0.9)
    search = suggest(llama, mesh=mesh_2x4, memory_limit=cap, budget_s=25, progress=False)
    assert search.tried >= 1 and search.stopped in ("budget", "converged")
    best = search.best
    assert best is not None and best.fits and best.peak_bytes <= cap
    assert best.peak_bytes < 0.5 * peaks["dp"], "well under data parallelism's peak"
    builtins = [p for p in search.plans if p.how.startswith("strategy ")]
    fitting = [p for p in builtins if p.compiled and p.fits]
    assert fitting, "a built-in fits the cap (FSDP)"
    order = [p.label for p in search.plans]
    assert all(order.index(best.label) <= order.index(p.label) for p in fitting)
    assert all(not p.fits for p in search.plans if p.how.startswith("strategy 'tp'"))
    assert any(p.how.startswith("strategy 'fsdp") for p in search.plans), "logical seeds"
    # Each plan pins the activations its weights imply (batch split like the data).
    assert best.activations["residual"][0] == tuple(
        a for a in ("data", "model") if a in best.specs["batch/inputs"][0]
    )
    assert any("remat policy is a knob" in n for n in search.notes)


def test_activations_follow_the_plans_weights_and_batch(llama, space) -> None:
    """Megatron's weights imply its activations (heads, the MLP's hidden dim, over 'model'),
    the batch splits every activation's first dim, and a mesh axis is never used twice."""
    sp, _ = space
    config = llama.info["config"]
    megatron, _ = sp.link_seeds()[0]
    acts = activation_specs(config, sp.specs(megatron), ("data",))
    assert acts["query"] == (("data",), (), ("model",), ())
    assert acts["mlp_hidden"] == (("data",), (), ("model",))
    assert acts["residual"] == (("data",), (), ())  # embed whole on activations
    assert "dispatched" not in acts  # an MoE layer's are left to the compiler
    # The batch over both axes takes 'model' from the heads.
    both = activation_specs(config, sp.specs(megatron), ("data", "model"))
    assert both["query"] == (("data", "model"), (), (), ())


def test_the_stacked_layer_dim_seeds_a_stage_split_and_stays_a_knob(space) -> None:
    """'stacked layer dims -> stage': the scan's dim over one axis, the batch over the
    other; the stacked link is among the moves even when larger links fill the top."""
    sp, _ = space
    assert any(k.stacked for k in sp.links)
    # 2 layers: over 'data' (2), the batch over 'model'; 'model' (4) does not divide them.
    ((choice, how),) = sp.stage_seeds()
    specs = _specs_of(sp, choice)
    assert specs["params/layers/attn/wq"][0] == ("data",)
    assert specs["params/layers/mlp/w_up"][0] == ("data",)
    assert choice.batch == ("model",) and "stage) over 'data'" in how
