"""explain() on what a framework holds: the Traced, Lowered and Compiled of a jitted step give
the same collectives, memory and cost as the function itself; a deviceless TPU Lowered
compiles; arguments that do not fit a stage, and things that are no stage, are refused by name.
"""

from __future__ import annotations

import importlib.util
import os

# libtpu (for the deviceless TPU compile below) takes a machine-wide lock unless told that
# several processes may load it.
os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz as sv
from shardviz.capture.stages import StageProgram
from shardviz.errors import ShardvizError

D, H, B = 64, 256, 32


def train_step(params, batch, lr=1e-2):
    def loss_fn(p):
        h = jnp.tanh(batch["x"] @ p["w1"])  # the first matmul
        return jnp.mean((h @ p["w2"] - batch["y"]) ** 2)

    loss, grads = jax.value_and_grad(loss_fn)(params)
    return jax.tree.map(lambda p, g: p - lr * g, params, grads), loss


def _mesh() -> Mesh:
    return Mesh(np.array(jax.devices()).reshape(2, 4), ("data", "model"))


def _args(mesh: Mesh) -> tuple:
    def put(x, *spec):
        return jax.device_put(x, NamedSharding(mesh, P(*spec)))

    k1, k2, k3 = jax.random.split(jax.random.key(0), 3)
    params = {
        "w1": put(jax.random.normal(k1, (D, H)) / 8, None, "model"),
        "w2": put(jax.random.normal(k2, (H, D)) / 16, "model", None),
    }
    batch = {"x": put(jax.random.normal(k3, (B, D)), "data"), "y": put(jnp.zeros((B, D)), "data")}
    return params, batch


@pytest.fixture(scope="module")
def args() -> tuple:
    return _args(_mesh())


@pytest.fixture(scope="module")
def reports(args) -> dict:
    jitted = jax.jit(train_step)
    traced = jitted.trace(*args)
    lowered = jitted.lower(*args)
    compiled = lowered.compile()
    return {
        "function": sv.explain(train_step, *args, run=False),
        "traced": sv.explain(traced),
        "lowered": sv.explain(lowered),
        "compiled": sv.explain(compiled),
    }


def _ledger(report) -> list[tuple]:
    return [
        (c.kind, c.axes, c.in_dtype, c.in_shape, c.out_shape, c.moved_bytes, c.group_size)
        for c in report.collectives
    ]


def _lines(report) -> list:
    return [
        (c.source.frames[-1].file, c.source.frames[-1].line) if c.source else None
        for c in report.collectives
    ]


def _memory(report) -> tuple:
    m = report.memory
    return (m.argument_bytes, m.output_bytes, m.alias_bytes, m.temp_bytes, m.peak_bytes)


def test_stages_give_the_functions_collectives_memory_and_cost(reports):
    base = reports["function"]
    assert base.collectives, "the step must have collectives to compare"
    for kind in ("traced", "lowered", "compiled"):
        r = reports[kind]
        assert not r.ran and r.timing is None, kind
        assert r.function == "train_step", kind
        assert _ledger(r) == _ledger(base), kind
        assert _memory(r) == _memory(base), kind
        assert r.cost.flops_per_device == base.cost.flops_per_device, kind
        assert r.cost.bytes_accessed_per_device == base.cost.bytes_accessed_per_device, kind
        assert r.cost.model_flops_per_device == base.cost.model_flops_per_device, kind
        assert r.mesh == base.mesh, kind
        assert r.arguments.paths == base.arguments.paths, kind
        assert [a.spec for a in r.arguments] == [a.spec for a in base.arguments], kind


def test_traced_and_lowered_keep_what_the_dumps_give(reports):
    """A Traced or Lowered is compiled here with the dumps: intermediates, the collectives'
    reasons and the global cost as from the function; the source lines are the step's."""
    base = reports["function"]
    for kind in ("traced", "lowered"):
        r = reports[kind]
        assert len(r.intermediates) == len(base.intermediates), kind
        assert r.cost.flops_global == base.cost.flops_global, kind
        assert [c.why for c in r.collectives] == [c.why for c in base.collectives], kind
        assert _lines(r) == _lines(base), kind
        assert any(
            c.source and c.source.frames[-1].function.endswith("loss_fn") for c in r.collectives
        )


def test_compiled_alone_says_what_it_lacks(reports):
    r = reports["compiled"]
    assert r.cost.flops_global is None and not r.intermediates
    assert any("explained from a jax Compiled alone" in n for n in r.notes)
    assert any("explained without its arguments" in n for n in r.notes)
    # its ledger still comes with the step's source lines
    assert _lines(r) == _lines(reports["function"])


def test_lowered_with_its_arguments_runs_and_checks_with_a_reference(args):
    lowered = jax.jit(train_step).lower(*args)
    r = sv.explain(lowered, *args, steps=1, reference=train_step)
    assert r.ran and r.timing is not None
    assert r.check is not None and r.check.matches
    bare = sv.explain(lowered, *args, steps=1)  # no function to check against: said so
    assert bare.ran and bare.check is None
    assert any("no single-device check" in n for n in bare.notes)


def test_traced_with_its_arguments_checks_through_its_jaxpr(args):
    r = sv.explain(jax.jit(train_step).trace(*args), *args, steps=1)
    assert r.ran and r.check is not None and r.check.matches


def test_compiled_with_static_and_donated_arguments_runs(args):
    """The arguments as given to lower (the static one left out), a donating program given
    fresh copies each run: the caller's arrays stay alive."""
    jitted = jax.jit(train_step, static_argnums=2, donate_argnums=0)
    compiled = jitted.lower(*args, 0.1).compile()
    r = sv.explain(compiled, *args, 0.1, steps=2)
    assert r.ran and r.memory.alias_bytes > 0
    assert not any(x.is_deleted() for x in jax.tree.leaves(args))


def test_same_stage_is_compiled_once(args):
    """Explained without its arguments, then with them: one program kept, compiled once."""
    from shardviz.explainer.cache import PROGRAMS

    lowered = jax.jit(train_step).lower(*args)
    first = sv.explain(lowered)
    again = sv.explain(lowered, *args, steps=1)
    assert again.collectives == first.collectives and again.ran
    assert sum(1 for k in PROGRAMS if k[0] == StageProgram(lowered)) == 1


def test_flax_nnx_lowered():
    nnx = pytest.importorskip("flax.nnx")
    mesh = _mesh()

    class Mlp(nnx.Module):
        def __init__(self, rngs):
            self.up = nnx.Linear(D, H, rngs=rngs)
            self.down = nnx.Linear(H, D, rngs=rngs)

        def __call__(self, x):
            return self.down(jnp.tanh(self.up(x)))

    model = Mlp(nnx.Rngs(0))

    @nnx.jit
    def forward(model, x):
        return model(x).sum()

    x = jax.device_put(jnp.ones((B, D)), NamedSharding(mesh, P("data")))
    lowered = forward.lower(model, x)
    r = sv.explain(lowered)
    assert r.function == "forward"
    assert r.collectives and r.mesh is not None
    with pytest.raises(ShardvizError, match="Flax NNX stage"):
        sv.explain(lowered, model, x)


# --- a deviceless TPU compile from a Lowered --------------------------------------------------


@pytest.mark.skipif(
    importlib.util.find_spec("libtpu") is None, reason="needs the shardviz[tpu] extra (libtpu)"
)
def test_deviceless_tpu_lowered():
    topo = sv.topology("v5e:2x2")
    mesh = Mesh(np.array(topo.devices).reshape(2, 2), ("data", "model"))

    def sds(shape, *spec):
        return jax.ShapeDtypeStruct(shape, jnp.float32, sharding=NamedSharding(mesh, P(*spec)))

    params = {"w1": sds((D, H), None, "model"), "w2": sds((H, D), "model", None)}
    batch = {"x": sds((B, D), "data"), "y": sds((B, D), "data")}
    lowered = jax.jit(train_step).lower(params, batch)
    from_fn = sv.explain(train_step, params, batch, run=False)
    r = sv.explain(lowered)
    assert r.platform == "tpu" and r.deviceless
    assert r.estimate is not None
    assert _ledger(r) == _ledger(from_fn)
    assert _memory(r) == _memory(from_fn)
    assert r.cost.flops_per_device == from_fn.cost.flops_per_device
    # its Compiled alone: the same ledger and flops; the peak is the compiler's own figure
    alone = sv.explain(lowered.compile())
    assert alone.platform == "tpu" and alone.deviceless
    assert _ledger(alone) == _ledger(from_fn)
    assert alone.cost.flops_per_device == from_fn.cost.flops_per_device
    assert alone.memory.argument_bytes == from_fn.memory.argument_bytes
    assert any("no buffer assignment" in n for n in alone.notes)


# --- what is refused ------------------------------------------------------------------------


def test_not_a_function_nor_a_stage():
    with pytest.raises(ShardvizError, match="not a function or a jax stage") as err:
        sv.explain(jnp.ones(3))
    assert "jax.jit(step).lower(*args)" in str(err.value)


def test_lowered_with_wrong_shapes_names_the_argument(args):
    lowered = jax.jit(train_step).lower(*args)
    params, batch = args
    wrong = {**batch, "x": jnp.ones((B, D + 1))}
    with pytest.raises(ShardvizError) as err:
        sv.explain(lowered, params, wrong)
    text = str(err.value)
    assert "argument 1['x']" in text and "float32[32, 65]" in text and "float32[32, 64]" in text
    assert "the Lowered of 'train_step'" in text


def test_lowered_with_wrong_arguments_count(args):
    lowered = jax.jit(train_step).lower(*args)
    with pytest.raises(ShardvizError, match="not the ones it was lowered for") as err:
        sv.explain(lowered, args[0])
    assert "params:" in str(err.value) and "batch:" in str(err.value)


def test_stage_with_jit_options_is_refused(args):
    lowered = jax.jit(train_step).lower(*args)
    with pytest.raises(ShardvizError, match="jit options"):
        sv.explain(lowered, donate_argnums=0)


def test_findings_of_a_stage_come_without_fixes_tried():
    """A Lowered's findings are found as the function's are; its fixes cannot be tried (the
    function and its shardings are compiled in) and each says so."""
    from tests.explainer.diagnose import planted

    forward, args = planted.replicated_partner_program()
    lowered = jax.jit(forward).lower(*args)
    assert sv.explain(lowered).findings.kinds == ("replicated",)
    found = sv.diagnose(lowered)
    assert found.kinds == ("replicated",)
    assert any("explain the step function itself to try fixes" in n for n in found.notes)


def test_a_traced_keeps_its_jaxpr_and_a_lowered_has_none(args):
    """The traced program reaches the compile (the remat policies' names are read from it);
    a Lowered keeps only its MLIR module in jax 0.10, so there is nothing to read."""
    from jax.ad_checkpoint import checkpoint_name

    from shardviz.capture.compile import lower_and_compile

    policy = jax.checkpoint_policies.save_and_offload_only_these_names(
        names_which_can_be_saved=[],
        names_which_can_be_offloaded=["hidden"],
        offload_src="device",
        offload_dst="pinned_host",
    )

    def loss(params, batch):
        h = checkpoint_name(jnp.tanh(batch["x"] @ params["w1"]), "hidden")
        return jnp.sum(h @ params["w2"])

    jitted = jax.jit(jax.grad(jax.checkpoint(loss, policy=policy)))
    traced = lower_and_compile(jitted.trace(*args), (), {}, "loss")
    lowered = lower_and_compile(jitted.lower(*args), (), {}, "loss")
    assert traced.policies.offloads == ((frozenset({"hidden"}), "pinned_host"),)
    assert traced.policies.tags == frozenset({"hidden"})
    assert lowered.policies.offloads == ()
    assert traced.hlo_text == lowered.hlo_text


def test_explorer_shows_a_stage_explained_without_controls(args):
    lowered = jax.jit(train_step).lower(*args)
    explorer = sv.Explorer(lowered)
    assert explorer.session is None and explorer.controls is None
    assert explorer.report.collectives  # the same program, explained
    with pytest.raises(TypeError, match="logical_axes"):
        sv.Explorer(lowered, logical_axes={"w1": ("embed", "mlp")})
