"""``suggest`` on a real train state: roles are read by leaf path inside any state object
(a dict, a dataclass such as Flax's ``TrainState``, a namedtuple), so ``step(state, batch)``
searches the same plans as ``step(params, opt_state, batch)``; and arguments that come
placed are plan #1, "your placement", ranked with the others."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz as sv
from shardviz.model.roles import leaf_role, role_parts, searched_role
from shardviz.strategies.search.suggestions import YOUR_PLACEMENT

MESH = jax.sharding.Mesh(np.array(jax.devices()[:8]).reshape(2, 4), ("data", "model"))
OPT = optax.adam(1e-3)
S = jax.ShapeDtypeStruct
PARAMS = {"w1": S((64, 256), jnp.float32), "w2": S((256, 64), jnp.float32)}
OPT_STATE = jax.eval_shape(OPT.init, PARAMS)
BATCH = {"x": S((32, 64), jnp.float32), "y": S((32, 64), jnp.float32)}
PLANS = 4


def _loss(params: Any, batch: Any) -> Any:
    h = jnp.tanh(batch["x"] @ params["w1"])
    return jnp.mean((h @ params["w2"] - batch["y"]) ** 2)


def step(params: Any, opt_state: Any, batch: Any) -> tuple:
    value, grads = jax.value_and_grad(_loss)(params, batch)
    updates, opt_state = OPT.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, value


def dict_step(state: dict, batch: Any) -> tuple:
    params, opt_state, value = step(state["params"], state["opt_state"], batch)
    return {"params": params, "opt_state": opt_state}, value


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class TrainState:
    """Flax's ``TrainState`` in shape: a step count, the parameters, the optimizer state, and
    the apply function as static metadata."""

    step: Any
    params: Any
    opt_state: Any
    apply_fn: Callable = dataclasses.field(metadata={"static": True}, default=_loss)


class TupleState(NamedTuple):
    step: Any
    params: Any
    opt_state: Any


def state_step(state: Any, batch: Any) -> tuple:
    params, opt_state, value = step(state.params, state.opt_state, batch)
    return state._replace(step=state.step + 1, params=params, opt_state=opt_state) if isinstance(
        state, TupleState
    ) else dataclasses.replace(
        state, step=state.step + 1, params=params, opt_state=opt_state
    ), value


def _search(fn: Any, *args: Any) -> sv.SuggestedSearch:
    return sv.suggest(fn, *args, mesh=MESH, max_plans=PLANS, budget_s=600, progress=False)


def _plans(search: sv.SuggestedSearch) -> list[tuple]:
    """Each plan's label, how, bytes moved and specs, its paths with the state object's
    prefix taken off (``state/params/w1`` -> ``params/w1``)."""
    return [
        (
            p.label,
            p.how,
            p.moved_bytes,
            sorted((path.removeprefix("state/"), spec) for path, spec in p.specs.items()),
        )
        for p in search.plans
    ]


def test_roles_are_read_by_leaf_path_inside_a_state_object() -> None:
    assert role_parts("params/w1") == ("params", "params", "w1")
    assert role_parts("opt_state/0/mu/w1") == ("optimizer", "opt_state", "0/mu/w1")
    assert role_parts("state/params/w1") == ("params", "state/params", "w1")
    assert role_parts("state/opt_state/0/nu/w1") == ("optimizer", "state/opt_state", "0/nu/w1")
    assert role_parts("train/optimizer/0/count")[0] == "optimizer"
    assert leaf_role("state/step") == "batch"
    # Inside data, a field beginning with "opt" is still data.
    assert leaf_role("batch/optical_flow") == "batch"
    assert leaf_role("batch/options") == "batch"
    roles = {"state/params": "params", "state/opt_state": "optimizer", "w": "params"}
    assert searched_role("state/params/w1", roles) == ("params", "w1")
    assert searched_role("w", roles) == ("params", "w")
    assert searched_role("batch/x", roles) == ("batch", "x")


def test_the_same_step_with_a_state_dict_gives_the_same_plans() -> None:
    plain = _search(step, PARAMS, OPT_STATE, BATCH)
    stated = _search(dict_step, {"params": PARAMS, "opt_state": OPT_STATE}, BATCH)
    assert all(p.compiled for p in stated.plans)
    assert _plans(stated) == _plans(plain)
    assert stated.roles == {
        "state/opt_state": "optimizer",
        "state/params": "params",
        "batch": "batch",
    }
    # The best plan's table lists the parameters and the data, not the optimizer state.
    text = str(stated)
    assert "state/params/w1" in text and "state/opt_state/0/mu/w1" not in text


def test_a_train_state_dataclass_and_a_namedtuple_are_read_by_field() -> None:
    plain = _plans(_search(step, PARAMS, OPT_STATE, BATCH))
    count = S((), jnp.int32)
    for state in (TrainState(count, PARAMS, OPT_STATE), TupleState(count, PARAMS, OPT_STATE)):
        search = _search(state_step, state, BATCH)
        # The step count is neither a parameter nor data: kept as given, never searched.
        assert all("state/step" not in p.specs for p in search.plans)
        assert _plans(search) == plain
        assert search.roles is not None and search.roles["state/params"] == "params"


def _placed(tree: Any, spec: P) -> Any:
    return jax.tree.map(lambda x: S(x.shape, x.dtype, sharding=NamedSharding(MESH, spec)), tree)


def test_the_arguments_placement_is_plan_1_ranked_with_the_others() -> None:
    params = {
        "w1": S((64, 256), jnp.float32, sharding=NamedSharding(MESH, P(None, "model"))),
        "w2": S((256, 64), jnp.float32, sharding=NamedSharding(MESH, P("model", None))),
    }
    state = {"params": params, "opt_state": _placed(OPT_STATE, P())}
    search = _search(dict_step, state, _placed(BATCH, P("data")))
    first = search.plan("#1")
    assert first.how == YOUR_PLACEMENT and first.compiled
    assert first.specs["state/params/w1"] == ((), ("model",))
    assert first.specs["state/params/w2"] == (("model",), ())
    assert first.specs["batch/x"] == (("data",), ())
    assert first.specs["state/opt_state/0/mu/w1"] == ((), ())
    assert len(search.plans) == PLANS and first in search.plans
    assert "your placement" in str(search)
    placed = search.arguments("#1")
    assert placed[0]["params"]["w1"].sharding.spec == P(None, "model")


def test_unplaced_arguments_give_no_placement_plan() -> None:
    search = _search(step, PARAMS, OPT_STATE, BATCH)
    assert all(p.how != YOUR_PLACEMENT for p in search.plans)


def test_offloading_a_state_objects_optimizer_state_moves_only_that_field() -> None:
    from shardviz.strategies.zoo import get_model, init_train_state, make_train_step

    model = get_model("mlp", d_model=128, d_hidden=512, batch=64)
    inner = make_train_step(model)
    params, opt_state, batch = init_train_state(model, jax.random.key(0))

    def stateful(state: dict, batch: Any) -> tuple:
        p, o, value = inner(state["params"], state["opt_state"], batch)
        return {"params": p, "opt_state": o}, value

    mesh = sv.Mesh(jax.devices(), (8,), ("data",))
    search = sv.suggest(
        stateful, {"params": params, "opt_state": opt_state}, batch, mesh=mesh,
        strategies=("zero3",), memory_limit="180 KiB", budget_s=4, progress=False,
    )  # fmt: skip
    best = search.best
    assert best is not None and best.on_host
    assert all(p.startswith("state/opt_state/") for p in best.on_host)
    memory = best.report.memory
    # The updated optimizer state goes back to host, the parameters stay in HBM.
    assert memory.host_output_bytes == memory.host_argument_bytes > 0


def test_a_placement_no_knob_gives_is_compiled_but_not_descended_from() -> None:
    # w1 and w3 form one group (same place, same shape): placed differently, no choice of the
    # search's knobs gives the pair, so the plan stands alone.
    def three(x: Any, params: Any) -> Any:
        h = jnp.tanh(x @ params["w1"]) * jnp.tanh(x @ params["w3"])
        return jnp.sum(h @ params["w2"])

    params = {
        "w1": S((64, 256), jnp.float32, sharding=NamedSharding(MESH, P(None, "model"))),
        "w3": S((64, 256), jnp.float32, sharding=NamedSharding(MESH, P())),
        "w2": S((256, 64), jnp.float32, sharding=NamedSharding(MESH, P())),
    }
    search = sv.suggest(
        three, S((32, 64), jnp.float32), params, mesh=MESH, max_plans=3, budget_s=600,
        progress=False,
    )  # fmt: skip
    first = search.plan("#1")
    assert first.how == YOUR_PLACEMENT and first.compiled
    assert first.specs["params/w1"] != first.specs["params/w3"]
    assert not any(p.how.startswith("from #1:") for p in search.plans)
