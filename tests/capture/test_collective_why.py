"""Why each partitioner-inserted collective is there (``Collective.why``), on live compiles
(8 fake CPU devices) of the Megatron MLP, FSDP, a reshard chain and a declared output, and on
hand-written HLO text (no jax needed). Lines are this file's own, found by marker comments.

The origins' search itself (and its agreement with Shardy's own record) is tested in
test_sharding_origins.py.
"""

from __future__ import annotations

import importlib.util
import json
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
from shardviz.analysis.collective_why import collective_reasons
from shardviz.analysis.sharding_origins import a_op, op_noun
from shardviz.model import Collective, MeshLayout, Report, ShardingOf
from shardviz.model.mesh import Device
from tests.without_jax import run_without_jax

from . import marker_line

HERE = os.path.abspath(__file__)
NAME = os.path.relpath(HERE)  # as the views name a file under the working directory


def line(marker: str) -> int:
    """The line of this file that carries ``# <marker>``."""
    with open(HERE, encoding="utf-8") as f:
        hits = [i for i, text in enumerate(f, 1) if text.rstrip().endswith(f"# {marker}")]
    assert len(hits) == 1, marker
    return hits[0]


def at(marker: str) -> str:
    return f"{HERE}:{line(marker)}"


def short(marker: str) -> str:
    return f"{NAME}:{line(marker)}"


# --- the programs -------------------------------------------------------------------------


def megatron(params, x):
    h = jnp.maximum(x @ params["w1"], 0)  # megatron-h
    return h @ params["w2"]  # megatron-y


def fsdp(params, x):
    h = jnp.tanh(x @ params["w1"])  # fsdp-h
    return h @ params["w2"]  # fsdp-y


def make_chain(mesh: Mesh):
    def on(*spec):
        return NamedSharding(mesh, P(*spec))

    def chain(x):
        a = jax.lax.with_sharding_constraint(x, on("data", None))  # chain-a
        b = jax.lax.with_sharding_constraint(a * 2, on(None, "model"))  # chain-b
        return jax.lax.with_sharding_constraint(b + 1, on("data", None))  # chain-c

    return chain


def double(a):
    return a * 2  # double


def masked(x, w):
    h = jnp.where(x > 0, x, 0.1 * x)  # masked-h
    return h.T @ w  # masked-y


def _mesh_2x4() -> Mesh:
    return Mesh(np.array(jax.devices()).reshape(2, 4), ("data", "model"))


def _put(mesh: Mesh, shape, spec):
    return jax.device_put(jnp.ones(shape, jnp.float32), NamedSharding(mesh, spec))


def _megatron_args(mesh: Mesh):
    params = {
        "w1": _put(mesh, (64, 256), P(None, "model")),
        "w2": _put(mesh, (256, 64), P("model", None)),
    }
    return params, _put(mesh, (32, 64), P("data", None))


def _fsdp_args(mesh: Mesh):
    params = {
        "w1": _put(mesh, (128, 512), P("data", None)),
        "w2": _put(mesh, (512, 128), P("data", None)),
    }
    return params, _put(mesh, (64, 128), P("data", None))


@pytest.fixture(scope="module")
def megatron_report() -> Report:
    return sv.explain(megatron, *_megatron_args(_mesh_2x4()), run=False)


@pytest.fixture(scope="module")
def fsdp_report() -> Report:
    mesh = Mesh(np.array(jax.devices()), ("data",))
    return sv.explain(fsdp, *_fsdp_args(mesh), run=False)


@pytest.fixture(scope="module")
def chain_report() -> Report:
    mesh = _mesh_2x4()
    return sv.explain(make_chain(mesh), _put(mesh, (32, 64), P()), run=False)


def _inserted(report: Report) -> list[Collective]:
    return [c for c in report.collectives if not c.user_written]


# --- Megatron: one all-reduce of partial sums over 'model' ----------------------------------


def test_megatron_all_reduce_adds_partial_sums_of_the_second_dot(megatron_report):
    (c,) = _inserted(megatron_report)
    assert (c.kind, c.axes) == ("all-reduce", ("model",))
    why = c.why
    assert why is not None
    assert why.needed_by == "dot_general"
    assert why.needed_by_line == at("megatron-y")
    assert why.needed_by_code == 'return h @ params["w2"]  # megatron-y'
    # Each device holds partial sums over 'model' of the result's P('data', None) tile.
    assert why.partial_axes == ("model",)
    assert why.from_spec == (("data",), ())
    assert why.to_spec == (("data",), ())
    # h is split over 'model' because params/w1 is (propagated through the first dot) ...
    assert why.from_origin.kind == "argument"
    assert why.from_origin.detail == "argument params/w1"
    assert why.from_origin.spec == ((), ("model",))
    assert why.from_origin.via == f"a matmul at {short('megatron-h')}"
    # ... and params/w2 is split over 'model' on the contracted dim by its own spec.
    (w2,) = why.other_origins
    assert (w2.kind, w2.detail, w2.spec) == ("argument", "argument params/w2", (("model",), ()))
    # The result's 'data' comes from x, through the relu on the first line.
    assert why.to_origin.kind == "argument"
    assert why.to_origin.detail == "argument x"
    assert why.to_origin.spec == (("data",), ())
    assert why.to_origin.via == f"a maximum at {short('megatron-h')}"
    assert "partial sums" in why.summary and "params/w1" in why.summary
    # In the user's terms: the op in plain words, the lines and their code, axes and specs as
    # written in jax (no compiler op names, no tuples).
    assert why.summary.startswith(
        f'The matmul at {short("megatron-y")} (`return h @ params["w2"]  # megatron-y`) '
        "sums over a dim split over 'model' (the value made at "
        f'{short("megatron-h")} (`h = jnp.maximum(x @ params["w1"], 0)  # megatron-h`) is '
        "P('data', 'model'), 'model' from argument params/w1 through a matmul at "
        f"{short('megatron-h')}; "
    )
    assert "dot_general" not in why.summary and "max " not in why.summary
    assert "over ('" not in why.summary and ",)" not in why.summary


# --- FSDP: each weight gathered whole before its dot -----------------------------------------


@pytest.mark.parametrize(("leaf", "marker"), [("w1", "fsdp-h"), ("w2", "fsdp-y")])
def test_fsdp_gathers_each_weight_for_its_dot(fsdp_report, leaf, marker):
    inserted = _inserted(fsdp_report)
    assert [(c.kind, c.axes) for c in inserted] == [("all-gather", ("data",))] * 2
    (c,) = [c for c in inserted if c.why is not None and c.why.value == f"params/{leaf}"]
    why = c.why
    assert why.needed_by == "dot_general"
    assert why.needed_by_line == at(marker)
    # From the argument's split over 'data' on dim 0 to whole (the dot contracts dim 0,
    # and 'data' already splits x's batch dim).
    assert why.from_spec == (("data",), ())
    assert why.to_spec == ((), ())
    assert why.from_origin.kind == "argument"
    assert why.from_origin.detail == f"argument params/{leaf}"
    assert why.from_origin.spec == (("data",), ())
    assert why.from_origin.via == ""
    assert why.to_origin.detail == "argument x"
    assert why.to_origin.spec == (("data",), ())
    assert why.partial_axes == ()
    assert "all-gathers it over 'data'" in why.summary


def test_fsdp_second_dot_gets_its_split_through_the_tanh(fsdp_report):
    (c,) = [c for c in _inserted(fsdp_report) if c.why.value == "params/w2"]
    assert c.why.to_origin.via == f"a tanh at {short('fsdp-h')}"


# --- a reshard chain: constrained P('data', None) -> P(None, 'model') -> back ---------------


def test_chain_each_step_names_both_constraints(chain_report):
    first, second = _inserted(chain_report)
    assert (first.kind, first.axes, second.kind, second.axes) == (
        "all-gather", ("data",), "all-gather", ("model",),
    )  # fmt: skip
    a, b = first.why, second.why
    assert (a.from_spec, a.to_spec) == ((("data",), ()), ((), ("model",)))
    assert (a.needed_by, a.needed_by_line) == ("mul", at("chain-b"))
    assert (a.from_origin.kind, a.from_origin.line) == ("constraint", at("chain-a"))
    assert a.from_origin.spec == (("data",), ())
    # The multiply gets P(None, 'model') back from the constraint on its result.
    assert (a.to_origin.kind, a.to_origin.line) == ("constraint", at("chain-b"))
    assert a.to_origin.spec == ((), ("model",))
    assert a.value == f"the value of the sharding constraint at {short('chain-a')}"

    assert (b.from_spec, b.to_spec) == (((), ("model",)), (("data",), ()))
    assert (b.needed_by, b.needed_by_line) == ("add", at("chain-c"))
    assert (b.from_origin.kind, b.from_origin.line) == ("constraint", at("chain-b"))
    assert (b.to_origin.kind, b.to_origin.line) == ("constraint", at("chain-c"))
    assert f"sharding constraint at {short('chain-c')}" in b.summary


# --- to a declared output: the value's spec mixes an argument's axis and the output's -------


def test_declared_output_resharding():
    mesh = _mesh_2x4()
    report = sv.explain(
        double, _put(mesh, (32, 64), P("data", None)), run=False,
        out_shardings=NamedSharding(mesh, P(None, "model")),
    )  # fmt: skip
    (c,) = _inserted(report)
    why = c.why
    assert (why.needed_by, why.needed_by_line) == ("output", "")
    assert (why.from_spec, why.to_spec) == ((("data",), ("model",)), ((), ("model",)))
    assert why.to_origin.kind == "output"
    # The multiply's 'data' came from the argument, its 'model' back from the output.
    assert why.from_origin.kind == "propagation"
    by_axis = {a.axis: (a.kind, a.detail) for a in why.from_origin.axes}
    assert by_axis == {
        "data": ("argument", "argument a"),
        "model": ("output", "declared output sharding"),
    }
    assert why.value == f"the value made at {short('double')} (`return a * 2  # double`)"


# --- the words: the user's ops and lines, not the compiler's names ----------------------------


def test_a_where_reads_as_jnp_where_and_unknown_origins_say_so():
    """``jnp.where`` is ``select_n`` (after a ``gt``) to the compiler: the why texts name it as
    the user wrote it, and a side whose origin is not found says so in words."""
    mesh = _mesh_2x4()
    x, w = _put(mesh, (64, 128), P("data", None)), _put(mesh, (64, 32), P("model", None))
    report = sv.explain(masked, x, w, run=False)
    summaries = [c.why.summary for c in _inserted(report)]
    assert summaries
    for text in summaries:
        assert text.startswith(f"The matmul at {short('masked-y')} (`return h.T @ w  # masked-y`)")
        assert "(where it comes from is not known)" in text
        for compiler_word in ("select_n", "gt ", "dot_general", "origin unknown", "of transpose"):
            assert compiler_word not in text
    joined = " ".join(summaries)
    assert f"(from argument x through a jnp.where at {short('masked-h')})" in joined
    # The value a line makes on its way (h.T, used by the same line's matmul) is named by its op.
    assert f"the result of the transpose at {short('masked-y')} (`return h.T @ w" in joined


def test_user_written_collectives_have_no_why():
    mesh = _mesh_2x4()

    def summed(x):
        return jax.shard_map(
            lambda b: jax.lax.psum(b, "model"), mesh=mesh, in_specs=P(None, "model"),
            out_specs=P(None, None),
        )(x)  # fmt: skip

    report = sv.explain(summed, _put(mesh, (32, 64), P(None, "model")), run=False)
    user = [c for c in report.collectives if c.user_written]
    assert user and all(c.why is None for c in user)


# --- the report keeps it ---------------------------------------------------------------------


def test_json_round_trip_keeps_why(megatron_report):
    again = Report.from_json(megatron_report.to_json())
    assert again == megatron_report
    assert again.collectives[0].why == megatron_report.collectives[0].why
    assert again.collectives[0].why.other_origins[0].detail == "argument params/w2"


def test_text_view_shows_why_under_the_collective(megatron_report):
    text = str(megatron_report)
    (c,) = _inserted(megatron_report)
    assert f"why: {c.why.summary}" in text


# --- a deviceless TPU compile gets the same reasons -------------------------------------------


@pytest.mark.skipif(
    importlib.util.find_spec("libtpu") is None, reason="needs the shardviz[tpu] extra (libtpu)"
)
def test_tpu_deviceless_compile_gets_the_same_reasons(megatron_report, fsdp_report, chain_report):
    """The TPU partitioner's dump names values as the CPU's does here; whatever differs must
    come out unknown, never wrong: every known fact equals the CPU compile's."""
    devices = sv.topology("v5e:2x4").devices
    mesh = Mesh(np.array(devices).reshape(2, 4), ("data", "model"))
    flat = Mesh(np.array(devices), ("data",))

    def sds(m, shape, spec):
        return jax.ShapeDtypeStruct(shape, jnp.float32, sharding=NamedSharding(m, spec))

    def like(args, m):
        return jax.tree.map(lambda a: sds(m, a.shape, a.sharding.spec), args)

    cases = [
        (megatron, like(_megatron_args(_mesh_2x4()), mesh), megatron_report),
        (fsdp, like(_fsdp_args(Mesh(np.array(jax.devices()), ("data",))), flat), fsdp_report),
        (make_chain(mesh), (sds(mesh, (32, 64), P()),), chain_report),
    ]
    for fn, args, cpu in cases:
        tpu = sv.explain(fn, *args, run=False)
        assert tpu.platform == "tpu"
        got = sorted(_facts(c.why) for c in _inserted(tpu))
        want = sorted(_facts(c.why) for c in _inserted(cpu))
        assert got == want, fn.__name__


def _facts(why) -> tuple:
    return (
        why.needed_by, why.needed_by_line, why.from_spec, why.to_spec, why.partial_axes,
        why.from_origin.detail, why.from_origin.spec, why.to_origin.detail, why.value,
    )  # fmt: skip


# --- pure text: no jax ---------------------------------------------------------------------


def test_ops_in_plain_words():
    assert [op_noun(op) for op in ("select_n", "gt", "ne", "dot_general", "mul", "tanh")] == [
        "jnp.where", "comparison", "comparison", "matmul", "multiplication", "tanh",
    ]  # fmt: skip
    assert [a_op(op) for op in ("add", "dot_general", "exp", "select_n")] == [
        "an addition", "a matmul", "an exp", "a jnp.where",
    ]  # fmt: skip


_MEGATRON_HLO = """HloModule jit_mlp, entry_computation_layout={(f32[64,256]{1,0}, f32[256,64]{1,0}, f32[32,64]{1,0})->f32[32,64]{1,0}}, allow_spmd_sharding_propagation_to_parameters={false,false,false}, allow_spmd_sharding_propagation_to_output={true}, num_partitions=8

ENTRY %main.0 (w1: f32[64,256], w2: f32[256,64], x.0: f32[32,64]) -> f32[32,64] {
  %x.0 = f32[32,64]{1,0} parameter(2), sharding={devices=[2,1,4]<=[8] last_tile_dim_replicate}, metadata={op_name="x"}
  %w1 = f32[64,256]{1,0} parameter(0), sharding={devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}, metadata={op_name="params[\\'w1\\']"}
  %dot_general.0 = f32[32,256]{1,0} dot(%x.0, %w1), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sharding={devices=[2,4]<=[8]}, metadata={op_name="jit(mlp)/dot_general"}
  %w2 = f32[256,64]{1,0} parameter(1), sharding={devices=[4,1,2]<=[2,4]T(1,0) last_tile_dim_replicate}, metadata={op_name="params[\\'w2\\']"}
  ROOT %dot_general.1 = f32[32,64]{1,0} dot(%dot_general.0, %w2), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sharding={devices=[2,1,4]<=[8] last_tile_dim_replicate}, metadata={op_name="jit(mlp)/dot_general"}
}
"""


def _mesh_layout() -> MeshLayout:
    return MeshLayout(("data", "model"), (2, 4), tuple(Device(i) for i in range(8)))


def _all_reduce(out_shape: tuple[int, ...], axes=("model",)) -> Collective:
    return Collective(
        name="all-reduce", kind="all-reduce", in_dtype="f32", in_shape=out_shape,
        out_dtype="f32", out_shape=out_shape, in_bytes=0, out_bytes=0, moved_bytes=0,
        group_size=4, groups=(), axes=axes, op_name="jit(mlp)/dot_general",
        reshard="dot_general.1",
    )  # fmt: skip


def _point() -> ShardingOf:
    return ShardingOf(
        "dot_general.1", "dot", "f32", (32, 64), (("data",), ()), "", "jit(mlp)/dot_general",
        operands=("dot_general.0", "w2"), reshard=True,
    )  # fmt: skip


def test_text_only_partial_sums_from_hand_written_hlo():
    (c,) = collective_reasons([_all_reduce((16, 64))], [_point()], _MEGATRON_HLO, _mesh_layout())
    why = c.why
    assert why.partial_axes == ("model",)
    # The contracted value is the first dot's result, split over 'model' by params/w1.
    assert (why.from_origin.detail, why.from_origin.via) == ("argument params/w1", "")
    assert why.other_origins[0].detail == "argument params/w2"
    assert why.to_origin.detail == "argument x"


def test_a_collective_whose_sizes_do_not_fit_is_left_unknown():
    """An all-reduce over 'model' whose result is not the dot's tile: shardviz does not guess."""
    (c,) = collective_reasons([_all_reduce((32, 64))], [_point()], _MEGATRON_HLO, _mesh_layout())
    why = c.why
    assert (why.from_spec, why.to_spec, why.partial_axes) == (None, None, ())
    assert why.from_origin.kind == why.to_origin.kind == "unknown"
    assert why.needed_by == "dot_general"
    # What it does is known and said: each device's f32[32, 64] to f32[32, 64].
    assert "takes each device's f32[32, 64] to f32[32, 64]" in why.summary
    assert "cannot tell which value it converts" in why.summary


def test_an_unlinked_collective_without_an_op_is_unknown():
    c = Collective(
        name="all-gather", kind="all-gather", in_dtype="f32", in_shape=(16, 64),
        out_dtype="f32", out_shape=(32, 64), in_bytes=0, out_bytes=0, moved_bytes=0,
        group_size=2, groups=(), axes=("data",), dimension=0,
    )  # fmt: skip
    (out,) = collective_reasons([c], [], _MEGATRON_HLO, _mesh_layout())
    assert out.why is not None and out.why.needed_by == "" and out.why.from_spec is None
    assert "does not say which op needed it" in out.why.summary


def test_nothing_without_a_mesh_or_a_dump():
    c = _all_reduce((16, 64))
    assert collective_reasons([c], [], "", _mesh_layout())[0].why is None
    assert collective_reasons([c], [], _MEGATRON_HLO, None)[0].why is None


# --- saved fixtures (tests/fixtures/hlo), with jax blocked ------------------------------------


def test_saved_fixtures_give_the_reasons_with_jax_blocked():
    """The CPU fixtures' train steps: Megatron's forward all-reduce, and a constraint in the
    forward pass that makes the first dot gather x (the dot's result takes the constraint's
    P(None, 'data'), so 'data' cannot also split x's batch dim)."""
    out = run_without_jax(
        """
        import json
        from pathlib import Path
        from shardviz.capture.hlo import collectives_of_hlo, intermediates_of_hlo, link_reshards
        from shardviz.analysis.collective_why import collective_reasons
        from shardviz.model import Device, MeshLayout

        here = Path("tests/fixtures/hlo")
        devices = tuple(Device(i) for i in range(8))
        meshes = {
            "megatron": MeshLayout(("data", "model"), (2, 4), devices),
            "constrained": MeshLayout(("data",), (8,), devices),
        }
        facts = {}
        for name, mesh in meshes.items():
            dump = (here / f"{name}.before_spmd.txt").read_text()
            cs = collectives_of_hlo((here / f"{name}.txt").read_text(), mesh)
            ints = intermediates_of_hlo(dump, mesh)
            cs = collective_reasons(link_reshards(cs, ints), ints, dump, mesh)
            facts[name] = [
                [c.kind, list(c.axes), c.why.needed_by, c.why.needed_by_line.rsplit(":", 1)[-1],
                 c.why.from_spec, c.why.to_spec, list(c.why.partial_axes),
                 c.why.from_origin.detail, c.why.to_origin.detail]
                for c in cs
            ]
        assert "jax" not in sys.modules
        print(json.dumps(facts))
        """
    )
    facts = json.loads(out)
    megatron_forward = facts["megatron"][0]
    assert megatron_forward == [
        "all-reduce", ["model"], "dot_general", str(marker_line("mlp_out")),
        [["data"], []], [["data"], []], ["model"], "argument params/w1", "argument x",
    ]  # fmt: skip
    gather_x = facts["constrained"][0]
    assert gather_x == [
        "all-gather", ["data"], "dot_general", str(marker_line("constrained_h")),
        [["data"], []], [[], []], [], "argument x",
        f"sharding constraint at programs.py:{marker_line('constrained_reshard')}",
    ]  # fmt: skip
