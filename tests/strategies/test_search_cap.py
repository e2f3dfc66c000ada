"""``suggest`` says what it did, coherently (issue 40): a cap of plans (``max_plans``) tries the
same plans on any machine; a search that says ``converged`` compiled every seed (seeds left
for later get their turn after the descent); a seed is named after a strategy only when it is
that strategy's plan (Megatron's split is ``tp``, not ZeRO-3 with its batch moved); and the
text keeps every line under 100 characters.

The MLP forward of notebook 10's section 13 on a (2, 4) mesh of fake CPU devices: its plans
compile in a fraction of a second, and nothing depends on how fast."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from shardviz.capture.mesh import Mesh
from shardviz.errors import ArgumentError
from shardviz.strategies.search import suggestions
from shardviz.strategies.search.suggestions import SuggestedSearch, suggest


def mlp(x, w1, w2):
    return jnp.tanh(x @ w1) @ w2


@pytest.fixture(scope="module")
def mesh() -> Mesh:
    return Mesh(jax.devices(), (2, 4), ("data", "model"))


def args(mesh: Mesh) -> tuple:
    """x (64, 128) placed over 'data'; w1 (128, 512) and w2 (512, 128) with no placement."""
    x = jax.ShapeDtypeStruct(
        (64, 128), jnp.float32, sharding=NamedSharding(mesh.jax_mesh, P("data", None))
    )
    return (
        x,
        jax.ShapeDtypeStruct((128, 512), jnp.float32),
        jax.ShapeDtypeStruct((512, 128), jnp.float32),
    )


def _capped(mesh: Mesh) -> SuggestedSearch:
    return suggest(mlp, *args(mesh), mesh=mesh, max_plans=6, budget_s=600, progress=False)


@pytest.fixture(scope="module")
def capped(mesh: Mesh) -> SuggestedSearch:
    return _capped(mesh)


@pytest.fixture(scope="module")
def converged(mesh: Mesh) -> SuggestedSearch:
    return suggest(mlp, *args(mesh), mesh=mesh, max_plans=200, budget_s=600, progress=False)


def test_a_cap_stops_the_search_after_that_many_plans_and_says_so(capped) -> None:
    assert capped.tried == 6 and capped.stopped == "max_plans" and not capped.budget_ran_out
    text = str(capped)
    assert "stopped: the cap of 6 plans (max_plans) was reached" in " ".join(text.split())
    assert any("give a larger max_plans" in n for n in capped.notes)


def test_a_capped_search_tries_the_same_plans_again(capped, mesh) -> None:
    again = _capped(mesh)
    assert [(p.label, p.how, p.specs) for p in again.plans] == [
        (p.label, p.how, p.specs) for p in capped.plans
    ]
    assert again.best is not None and capped.best is not None
    assert again.best.label == capped.best.label


def test_a_converged_search_compiled_every_seed(converged) -> None:
    assert converged.stopped == "converged" and converged.tried < 200
    assert not any("never compiled" in n for n in converged.notes)


def test_seeds_left_for_later_are_compiled_before_the_search_converges(mesh, monkeypatch):
    # The seeds may use none of the search once a plan fits: every one waits for the descent.
    monkeypatch.setattr(suggestions, "SEED_SHARE", 0.0)
    search = suggest(mlp, *args(mesh), mesh=mesh, budget_s=600, progress=False)
    assert search.stopped == "converged"
    assert not any("never compiled" in n or "uncompiled" in n for n in search.notes)
    seeds = [p for p in search.plans if not p.how.startswith("from #")]
    assert len(seeds) > 3  # the strategies' and the structure's, not just the first


def test_a_cap_that_leaves_seeds_says_so_with_the_cap_not_a_convergence(mesh) -> None:
    search = suggest(mlp, *args(mesh), mesh=mesh, max_plans=2, budget_s=600, progress=False)
    assert search.stopped == "max_plans" and search.tried == 2
    (note,) = [n for n in search.notes if "never compiled" in n]
    assert "the search stopped first" in note and "max_plans" in note


def test_megatrons_split_is_named_tp_not_zero3_with_its_batch_moved(converged) -> None:
    best = converged.best
    assert best is not None and best.specs["w1"] == ((), ("model",))
    assert "(as strategy 'tp' (data='data', model='model'))" in best.how
    # A strategy whose batch split gave way to the data as placed says so.
    for p in converged.plans:
        if p.how.startswith("strategy 'zero3' (data='model')"):
            assert p.how.endswith("parameters; batch as placed")


def test_every_line_of_the_text_is_under_100_characters(converged) -> None:
    lines = str(converged).splitlines()
    assert max(len(line) for line in lines) < 100
    assert any(line.startswith(" " * 40) for line in lines)  # a long how wrapped under itself


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "10"])
def test_a_cap_that_is_no_whole_number_is_refused_naming_it(mesh, bad) -> None:
    with pytest.raises(ArgumentError, match="max_plans"):
        suggest(mlp, *args(mesh), mesh=mesh, max_plans=bad, progress=False)


class _Seen:
    """A progress that keeps what it was told."""

    def __init__(self) -> None:
        self.finished: list[str] = []

    def update(self, tried: int, elapsed: float, budget: float, best: str) -> None:
        pass

    def finish(self, words: str) -> None:
        self.finished.append(words)


def test_the_progress_ends_on_one_short_line_saying_why(mesh) -> None:
    seen = _Seen()
    suggest(mlp, *args(mesh), mesh=mesh, max_plans=3, budget_s=600, progress=seen)
    (words,) = seen.finished
    assert words.startswith("3 plans in ") and "(max_plans reached); best #" in words
    assert len(f"shardviz.suggest: {words}") < 100
