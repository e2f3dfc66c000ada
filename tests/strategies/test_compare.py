"""compare(): each strategy's real step on 8 devices, checked against hand arithmetic."""

import jax
import jax.numpy as jnp
import pytest

import shardviz as sv
from shardviz.model import Comparison
from shardviz.strategies import RuleSet, model_state_bytes
from shardviz.strategies.zoo import ModelDef

F32 = 4
D, H, B = 128, 512, 64  # the zoo MLP's defaults
N_PARAMS = D * H + H + H * D + D  # 131,712
PARAM_BYTES = N_PARAMS * F32  # 526,848
ADAM = 2 * PARAM_BYTES + 4  # mu, nu and the int32 step count


@pytest.fixture(scope="module")
def mlp_cmp() -> Comparison:
    return sv.compare("mlp", ["dp", "zero1", "zero2", "zero3", "tp", "2d"], steps=2)


def test_the_loss_check_and_the_one_device_check_follow_one_rule():
    # A Llama computing in bfloat16 over float32 weights: the loss agreed within rtol 1e-4
    # while report.check said MISMATCH (Adam's first update, lr each way, flips with the sign
    # of a near-zero gradient: 2e-3 over float32's 1e-3). Both now judge each output by the
    # dtype it was computed in.
    dims = {"layers": 1, "d_model": 64, "heads": 2, "kv_heads": 1, "head_dim": 32,
            "ffn": 128, "vocab": 256, "seq": 32, "batch": 8}  # fmt: skip
    (r,) = sv.compare("llama3.1-8b", ["fsdp"], steps=1, **dims).results
    check = r.report.check
    assert check is not None and check.matches and r.loss_matches
    assert check.tolerance_rule.startswith("float32 computed in bfloat16: 0.02")
    assert abs(r.loss - r.reference_loss) <= 2e-2 * max(1.0, abs(r.reference_loss))


def _args(r):
    return r.report.memory.argument_bytes


def test_argument_bytes_are_hand_computed(mlp_cmp):
    batch_dp = 2 * (B // 8) * D * F32  # x, y split 8 ways
    dp, z1, z2, z3 = (mlp_cmp.result(s) for s in ("dp", "zero1", "zero2", "zero3"))
    assert _args(dp) == PARAM_BYTES + ADAM + batch_dp
    assert _args(z1) == PARAM_BYTES + (2 * PARAM_BYTES // 8 + 4) + batch_dp
    assert _args(z2) == _args(z1)  # gradients are not arguments: ZeRO-2 saves temp, not args
    assert _args(z3) == PARAM_BYTES // 8 + (2 * PARAM_BYTES // 8 + 4) + batch_dp
    tp = mlp_cmp.result("tp")  # 2 x 4: hidden dim split 4 ways, b2 replicated, batch 2 ways
    tp_params = (D * H // 4 + H // 4 + H * D // 4 + D) * F32
    assert _args(tp) == tp_params + 2 * tp_params + 4 + 2 * (B // 2) * D * F32
    for r in mlp_cmp.results:
        assert r.memory.reconciled, r.strategy
        assert r.memory.params + r.memory.optimizer + r.memory.batch == _args(r)


def test_ledgers_show_what_each_strategy_implies(mlp_cmp):
    def kinds(s, axis):
        return {c.kind for c in mlp_cmp.result(s).collectives if axis in c.axes}

    assert kinds("dp", "data") == {"all-reduce"}
    assert "all-gather" in kinds("zero1", "data")  # updated parameters gathered
    z3 = mlp_cmp.result("zero3")
    assert "all-gather" in kinds("zero3", "data")
    assert kinds("zero3", "data") & {"reduce-scatter", "all-reduce"}
    assert z3.memory.grads == PARAM_BYTES // 8  # each device keeps 1/N of the gradients
    assert mlp_cmp.result("dp").memory.grads == PARAM_BYTES
    if "reduce-scatter" not in kinds("zero3", "data"):  # the compiler's form is explained
        assert any("reduce-scatter" in n and "all-reduce" in n for n in z3.notes)
    assert kinds("tp", "model") == {"all-reduce"}
    tp_model = [c for c in mlp_cmp.result("tp").collectives if c.axes == ("model",)]
    assert tp_model[0].count == 1  # one all-reduce per block (forward; the MLP has one block)


def test_losses_match_the_single_device_run(mlp_cmp):
    for r in mlp_cmp.results:
        assert r.loss_matches, (r.strategy, r.loss, r.reference_loss)
        assert r.report.check is not None and r.report.check.matches, r.strategy
        assert r.step_seconds and r.step_seconds > 0


@pytest.mark.parametrize(("strategy", "stage", "dp", "tp"),
                         [("dp", 0, 8, 1), ("zero1", 1, 8, 1), ("zero3", 3, 8, 1),
                          ("tp", 0, 2, 4)])  # fmt: skip
def test_projection_agrees_with_the_compiler(mlp_cmp, strategy, stage, dp, tp):
    r = mlp_cmp.result(strategy)
    proj = model_state_bytes(N_PARAMS, zero_stage=stage, data_parallel=dp, tensor_parallel=tp,
                             param_bytes=4, grad_bytes=4, optimizer_bytes=8)  # fmt: skip
    compiled = r.memory.params + r.memory.optimizer
    assert abs(proj.params + proj.optimizer - compiled) <= 0.01 * compiled


def test_expert_parallel_dispatches_with_all_to_all():
    c = sv.compare("moe", ["ep"], steps=1)
    ep = c.result("ep")
    assert ep.mesh.axis_names == ("data", "expert")
    assert any(s.kind == "all-to-all" and s.axes == ("expert",) for s in ep.collectives)
    assert ep.loss_matches


def test_sequence_parallel_splits_the_residual_stream():
    c = sv.compare("transformer", ["tp", "sp"], steps=1, layers=1)
    tp, sp = c.result("tp"), c.result("sp")
    gathers = [s for s in sp.collectives if s.kind == "all-gather" and s.axes == ("model",)]
    assert gathers, sp.collectives  # the sequence is gathered before attention and the MLP
    assert not any(s.kind == "all-gather" and s.axes == ("model",) for s in tp.collectives)
    assert sp.loss_matches and tp.loss_matches
    assert Comparison.from_json(c.to_json()) == c


def _tiny_model():
    params = {"enc": {"w": jnp.ones((16, 32)) * 0.1}, "dec": {"w": jnp.ones((32, 16)) * 0.1}}
    batch = {"x": jnp.ones((8, 16))}

    def loss(p, b):
        return jnp.mean((b["x"] @ p["enc"]["w"] @ p["dec"]["w"] - b["x"]) ** 2)

    return ModelDef.custom("tiny", params, loss, batch)


def test_users_own_rule_set_on_their_own_model():
    mine = RuleSet("mine", "encoder split", params=((r"enc/w", ("data", None)),))
    c = sv.compare(_tiny_model(), [mine, "dp"], steps=1)
    r = c.result("mine")
    assert r.title == "encoder split" and r.loss_matches
    by = {lb.path: lb.bytes for lb in r.report.memory.by_leaf}
    assert by["params/enc/w"] == 16 * 32 * F32 // 8 and by["params/dec/w"] == 32 * 16 * F32


def test_rule_that_matches_nothing_is_named():
    bad = RuleSet("bad", "typo", params=((r"encoder/w", ("data", None)),))
    with pytest.raises(sv.SpecError) as err:
        sv.compare(_tiny_model(), [bad])
    assert "'encoder/w'" in str(err.value) and "enc/w" in str(err.value)


def test_spec_that_does_not_fit_names_the_leaf():
    bad = RuleSet("bad", "too many dims", params=((r"dec/w", ("data", None, None)),))
    with pytest.raises(sv.SpecError) as err:
        sv.compare(_tiny_model(), [bad])
    assert "dec/w" in str(err.value) and "rank 2" in str(err.value)
    uneven = RuleSet("odd", "uneven", params=((r"dec/w", (None, "data")),), batch=())
    model = ModelDef.custom("odd", {"dec": {"w": jnp.ones((32, 12))}},
                         lambda p, b: jnp.sum(p["dec"]["w"]) * b["s"], {"s": jnp.ones(())})  # fmt: skip
    with pytest.raises(sv.SpecError, match="dec/w"):
        sv.compare(model, [uneven])


def test_unknown_strategy_and_missing_axis():
    with pytest.raises(sv.ShardvizError, match="'dpp'"):
        sv.compare("mlp", ["dpp"])
    mesh = sv.Mesh(range(8), (8,), ("data",))
    with pytest.raises(sv.ShardvizError, match="'model'"):
        sv.compare("mlp", ["tp"], mesh=mesh)


def test_built_in_names_alias():
    assert sv.strategies.get_rule_set("fsdp") is sv.strategies.get_rule_set("zero3")
    assert jax.device_count() == 8


def test_each_strategy_compiles_once_and_runs_what_it_compiled(monkeypatch):
    """compare compiles from shapes (with the state and reference made on another thread),
    then runs with the real arrays: the run reuses the compiled program, never a second one."""
    from shardviz.explainer import explain as explain_mod

    sv.clear_cache()
    calls = []
    real = explain_mod.lower_and_compile

    def counting(jitted, args, kwargs, name, **options):
        calls.append(name)
        return real(jitted, args, kwargs, name, **options)

    monkeypatch.setattr(explain_mod, "lower_and_compile", counting)
    cmp = sv.compare("mlp", ["dp", "tp"], steps=1)
    assert sorted(calls) == ["train_step[mlp, dp]", "train_step[mlp, tp]"]
    for r in cmp.results:
        assert r.report.ran and r.loss_matches, r.strategy
        assert r.report.check is not None and r.report.check.matches


def test_a_step_that_fails_to_trace_fails_the_comparison():
    """The error of the compiling thread comes out as itself, while the helper thread (state,
    reference) is left to finish on its own."""

    traced = []

    def loss(p, b):  # passes ModelDef.custom's own check, then breaks
        traced.append(1)
        if len(traced) > 1:
            raise ValueError("broken loss")
        return jnp.sum(b["x"] @ p["w"])

    model = ModelDef.custom("broken", {"w": jnp.ones((16, 16))}, loss, {"x": jnp.ones((8, 16))})
    with pytest.raises(sv.CompileError, match="broken"):
        sv.compare(model, ["dp"])
