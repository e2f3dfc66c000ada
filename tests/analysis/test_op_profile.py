"""The op profile's grouping: each op's module and layer, totals equal to the prediction's,
scanned layers counted once per trip."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

import shardviz as sv
from shardviz.analysis.estimate.step import with_estimate
from shardviz.analysis.op_profile import LAYER_TOP, module_of, op_profile_of
from shardviz.model import OpWork
from shardviz.model.op_profile import MODULES, OTHER, MeasuredOp

D, H, V, T = 16, 32, 24, 8


def _params(layers: int) -> dict:
    k = jax.random.split(jax.random.key(0), 4)
    return {
        "embed": jax.random.normal(k[0], (V, D)),
        "wq": jax.random.normal(k[1], (layers, D, D)),
        "w1": jax.random.normal(k[2], (layers, D, H)),
        "w2": jax.random.normal(k[3], (layers, H, D)),
    }


def attention(x, wq):
    s = jax.nn.softmax((x @ wq) @ x.T, axis=-1)
    return s @ x


def mlp(x, w1, w2):
    return jax.nn.relu(x @ w1) @ w2


def layer(x, p):
    x = x + attention(x, p["wq"])
    return x + mlp(x, p["w1"], p["w2"]), None


def loss_fn(params, tok, scan=True):
    x = params["embed"][tok]
    stack = {k: params[k] for k in ("wq", "w1", "w2")}
    if scan:
        x, _ = jax.lax.scan(layer, x, stack)
    else:
        for i in range(params["wq"].shape[0]):
            with jax.named_scope(f"layer_{i}"):
                x, _ = layer(x, {k: v[i] for k, v in stack.items()})
    logits = x @ params["embed"].T
    return -jnp.mean(jax.nn.log_softmax(logits)[jnp.arange(T), tok])


def _step(scan: bool):
    def step(params, tok):
        g = jax.grad(loss_fn)(params, tok, scan)
        with jax.named_scope("sgd"):
            return jax.tree.map(lambda p, d: p - 0.1 * d, params, g)

    return step


def _report(layers: int = 3, scan: bool = True) -> sv.Report:
    tok = jnp.arange(T) % V
    return sv.explain(_step(scan), _params(layers), tok, run=False)


@pytest.fixture(scope="module")
def scanned() -> sv.Report:
    return with_estimate(_report(3), "v5e")


def test_groups_add_up_to_the_predicted_step(scanned):
    p = sv.op_profile(scanned)
    ops = scanned.cost.ops
    assert p.seconds == pytest.approx(scanned.estimate.predicted_seconds, rel=1e-9)
    assert p.flops == pytest.approx(sum(o.flops * o.runs for o in ops))
    assert p.hbm_bytes == pytest.approx(sum(o.hbm_bytes * o.runs for o in ops))
    for groups in (p.modules, p.layers):
        assert sum(g.seconds for g in groups) == pytest.approx(p.seconds, rel=1e-9)
        assert sum(g.flops for g in groups) == pytest.approx(p.flops)
        assert sum(g.hbm_bytes for g in groups) == pytest.approx(p.hbm_bytes)
        assert sum(g.ops for g in groups) == len(p.ops)
    assert {g.name for g in p.modules} <= set(MODULES)


def test_modules_read_from_the_program(scanned):
    p = sv.op_profile(scanned)
    found = {g.name for g in p.modules}
    assert {"attention", "mlp", "embedding", "loss", "optimizer"} <= found
    # the layers' matmuls are attention's and the MLP's, the head's the loss's
    flops = {g.name: g.flops for g in p.modules}
    per_layer_mlp = 2 * T * D * H * 2 * 3  # forward + 2 backward matmuls, 2 matmuls, per layer
    assert flops["mlp"] == pytest.approx(3 * per_layer_mlp)
    assert flops["attention"] > 0 and flops["loss"] > 0
    assert flops.get(OTHER, 0.0) == 0.0
    # each op's Python functions start at the user's step, not at shardviz tracing it
    chains = {o.functions for o in scanned.cost.ops if o.functions}
    assert all(c.split(" > ")[0].endswith(".step") for c in chains), chains
    assert any(c.endswith("layer > attention") for c in chains)


def test_scanned_layers_count_every_trip():
    three, five = (_report(n) for n in (3, 5))
    loop3, loop5 = (
        next(g for g in sv.op_profile(r).layers if g.name.startswith("loop")) for r in (three, five)
    )
    assert (loop3.runs, loop5.runs) == (3, 5)
    assert loop3.flops / 3 == pytest.approx(loop5.flops / 5)
    # the same layers unrolled under named scopes: one group each, adding up to the loop's
    unrolled = sv.op_profile(_report(3, scan=False))
    named = [g for g in unrolled.layers if g.name.startswith("layer ")]
    assert [g.name for g in named] == ["layer 0", "layer 1", "layer 2"]
    assert sum(g.flops for g in named) == pytest.approx(loop3.flops)


def test_without_a_target_flops_and_bytes_only():
    p = sv.op_profile(_report(2))
    assert p.seconds is None and p.target == ""
    assert all(g.seconds is None for g in p.modules)
    assert any("no target" in n for n in p.notes)
    assert p.flops > 0


def test_module_rules():
    def op(op_name: str = "", functions: str = "") -> OpWork:
        return OpWork("x", 0.0, 0.0, op_name=op_name, functions=functions)

    assert module_of(op("jit(f)/jvp(attn)/dot_general"), True, False) == "attention"
    assert module_of(op("jit(f)/transpose(jvp(jit(log_softmax)))/exp"), False, False) == "loss"
    assert module_of(op("jit(f)/moe/router/dot_general"), True, False) == "experts"
    assert module_of(op("jit(f)/jvp()/gather"), False, False) == "embedding"
    assert module_of(op("jit(f)/jvp()/gather"), True, False) == OTHER  # a gather in a layer
    assert module_of(op("jit(f)/add", "step > scale_by_adam"), False, True) == "optimizer"
    assert module_of(op("jit(f)/add"), False, True) == "optimizer"  # after the backward pass
    assert module_of(op("jit(f)/add"), False, False) == OTHER
    assert module_of(op("jit(f)/jvp()/while/body/add", "step > loss_fn"), True, False) == OTHER
    assert module_of(op(), False, True) == OTHER
    # a lambda is no optimizer (``<lambda>`` holds "lamb"); a GShard layer is the experts'
    gshard = "step > loss_fn.<locals>.<lambda> > layer > gshard"
    assert module_of(
        op("jit(f)/jvp()/while/body/closed_call/dot_general", gshard), True, False
    ) == ("experts")
    assert module_of(op("jit(f)/neg", "step > <lambda>"), False, False) == OTHER
    adam = "step > tree_update_moment_per_elem_norm.<locals>.<lambda>"
    assert module_of(op("jit(f)/add", adam), False, False) == "optimizer"  # not a norm
    # An op named by its loop alone (a weight's cast) is what it feeds; the loop's own are not
    cast = OpWork("c", 0.0, 8.0, op_name="jit(f)/jvp()/while", functions=gshard,
                  feeds="jit(f)/jvp()/while/body/closed_call/dot_general")  # fmt: skip
    assert module_of(cast, True, False) == "experts"
    fed_attn = OpWork("c", 0.0, 8.0, op_name="jit(f)/jvp()/while", feeds="jit(f)/attn/dot")
    assert module_of(fed_attn, True, False) == "attention"
    assert module_of(op("jit(f)/jvp()/while"), True, False) == OTHER


def test_a_scanned_bodys_casts_go_to_the_module_they_feed():
    """The CPU compiler casts a scanned layer's weights (f32 master weights to bf16) in ops
    it names by the loop alone (``jit(step)/jvp()/while``): each is put with the op it feeds,
    so "other" keeps only the loop's own slicing and counting (issue 41's MoE, previewed
    for TPU v5p)."""
    from tests.fixtures import moe_models as M

    step, args, _ = M.make(M.GSHARD)
    report = sv.explain(step, *args, run=False, target="v5p:2x2x2", diagnose=False)
    ops = report.cost.ops
    loop_named = [o for o in ops if o.op_name.endswith("/while") and o.opcode == "fusion"]
    fed = [o for o in loop_named if o.feeds]
    assert len(fed) >= 0.8 * len(loop_named) > 0  # a few feed only the loop's own ops
    p = sv.op_profile(report)
    by_name = {o.name: o for o in p.ops}
    assert {by_name[o.name].module for o in fed} <= {"attention", "experts", "norm", "loss",
                                                     "mlp", "embedding"}  # fmt: skip
    other = p.module(OTHER)
    total = sum(g.hbm_bytes for g in p.modules)
    assert other is None or other.hbm_bytes < 0.1 * total  # was 27% of the bytes


def test_measured_ops_sit_beside_their_prediction(scanned):
    named = scanned.cost.ops[0].name
    measured = (MeasuredOp(named, 2e-6, 1), MeasuredOp("while.9", 5e-6, 1),
                MeasuredOp("mystery.1", 1e-6, 1))  # fmt: skip
    p = op_profile_of(scanned, scanned.target, measured)
    assert p.measured_seconds == pytest.approx(3e-6)  # the loop's own event times its ops
    assert p.unmatched == ("mystery.1", "while.9")
    by_name = {o.name: o for o in p.ops}
    assert by_name[named].measured_seconds == 2e-6
    assert by_name["mystery.1"].module == OTHER and not by_name["mystery.1"].predicted
    assert by_name["mystery.1"].layer == LAYER_TOP
    assert sum(g.measured_seconds or 0.0 for g in p.modules) == pytest.approx(3e-6)


def test_ops_without_names_say_so(scanned):
    import dataclasses

    bare = tuple(dataclasses.replace(o, op_name="", functions="") for o in scanned.cost.ops)
    old = dataclasses.replace(scanned, cost=dataclasses.replace(scanned.cost, ops=bare))
    p = sv.op_profile(old)
    assert {g.name for g in p.modules} == {OTHER}
    assert any("carry no jax names" in n for n in p.notes)
    assert not any("carry no jax names" in n for n in sv.op_profile(scanned).notes)


def test_json_round_trip(scanned):
    p = sv.op_profile(scanned)
    assert sv.OpProfile.from_json(p.to_json()) == p


def test_not_a_report_is_refused():
    with pytest.raises(sv.ShardvizError, match="not a report"):
        sv.op_profile("step")  # type: ignore[arg-type]


def test_collectives_waited_for_are_in_the_total():
    """Data parallel on 8 devices: the gradients' all-reduce is a row, its exposed seconds in
    the step and in a module, so the groups still add up to the predicted step."""
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    mesh = jax.make_mesh((8,), ("data",), axis_types=(jax.sharding.AxisType.Auto,))
    params = jax.device_put(_params(2), NamedSharding(mesh, P()))
    tok = jax.device_put(jnp.arange(T) % V, NamedSharding(mesh, P("data")))
    r = sv.explain(_step(True), params, tok, run=False, target="v5e:2x4")
    p = sv.op_profile(r)
    assert r.collectives
    names = {c.hlo_name for c in r.collectives}
    rows = [o for o in p.ops if o.name in names]
    assert len(rows) == len(names) and all(o.flops == 0 and o.seconds is not None for o in rows)
    assert p.seconds == pytest.approx(r.estimate.predicted_seconds, rel=1e-9)
    assert p.exposed_seconds == pytest.approx(r.estimate.predicted_exposed_seconds, rel=1e-9)
    assert sum(g.seconds for g in p.modules) == pytest.approx(p.seconds, rel=1e-9)
