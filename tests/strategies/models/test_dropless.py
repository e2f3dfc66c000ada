"""The dropless MoE layer (``moe="dropless"``, MaxText's sparse_matmul): every pick through
grouped matmuls, equal to the capacity layer when that drops nothing, on one device and
under every strategy that splits experts, tokens or the MLP dim; on TPU megablox's kernels,
whose flops are the model's and nothing else."""

from __future__ import annotations

import importlib.util
import sys

import jax
import numpy as np
import pytest
from jax.sharding import PartitionSpec as P

import shardviz as sv
from shardviz.errors import ShardvizError
from shardviz.strategies.models import activation_constrainer, make_mesh
from shardviz.strategies.models.dropless import dropless_experts, grouped_matmul
from shardviz.strategies.models.flops import training_flops
from shardviz.strategies.models.fp8 import fp8_ragged_dot
from shardviz.strategies.rules.logical import STRATEGY_RULES, LogicalRules
from shardviz.strategies.zoo import get_model, init_train_state

from .small import compiled, small
from .test_sharded import sharded_adam_step

NAME = "mixtral-8x7b"
needs_tpu = pytest.mark.skipif(
    importlib.util.find_spec("tokamax") is None or importlib.util.find_spec("libtpu") is None,
    reason="needs the shardviz[tpu] extra",
)


def _loss_and_grads(model, params, batch):
    return compiled(jax.value_and_grad(model.loss), params, batch)(params, batch)


def _close(got, want, atol: float) -> None:
    for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=atol)


@pytest.fixture(scope="module")
def one_device():
    """The reduced Mixtral, dropless, its state and its loss and gradients on one device."""
    model = get_model(NAME, **small(NAME, moe="dropless"))
    params, _, batch = init_train_state(model, jax.random.key(0))
    return model, params, batch, _loss_and_grads(model, params, batch)


@pytest.mark.parametrize("name", [NAME, "deepseek3-671b"])
def test_dropless_is_the_capacity_layer_when_that_drops_nothing(name: str) -> None:
    """At capacity factor experts / top-k every pick has a slot: the two layers compute the
    same thing (DeepSeek's: sigmoid scores, the choosing bias, the shared expert too)."""
    sizes = small(name)
    sizes["capacity_factor"] = sizes["experts"] / sizes["experts_per_token"]
    capacity = get_model(name, **sizes)
    dropless = get_model(name, **(sizes | {"moe": "dropless"}))
    params, _, batch = init_train_state(capacity, jax.random.key(0))
    want_loss, want = _loss_and_grads(capacity, params, batch)
    loss, grads = _loss_and_grads(dropless, params, batch)
    np.testing.assert_allclose(float(loss), float(want_loss), rtol=1e-6)
    _close(grads, want, atol=1e-7)
    assert "dropless" in dropless.description and "dropless" not in capacity.description


def test_dropless_differs_where_the_capacity_layer_drops() -> None:
    """At capacity factor 1 some picks find their expert full: the capacity layer drops
    them, the dropless one does not (the comparison above is not of two equal programs)."""
    sizes = small(NAME, capacity_factor=1.0)
    params, _, batch = init_train_state(get_model(NAME, **sizes), jax.random.key(0))
    capped = float(get_model(NAME, **sizes).loss(params, batch))
    dropless = float(get_model(NAME, **(sizes | {"moe": "dropless"})).loss(params, batch))
    assert abs(capped - dropless) > 1e-4


@pytest.mark.parametrize("strategy", ["fsdp", "fsdp+tp", "ep", "sp"])
def test_sharded_dropless_agrees_with_one_device(one_device, strategy: str) -> None:
    """FSDP (weights gathered at the shard map's edge), tensor parallel (each device's part
    of the hidden dim, summed), expert parallel (the expert group's tokens gathered, each
    device's experts computed, summed back) and sequence parallel: the one-device step."""
    model, params, batch, (want_loss, want_grads) = one_device
    _, loss, grads = sharded_adam_step(model, strategy, params, batch)
    np.testing.assert_allclose(float(loss), float(want_loss), rtol=1e-5)
    _close(grads, want_grads, atol=1e-6)


def _layer_inputs(experts: int = 4, top_k: int = 2, d: int = 16, f: int = 32):
    keys = jax.random.split(jax.random.key(3), 5)
    x = jax.random.normal(keys[0], (8, 4, d))
    picks = jax.random.randint(keys[1], (8, 4, top_k), 0, experts)
    gates = jax.random.uniform(keys[2], (8, 4, top_k))
    p = {
        "w_gate": jax.random.normal(keys[3], (experts, d, f)) / 4,
        "w_up": jax.random.normal(keys[4], (experts, d, f)) / 4,
        "w_down": jax.random.normal(keys[3], (experts, f, d)) / 6,
    }
    return p, x, picks, gates


def test_each_pick_is_its_expert_by_hand() -> None:
    """Against a loop over tokens and picks: each pick's expert MLP, weighted by its gate
    (repeated picks of one expert included)."""
    p, x, picks, gates = _layer_inputs()
    got = dropless_experts(p, x, picks, gates, activation="silu", constrain=lambda n, a: a)
    want = np.zeros(x.shape, np.float32)
    for b in range(x.shape[0]):
        for s in range(x.shape[1]):
            for j in range(picks.shape[-1]):
                e = int(picks[b, s, j])
                h = jax.nn.silu(x[b, s] @ p["w_gate"][e]) * (x[b, s] @ p["w_up"][e])
                want[b, s] += float(gates[b, s, j]) * np.asarray(h @ p["w_down"][e])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)


def test_tokens_split_over_part_of_the_expert_axes_are_refused() -> None:
    """Experts over 'expert' and the tokens' sequence over it too: no gather of the expert
    group's tokens would be right, so it is refused, saying what to split."""
    base = STRATEGY_RULES["ep"]
    acts = tuple((n, ("expert",) if n == "sequence" else ("fsdp",) if n == "batch" else a)
                 for n, a in base.activations)  # fmt: skip
    rules = LogicalRules("ep-seq", base.mesh_axes, base.params, acts)
    mesh = make_mesh("ep")
    p, x, picks, gates = _layer_inputs()
    constrain = activation_constrainer(rules, mesh)
    with pytest.raises(ShardvizError, match="split the tokens' batch over all the expert axes"):
        jax.eval_shape(
            lambda *a: dropless_experts(*a, activation="silu", constrain=constrain),
            p, x, picks, gates,
        )  # fmt: skip


def test_a_bad_moe_option_says_what_to_use() -> None:
    with pytest.raises(ShardvizError, match="moe='sorted' is not a way"):
        get_model(NAME, **small(NAME, moe="sorted"))


@pytest.mark.parametrize("strategy", ["fsdp", "ep"])
def test_fp8_dropless_trains_close_to_bf16_and_shards_like_one_device(strategy: str) -> None:
    """fp8_full with dropless experts (the Qwen3 and DeepSeek-V3 fp8 recipes): the grouped
    matmuls in fp8 (:func:`.fp8.fp8_ragged_dot` off TPU), the loss within 2% of bf16's, and
    the sharded step's loss and gradients those of one device in fp8."""
    sizes = small(NAME, moe="dropless", compute_dtype="bfloat16")
    wide = get_model(NAME, **sizes)
    fp8 = get_model(NAME, **(sizes | {"quantization": "fp8"}))
    params, _, batch = init_train_state(fp8, jax.random.key(0))
    want_loss, want_grads = _loss_and_grads(fp8, params, batch)
    assert float(want_loss) == pytest.approx(float(wide.loss(params, batch)), rel=0.02)
    _, loss, grads = sharded_adam_step(fp8, strategy, params, batch)
    np.testing.assert_allclose(float(loss), float(want_loss), rtol=2e-2)
    for a, b in zip(jax.tree.leaves(grads), jax.tree.leaves(want_grads), strict=True):
        a, b = np.ravel(np.asarray(a, np.float32)), np.ravel(np.asarray(b, np.float32))
        if np.linalg.norm(b) > 0:
            assert a @ b / (np.linalg.norm(a) * np.linalg.norm(b)) > 0.95


def test_grouped_matmul_is_ragged_dot_off_tpu() -> None:
    assert grouped_matmul("cpu") is jax.lax.ragged_dot
    assert grouped_matmul("gpu") is jax.lax.ragged_dot
    assert grouped_matmul("gpu", "fp8") is fp8_ragged_dot


def test_fp8_on_tpu_without_tokamax_says_what_to_install(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "tokamax", None)  # import tokamax raises ImportError
    with pytest.raises(ShardvizError, match=r"pip install 'shardviz\[tpu\]'"):
        grouped_matmul("tpu", "fp8")


@needs_tpu
def test_on_ironwood_fp8_dropless_runs_tokamax_at_the_fp8_peak(caplog) -> None:
    """fp8 dropless on a deviceless TPU7x: the experts are tokamax's kernels (forward, rows'
    gradient, weights' gradient; qwix's fp8 tiles), their flops each pick against its own
    expert, as in bf16 (MaxText's formula), and every weight matmul at the fp8 peak: 6 x
    (attention weights + each token's picked experts' weights) x tokens, by hand."""
    sizes = small(NAME, attention_block=64, remat="none", compute_dtype="bfloat16",
                  d_model=128, ffn=256)  # fmt: skip
    sizes.pop("batch")
    want = training_flops(get_model(NAME, **sizes).info["config"], tokens=64, seq=64).total
    costs = {}
    for q in ("", "fp8"):
        c = sv.compare(NAME, ["fsdp"], target="tpu7x:2x2x1", batch_per_device=1,
                       moe="dropless", quantization=q, **sizes)  # fmt: skip
        costs[q] = c.results[0].report.cost
        assert costs[q].model_flops_per_device == costs[""].model_flops_per_device
    assert costs["fp8"].model_flops_per_device == pytest.approx(want, rel=1e-3)
    # tokamax's warning for each kernel it has no tuned tiles for is left out (quiet cells)
    assert not [r for r in caplog.records if "Autotuning cache miss" in r.getMessage()]
    d, f, heads, kv, hd = (sizes[k] for k in ("d_model", "ffn", "heads", "kv_heads", "head_dim"))
    experts = sizes["experts_per_token"] * 3 * d * f  # each token's picks
    # tokamax's kernels (gmm_megablox, its transpose and tgmm_megablox; renamed ragged_dot_*
    # in later versions): every expert matmul, forward and both gradients, and nothing else
    grouped = [k for k in costs["fp8"].kernels if "gmm" in k.name]
    assert len({k.name for k in grouped}) == 3 and not costs["fp8"].uncounted_kernels
    assert sum(k.flops or 0 for k in grouped) == 6 * sizes["layers"] * experts * 64
    narrow = sum(fl * op.runs for op in costs["fp8"].ops for p, fl in op.narrow_flops
                 if p == "fp8")  # fmt: skip
    attention = d * hd * (2 * heads + 2 * kv)  # q, o; k, v
    assert narrow == 6 * sizes["layers"] * (attention + experts) * 64


def test_a_deviceless_tpu_plan_runs_megablox_and_counts_the_model_flops() -> None:
    """On a deviceless v5p slice the experts are megablox's ``gmm`` (forward, rows'
    gradient) and ``tgmm`` (weights' gradient): their flops are each pick against its own
    expert, so the step's model flops are MaxText's formula, with no dispatch einsums and no
    padded slots; the capacity layer at factor 1 has the same model flops, and dispatch."""
    sizes = small(NAME, attention_block=64, remat="none", compute_dtype="bfloat16",
                  capacity_factor=1.0, d_model=128, ffn=256)  # fmt: skip
    sizes.pop("batch")
    want = training_flops(get_model(NAME, **sizes).info["config"], tokens=64, seq=64).total
    costs = {}
    for moe in ("dropless", "capacity"):
        c = sv.compare(NAME, ["fsdp"], target="v5p:2x2x2", batch_per_device=1, moe=moe, **sizes)
        costs[moe] = c.results[0].report.cost
        assert costs[moe].model_flops_per_device == pytest.approx(want, rel=1e-9)
    dropless = costs["dropless"]
    kernels = {k.name for k in dropless.kernels if k.counted}
    assert {"gmm", "tgmm"} <= kernels
    assert not dropless.uncounted_kernels
    assert not dropless.dispatch_flops_per_device and not dropless.padding_flops_per_device
    assert costs["capacity"].dispatch_flops_per_device > 0


def test_the_experts_weights_reach_the_kernels_split_over_expert_and_tensor() -> None:
    """Under fsdp+tp the grouped matmuls read each expert whole in its width and split in
    its hidden dim over 'tensor' (gathered over 'fsdp'): the shard map's in-specs."""
    mesh = make_mesh("fsdp+tp")
    constrain = activation_constrainer("fsdp+tp", mesh)
    assert constrain.spec("expert_w_in", (4, 16, 32)) == P(None, None, "tensor")
    assert constrain.spec("expert_w_out", (4, 32, 16)) == P(None, "tensor", None)
    assert constrain.spec("moe_tokens", (8, 4, 16)) == P("fsdp", None, None)
    ep = activation_constrainer("ep", make_mesh("ep"))
    assert ep.spec("expert_w_in", (4, 16, 32)) == P("expert", None, None)


def test_the_experts_weight_gradients_are_reduce_scattered_not_all_reduced() -> None:
    """FSDP splits the experts' width: the shard map takes the weights so and gathers them
    inside, so their gradients leave it reduce-scattered to that split. Gathered at the
    shard map's edge instead, every device all-reduced the whole of every expert's weight
    gradients (on DeepSeek-V3, 3 x 7 GiB a layer, kept in full: it did not fit its recipe's
    128 Ironwood chips). On the CPU devices, where the compiler keeps a small reduce-scatter
    one (a deviceless TPU all-reduces every weight gradient this small)."""
    sizes = small(NAME, moe="dropless", remat="none", d_model=128, ffn=256)
    sizes.pop("batch")
    c = sv.compare(NAME, ["fsdp"], batch_per_device=1, progress=False, **sizes)
    e, d, f = sizes["experts"], sizes["d_model"], sizes["ffn"]
    whole = {(e, d, f), (e, f, d)}
    found: dict[str, set[tuple[int, ...]]] = {}
    for col in c.results[0].report.collectives:
        shapes = {tuple(s for s in shape if s != 1) for shape in (col.in_shape, col.out_shape)}
        if shapes & whole:
            found.setdefault(col.kind, set()).update(shapes)
    assert "all-reduce" not in found, found
    assert found.get("reduce-scatter") == whole | {(e, d // 8, f), (e, f, d // 8)}, found
    assert found.get("all-gather") == found["reduce-scatter"], found


def test_a_weight_is_gathered_in_place_only_where_its_stored_split_leads_with_the_used_one() -> (
    None
):
    """The gathered axes of each dim are the stored split's minor ones: a tiled all-gather
    over them leaves each device the block the used split gives it. Where the used axes do
    not lead, the weight enters as used (the compiler reshards it at the edge)."""
    from shardviz.strategies.models.dropless import _gathers, _taken

    assert _gathers(P("expert", "fsdp"), P("expert", None, None)) == ((), ("fsdp",), ())
    assert _gathers(P(None, ("fsdp", "sequence")), P()) == ((), ("fsdp", "sequence"))
    assert _gathers(P(("fsdp", "expert")), P("expert")) is None  # 'expert' is the minor one
    assert _gathers(P("fsdp", "expert"), P("expert", None)) is None  # 'expert' on another dim
    used = P(None, None, "tensor")
    assert _taken(P(None, "fsdp", "tensor"), used) == (
        P(None, "fsdp", "tensor"),
        ((), ("fsdp",), ()),
    )
    assert _taken(None, used) == (used, ())
    assert _taken(P("tensor", "fsdp"), used) == (used, ())
