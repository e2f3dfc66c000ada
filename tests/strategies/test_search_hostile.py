"""``suggest`` under hostile arguments and small budgets: every bad argument is refused with a
ShardvizError naming it and the fix, a budget smaller than one compile says so, a plan's how
stays one readable line however many leaves it names, and Ctrl-C goes through (issue 38).

Small programs and budgets of a fraction of a second: a compile is always longer, so the
outcome (one plan, the note) does not depend on the machine's speed."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from shardviz.capture.mesh import Mesh
from shardviz.errors import ArgumentError
from shardviz.model.search import Plan, Search, short_how, summarised
from shardviz.render.search.html import search_html
from shardviz.render.search.text import search_text
from shardviz.strategies.rules import RuleSet
from shardviz.strategies.rules.plans import param_and_optimizer_specs, rule_set_of
from shardviz.strategies.search.inputs import SearchInputs
from shardviz.strategies.search.suggestions import memory_bytes, suggest

F32 = jnp.float32
#: A budget every compile outlasts: the search compiles its first plan and stops.
TINY = 0.001


def _mlp(params, batch):
    h = jnp.tanh(batch @ params["w1"])
    return jnp.mean(h @ params["w2"])


PARAMS = {
    "w1": jax.ShapeDtypeStruct((16, 32), F32),
    "w2": jax.ShapeDtypeStruct((32, 8), F32),
}
BATCH = jax.ShapeDtypeStruct((16, 16), F32)


def _many(params, batch):
    return sum(jnp.sum(batch * p) for p in params.values())


#: Many leaves of one shape: one group, whose name lists every leaf.
MANY = {f"k{i}": jax.ShapeDtypeStruct((64,), F32) for i in range(60)}
MANY_BATCH = jax.ShapeDtypeStruct((16, 64), F32)


@pytest.fixture(scope="module")
def mesh_2x4() -> Mesh:
    return Mesh(jax.devices(), (2, 4), ("data", "model"))


class Recorder:
    """A progress reporter that keeps what it was told."""

    def __init__(self) -> None:
        self.updates: list[str] = []
        self.finished: list[str] = []

    def update(self, tried: int, elapsed: float, budget: float, best: str) -> None:
        self.updates.append(best)

    def finish(self, words: str) -> None:
        self.finished.append(words)


# --- limits and budgets --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kw", "name"),
    [
        ({"memory_limit": float("inf")}, "memory_limit=inf"),
        ({"memory_limit": "1e400 GiB"}, "memory_limit='1e400 GiB'"),
        ({"memory_limit": float("nan")}, "memory_limit=nan"),
        ({"memory_limit": 2**70}, "memory_limit="),
        ({"host_memory_limit": float("inf")}, "host_memory_limit=inf"),
        ({"budget_s": float("nan")}, "budget_s=nan"),
        ({"budget_s": float("inf")}, "budget_s=inf"),
        ({"budget_s": -1}, "budget_s=-1"),
        ({"budget_s": "60"}, "budget_s='60'"),
        ({"budget_s": True}, "budget_s=True"),
    ],
)
def test_a_limit_or_budget_that_is_no_number_is_refused_naming_it(kw, name) -> None:
    with pytest.raises(ArgumentError, match=rf"{name}.*Fix: "):
        suggest(_mlp, PARAMS, BATCH, progress=False, **kw)


def test_memory_bytes_keeps_its_name_and_the_shared_rule() -> None:
    assert memory_bytes("2 GiB") == 2 * 2**30
    assert memory_bytes(np.int64(4096), "host_memory_limit") == 4096
    with pytest.raises(ArgumentError, match="host_memory_limit=inf"):
        memory_bytes(float("inf"), "host_memory_limit")


def test_numpy_numbers_are_taken_where_python_ones_are(mesh_2x4) -> None:
    search = suggest(
        _mlp, PARAMS, BATCH, mesh=mesh_2x4, budget_s=np.float32(TINY),
        memory_limit=np.int64(2**30), mesh_shapes=[(np.int64(4), np.int64(2))], progress=False,
    )  # fmt: skip
    assert search.tried == 1 and search.memory_limit == 2**30


# --- a budget smaller than the work --------------------------------------------------------


def test_a_budget_shorter_than_one_compile_gives_one_plan_and_says_why(mesh_2x4) -> None:
    seen = Recorder()
    search = suggest(_mlp, PARAMS, BATCH, mesh=mesh_2x4, budget_s=TINY, progress=seen)
    assert search.tried == 1 and search.best is not None
    assert search.budget_ran_out and search.stopped == "budget"
    note = next(n for n in search.notes if "one compile took" in n)
    assert "longer than the whole budget" in note and "give budget_s=" in note
    assert "past the whole budget" in seen.updates[0]
    assert len(seen.finished) == 1 and "longer than the whole budget" in seen.finished[0]


def test_other_mesh_shapes_wait_for_a_budget_that_has_time_for_them(mesh_2x4) -> None:
    search = suggest(
        _mlp, PARAMS, BATCH, mesh=mesh_2x4, budget_s=TINY, mesh_shapes=True, progress=False
    )
    assert search.tried == 1 and search.budget_ran_out


# --- mesh shapes ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shapes", "words"),
    [
        ([(2, 4.5)], r"mesh_shapes\[0\]\[1\]=4.5 is not a whole number"),
        ([(-2, -4)], r"mesh_shapes\[0\]\[0\]=-2 is not a whole number"),
        ([(2, 0)], r"mesh_shapes\[0\]\[1\]=0 is not a whole number"),
        ([(2, True)], r"mesh_shapes\[0\]\[1\]=True"),
        ([8], r"mesh_shapes\[0\]=8.*a mesh shape is a tuple of sizes"),
        (["2x4"], r"mesh_shapes\[0\]='2x4'"),
        ("2x4", r"mesh_shapes='2x4'.*neither True/False nor a list of mesh shapes"),
        (None, r"mesh_shapes=None.*neither True/False nor a list of mesh shapes"),
        (8, r"mesh_shapes=8.*neither True/False nor a list of mesh shapes"),
        ([(3, 3)], r"mesh_shapes=\[\(3, 3\)\].*not a shape of the mesh's 8 devices"),
    ],
)
def test_a_bad_mesh_shape_is_refused_naming_it(mesh_2x4, shapes, words) -> None:
    with pytest.raises(ArgumentError, match=rf"{words}.*Fix: "):
        suggest(_mlp, PARAMS, BATCH, mesh=mesh_2x4, mesh_shapes=shapes, progress=False)


# --- nothing to place ----------------------------------------------------------------------


@pytest.mark.parametrize("args", [("hello",), (None,), ({},), (), (jnp.float32(3.0),)])
def test_arguments_without_arrays_are_refused(args) -> None:
    with pytest.raises(ArgumentError, match=r"no arrays to place.*Fix: pass the function's"):
        suggest(lambda *a: a, *args, budget_s=TINY, progress=False)


# --- a plan's how --------------------------------------------------------------------------


def test_long_lists_in_a_how_are_summarised_once() -> None:
    names = ",".join(f"k{i}" for i in range(1000))
    how = f"structure: 'model' on {{{names}}} dim 0; batch over 'data'"
    short = short_how(how)
    assert short == "structure: 'model' on {k0,k1,k2 and 997 more} dim 0; batch over 'data'"
    assert short_how(short) == short
    dims = ", ".join(f"l{i}/w dim 0" for i in range(500))
    short = short_how(f"from #2: 'model' on {dims}; optimizer state offloaded")
    assert short == "from #2: 'model' on l0/w dim 0, l1/w dim 0, l2/w dim 0 and 497 more; " + (
        "optimizer state offloaded"
    )
    assert short_how("strategy 'tp' (data='data', model='model')") == (
        "strategy 'tp' (data='data', model='model')"
    )
    assert len(short_how("x" * 5000)) <= 160
    assert summarised(["a", "b", "c", "d"]) == "a, b, c, d"


@pytest.fixture(scope="module")
def many(mesh_2x4):
    return suggest(_many, MANY, MANY_BATCH, mesh=mesh_2x4, budget_s=TINY, progress=False)


def test_a_plan_over_many_leaves_says_how_in_one_short_line(many) -> None:
    (plan,) = many.plans
    assert "more" in plan.how and len(plan.how) <= 200
    assert len(plan.rules.description) <= 200
    text = search_text(many)
    how_lines = [ln for ln in text.splitlines() if ln.lstrip().startswith("1 ")]
    assert how_lines and max(len(ln) for ln in how_lines) <= 300
    assert all(len(n) <= 600 for n in many.notes)


def test_every_view_summarises_a_hand_built_long_how() -> None:
    names = ",".join(f"k{i}" for i in range(1000))
    long = Plan(
        label="#1", how=f"'model' on {{{names}}} dim 0", specs={}, report=None,
        peak_bytes=10, moved_bytes=0, host_bytes=64,
    )  # fmt: skip
    search = Search(function="f", mesh=None, plans=(long,), ranking="r")
    for view in (search_text(search), search_html(search)):
        assert "k999" not in view and "and 997 more" in view


# --- rule sets -----------------------------------------------------------------------------


@pytest.mark.parametrize("host", [None, 3, "optimizer", ["grads"], [None]])
def test_a_rule_sets_host_must_name_trees_that_live_in_host_memory(host) -> None:
    with pytest.raises(ArgumentError, match=r"host=.*'params', 'optimizer'.*Fix: pass host="):
        RuleSet("x", "x", host=host)


@pytest.mark.parametrize(
    ("host", "kept"),
    [
        (["optimizer"], ("optimizer",)),
        ({"optimizer", "params"}, ("params", "optimizer")),
        (iter(["params"]), ("params",)),
        ((), ()),
    ],
)
def test_any_iterable_of_tree_names_is_kept_as_a_tuple(host, kept) -> None:
    rules = RuleSet("x", "x", host=host)
    assert rules.host == kept
    assert hash(rules) == hash(RuleSet("x", "x", host=kept))


def test_a_rule_set_of_many_leaves_is_built_in_one_pass() -> None:
    # The same rules the per-leaf search gave (one per place, each catching only its own).
    specs = {f"params/l{i}/w": (("model",),) for i in range(300)}
    specs |= {f"opt_state/0/mu/l{i}/w": (("model",),) for i in range(300)}
    specs["params/l0/b"] = ((),)
    rules = rule_set_of(specs, ("model",))
    assert len(rules.params) == 300 and rules.params[0] == ("^l0/w$", ("model",))
    params, optimizer = param_and_optimizer_specs(specs)
    assert optimizer["l7/w"] == (("model",),) and optimizer["l0/b"] == ((),)


# --- Ctrl-C --------------------------------------------------------------------------------


def test_ctrl_c_during_a_compile_goes_through_and_ends_the_progress(monkeypatch, mesh_2x4):
    calls = []
    real = SearchInputs.compile

    def interrupted(self, *a, **k):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(self, *a, **k)

    monkeypatch.setattr(SearchInputs, "compile", interrupted)
    seen = Recorder()
    with pytest.raises(KeyboardInterrupt):
        suggest(_mlp, PARAMS, BATCH, mesh=mesh_2x4, budget_s=60, progress=seen)
    assert len(calls) == 2
    assert seen.finished == ["interrupted after 1 plan compiled"]


def test_a_failure_ends_the_progress_too(monkeypatch, mesh_2x4):
    def broken(self, *a, **k):
        raise RuntimeError("boom")

    monkeypatch.setattr(SearchInputs, "compile", broken)
    seen = Recorder()
    with pytest.raises(RuntimeError, match="boom"):
        suggest(_mlp, PARAMS, BATCH, mesh=mesh_2x4, budget_s=60, progress=seen)
    assert seen.finished == ["stopped by an error after 0 plans compiled"]
