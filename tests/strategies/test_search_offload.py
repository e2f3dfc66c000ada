"""``suggest`` with offload: under a memory limit no plan in HBM meets, the optimizer state goes
to pinned host memory (ZeRO-Offload); ``host_memory_limit`` caps host memory as
``memory_limit`` caps HBM; without a memory limit nothing is offloaded (8 fake CPU devices)."""

from __future__ import annotations

import math
import re

import jax
import pytest

from shardviz.capture.mesh import Mesh
from shardviz.errors import ShardvizError
from shardviz.model.search import Plan
from shardviz.strategies.candidates import OFFLOAD_WORDS, Leaf, Space
from shardviz.strategies.search.inputs import SearchInputs
from shardviz.strategies.search.rank import ranked, ranking_words
from shardviz.strategies.search.suggestions import SuggestedSearch, memory_bytes, suggest
from shardviz.strategies.zoo import get_model, init_train_state, make_train_step

KiB = 1024
# An MLP of 514 KiB of parameters and twice that of Adam state, on 8 devices: ZeRO-3 in HBM
# needs (1 + 2) x 514 KiB / 8 = 193 KiB for its arguments alone (its peak is near 400 KiB);
# with the optimizer state on host its arguments need 64 KiB and its peak about 140 KiB.
SIZES = {"d_model": 128, "d_hidden": 512, "batch": 64}
LIMIT = "180 KiB"


@pytest.fixture(scope="module")
def mesh_8() -> Mesh:
    return Mesh(jax.devices(), (8,), ("data",))


@pytest.fixture(scope="module")
def train_step():
    model = get_model("mlp", **SIZES)
    return make_train_step(model), init_train_state(model, jax.random.key(0))


def _search(train_step, mesh, **kw) -> SuggestedSearch:
    step, state = train_step
    return suggest(step, *state, mesh=mesh, strategies=("zero3",), progress=False, **kw)


@pytest.fixture(scope="module")
def offloaded(train_step, mesh_8) -> SuggestedSearch:
    return _search(train_step, mesh_8, memory_limit=LIMIT, budget_s=4)


def _optimizer_bytes_per_device(plan) -> int:
    """The optimizer state's bytes on one device, by hand from its leaves' specs."""
    sizes = dict(zip(plan.report.mesh.axis_names, plan.report.mesh.axis_sizes, strict=True))
    total = 0
    for leaf in plan.report.arguments:
        if leaf.name.startswith("opt_state/"):
            ways = math.prod(sizes[a] for entry in plan.specs[leaf.name] for a in entry)
            total += math.prod(leaf.shape) * leaf.itemsize // ways
    return total


def test_host_memory_limit_takes_the_forms_of_memory_limit() -> None:
    assert memory_bytes("64GiB", "host_memory_limit") == 64 * 2**30
    assert memory_bytes(4096, "host_memory_limit") == 4096
    with pytest.raises(ShardvizError, match="host_memory_limit='lots'"):
        memory_bytes("lots", "host_memory_limit")


def test_cpu_devices_have_pinned_host_memory(offloaded) -> None:
    assert offloaded._inputs.has_host_memory()


def test_the_best_plan_fits_hbm_by_offloading_the_optimizer_state(offloaded) -> None:
    best = offloaded.best
    assert best is not None and best.fits
    assert best.peak_bytes <= 180 * KiB == offloaded.memory_limit
    assert best.on_host and all(p.startswith("opt_state/") for p in best.on_host)
    assert OFFLOAD_WORDS in best.how or "pinned host" in best.how
    # No plan in HBM alone fits: each is over the limit (or was not compiled at all).
    assert all(p.fits is False for p in offloaded.plans if not p.on_host)
    assert offloaded.skipped > 0
    # What the plan says is what was compiled: the optimizer state's leaves in host memory.
    kinds = {leaf.name: leaf.memory_kind for leaf in best.report.arguments}
    assert {k for k, v in kinds.items() if v == "pinned_host"} == set(best.on_host)


def test_the_host_bytes_are_the_optimizer_states_bytes_per_device(offloaded) -> None:
    best = offloaded.best
    m = best.report.memory
    opt = _optimizer_bytes_per_device(best)
    assert opt > 0 and m.host_argument_bytes == opt
    # The updated state goes back to host as an output (no donation): in and out.
    assert m.host_output_bytes == opt
    assert best.host_bytes == m.host_bytes == 2 * opt
    # HBM leaves it out: the peak is below the same split with the state in HBM.
    assert best.peak_bytes < opt + best.peak_bytes <= m.compiler_peak_bytes


def test_the_views_say_the_plan_offloads_and_show_its_host_bytes(offloaded) -> None:
    text = " ".join(str(offloaded).split())  # the plan table's how column wraps at words
    assert "optimizer state in pinned host memory" in text  # the best plan's specs heading
    assert "offloaded to pinned host memory" in text or "[optimizer state in" in text
    assert "(host " in text and "per device)" in text
    assert any(
        re.search("keeps? the optimizer state in pinned host memory", n) for n in offloaded.notes
    )
    assert "sv-how" in offloaded._repr_html_()


def test_an_offloaded_plans_rules_and_arguments_keep_the_state_on_host(offloaded) -> None:
    best = offloaded.best
    assert best.rules.host == ("optimizer",)
    _, opt_state, _ = offloaded.arguments()
    kinds = {x.sharding.memory_kind for x in jax.tree.leaves(opt_state)}
    assert kinds == {"pinned_host"}
    back = SuggestedSearch.from_json(offloaded.to_json())
    assert back.best.on_host == best.on_host and back.best.host_bytes == best.host_bytes


def test_a_host_memory_limit_too_small_for_the_state_leaves_no_plan(train_step, mesh_8) -> None:
    search = _search(train_step, mesh_8, memory_limit=LIMIT, host_memory_limit="16 KiB", budget_s=4)
    assert search.best is None and search.stopped == "memory"
    assert search.host_memory_limit == 16 * KiB
    assert all(p.fits is False for p in search.plans)
    note = next(n for n in search.notes if "host_memory_limit" in n)
    assert "memory_limit" in note.replace("host_memory_limit", "")  # both limits named
    assert "180 KiB" in note and "16 KiB" in note
    assert "raise host_memory_limit" in note  # and the fix
    assert "host memory limit 16 KiB per device" in str(search)


def test_a_plan_over_the_host_memory_limit_is_listed_as_not_fitting(train_step, mesh_8) -> None:
    """The state's 129 KiB per device passes the host limit as an argument, but the step
    sends the updated state back as well (257 KiB in all): compiled, over, never best."""
    search = _search(
        train_step, mesh_8, memory_limit=LIMIT, host_memory_limit="200 KiB", budget_s=4
    )
    over = [p for p in search.plans if p.on_host]
    assert over and all(p.fits is False and p.host_bytes > 200 * KiB for p in over)
    assert any(p.peak_bytes <= 180 * KiB for p in over)  # HBM alone would fit
    assert search.best is None and search.stopped in ("memory", "budget")
    assert any("raise host_memory_limit to 257" in n for n in search.notes)
    assert not any("the lowest peak was" in n for n in search.notes)  # HBM is not the cause


def test_a_host_memory_limit_alone_offloads_nothing(train_step, mesh_8) -> None:
    search = _search(train_step, mesh_8, host_memory_limit="1 KiB", budget_s=2)
    assert search.best is not None and search.best.fits
    assert all(not p.on_host and not p.host_bytes for p in search.plans)


def test_without_a_memory_limit_nothing_is_offloaded(train_step, mesh_8) -> None:
    search = _search(train_step, mesh_8, budget_s=2)
    assert search.best is not None
    assert all(not p.on_host for p in search.plans)
    assert not any("pinned host" in n for n in search.notes)
    assert "pinned host" not in str(search)


def test_devices_without_pinned_host_memory_skip_the_knob(train_step, mesh_8, monkeypatch) -> None:
    monkeypatch.setattr(SearchInputs, "has_host_memory", lambda self: False)
    search = _search(train_step, mesh_8, memory_limit=LIMIT, budget_s=4)
    assert search.best is None and search.stopped == "memory"
    assert all(not p.on_host for p in search.plans)
    assert any("no pinned_host memory" in n for n in search.notes)


def test_a_plan_that_fits_only_by_offloading_ranks_after_those_that_fit_in_hbm() -> None:
    def plan(label: str, moved: int, on_host: tuple[str, ...] = ()) -> Plan:
        return Plan(
            label=label, how="", specs={}, report=None, peak_bytes=100, moved_bytes=moved,
            fits=True, on_host=on_host, host_bytes=64 if on_host else 0,
        )  # fmt: skip

    offloaded = plan("#1", 10, ("opt_state/0/mu/w",))
    in_hbm = plan("#2", 1000)
    assert [p.label for p in ranked([offloaded, in_hbm], False)] == ["#2", "#1"]
    assert "offloaded to host memory after those that fit in HBM" in ranking_words("", True)
    assert "offloaded" not in ranking_words("")


def test_the_offload_knob_moves_the_optimizer_states_bytes_from_hbm_to_host() -> None:
    leaves = [
        Leaf("params/w", "params", "w", "params", (64, 64), 4),
        Leaf("opt_state/0/mu/w", "opt_state", "0/mu/w", "optimizer", (64, 64), 4),
        Leaf("batch/x", "batch", "x", "batch", (16, 64), 4),
    ]
    space = Space(leaves, {"data": 8})
    choice = space.replicated(("data",))
    assert "offload" not in dict(space.moves(choice))  # off unless the search allows it
    space.offload_ok = True
    ((moved, words),) = dict(space.moves(choice))["offload"]
    assert moved.offload and words == OFFLOAD_WORDS
    assert space.host_paths(moved) == ("opt_state/0/mu/w",)
    assert space.host_bytes(moved) == 64 * 64 * 4 and space.host_bytes(choice) == 0
    assert space.argument_bytes(choice) - space.argument_bytes(moved) == 64 * 64 * 4
