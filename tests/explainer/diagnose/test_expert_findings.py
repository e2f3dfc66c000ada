"""Why an expert layer's biggest collectives exist, and the finding that says so (issue 41).

A small mixture of experts with GShard einsum dispatch on the 8 fake CPU devices: tokens
split over ('fsdp', 'expert'), experts over 'expert', expert weights' model dim over
'fsdp'. The CPU partitioner gathers the dispatched tokens over both axes (the TPU compile of
the issue did the same over 'fsdp'); the reasons must name that conversion with its
shardings and line, the expert-gather finding must give its figures and a fix that, tried
for real, shrinks the bytes moved. Also: no finding text says "?" or "0 B" where the facts
are known, on the planted programs and this one.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import replace

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
from shardviz.analysis.detect import CompilerEvidence, Remat
from shardviz.analysis.detect.experts import expert_gather
from shardviz.analysis.detect.inputs import NO_SPEC, spec_code, step_bytes
from shardviz.analysis.detect.wasted_moves import involuntary_remat
from shardviz.capture.hlo.compiler_log import full_rematerializations
from shardviz.model.units import format_bytes

from . import planted

G, S, M, E, C, H = 8, 16, 64, 4, 8, 256


def marker_line(marker: str) -> str:
    """``test_expert_findings.py:<line>`` of the line ending in ``# <marker>``."""
    with open(__file__, encoding="utf-8") as f:
        hits = [i for i, t in enumerate(f, 1) if t.rstrip().endswith(f"# {marker}")]
    assert len(hits) == 1, marker
    return f"test_expert_findings.py:{hits[0]}"


def moe(params, x):
    """Top-1 routing, GShard dispatch and combine einsums, one expert MLP."""
    probs = jax.nn.softmax(jnp.einsum("gsm,me->gse", x, params["router"]), axis=-1)
    onehot = jax.nn.one_hot(jnp.argmax(probs, axis=-1), E, dtype=x.dtype)
    pos = (jnp.cumsum(onehot, axis=1) * onehot - 1).astype(jnp.int32)
    dispatch = onehot[..., None] * jax.nn.one_hot(pos, C, dtype=x.dtype)
    combine = dispatch * jnp.max(probs, -1)[..., None, None]
    xe = jnp.einsum("gsec,gsm->egcm", dispatch, x)  # moe-dispatch
    h = jax.nn.relu(jnp.einsum("egcm,emh->egch", xe, params["w1"]))
    ye = jnp.einsum("egch,ehm->egcm", h, params["w2"])
    return jnp.einsum("gsec,egcm->gsm", combine, ye)


def step(params, x):
    return jax.grad(lambda p: jnp.mean(moe(p, x) ** 2))(params)


def _args(tokens: tuple[str, ...]):
    mesh = Mesh(np.array(jax.devices()).reshape(2, 4), ("fsdp", "expert"))

    def put(a, *spec):
        return jax.device_put(a, NamedSharding(mesh, P(*spec)))

    k = jax.random.split(jax.random.key(0), 4)
    params = {
        "router": put(jax.random.normal(k[0], (M, E)) * 0.1, None, None),
        "w1": put(jax.random.normal(k[1], (E, M, H)) * 0.1, "expert", "fsdp", None),
        "w2": put(jax.random.normal(k[2], (E, H, M)) * 0.1, "expert", None, "fsdp"),
    }
    return params, put(jax.random.normal(k[3], (G, S, M)), tokens, None, None)


@pytest.fixture(scope="module")
def report():
    return sv.explain(step, *_args(("fsdp", "expert")), run=False)


def _token_gathers(report):
    return [c for c in report.collectives if c.why and c.why.conversion == "token-gather"]


def test_token_gather_named_with_both_shardings_and_the_dispatch_line(report):
    gathers = _token_gathers(report)
    assert gathers, [c.why.summary for c in report.collectives if c.why]
    dispatch = marker_line("moe-dispatch")
    for c in gathers:
        why = c.why
        assert c.kind == "all-gather" and set(c.axes) == {"fsdp", "expert"}
        assert why.from_spec == ((), ("fsdp", "expert"), (), ())
        assert why.better_spec == (("expert",), ("fsdp",), (), ())
        assert why.expert_axes == ("expert",)
        assert why.needed_by == "dot_general" and why.needed_by_line
        assert "P(None, ('fsdp', 'expert'), None, None)" in why.summary
        assert "P('expert', 'fsdp', None, None)" in why.summary
        assert "all-to-all over 'expert'" in why.summary
    forward = [c for c in gathers if dispatch in c.why.summary]
    assert forward, dispatch  # the gathered value is the dispatch's, at its line


def test_every_gather_of_the_expert_layer_has_a_reason(report):
    """The gathers of activations on a contracted dim the two operands split differently
    (the weights' gradients) were 'cannot tell' before: now from -> to is known."""
    for c in report.collectives:
        assert c.why is not None, c
        assert "cannot tell" not in c.why.summary, c.why.summary
        if c.kind == "all-gather":
            assert c.why.from_spec is not None and c.why.to_spec is not None, c.why.summary
    activations = [c for c in report.collectives if c.why.conversion == "activation-gather"]
    assert any("contracts a dim" in c.why.summary for c in activations)


def test_combine_all_reduce_in_place_of_an_all_to_all():
    """Tokens split over 'fsdp' only: the combine sums over the experts with an all-reduce
    over 'expert', and its reason says it stands where an all-to-all would be."""
    r = sv.explain(step, *_args(("fsdp",)), run=False)
    (c,) = [c for c in r.collectives if c.why and c.why.conversion == "combine-all-reduce"]
    assert c.kind == "all-reduce" and c.axes == ("expert",)
    assert "takes the place of the expert layer's all-to-all" in c.why.summary
    assert not r.findings.of("expert-gather")  # no token is gathered here


def test_expert_gather_finding_has_its_figures_and_a_fix_that_helps(report):
    (f,) = report.findings.of("expert-gather")
    gathers = _token_gathers(report)
    moved = sum(step_bytes(c) for c in gathers)
    assert f.cost.bytes == moved
    assert f"every token over 'fsdp', 'expert' ({format_bytes(moved)} per step)" in f.title
    assert "Shard the dispatch over 'expert'" in f.why
    assert f.where.line.endswith(marker_line("moe-dispatch"))
    tried = report.try_fixes()
    (f,) = tried.findings.of("expert-gather")
    assert f.fix is not None and f.fix.kind == "constraint"
    assert "P('expert', 'fsdp', None, None)" in f.fix.code
    assert f.check is not None and f.check.helps, f.check
    assert f.check.after.moved_bytes < f.check.before.moved_bytes


def test_without_any_all_to_all_the_title_says_so(report):
    """The issue's TPU compile: the expert layer exchanged nothing with an all-to-all, and
    the finding leads with that (the ledger without its all-to-alls stands in for it)."""
    kept = tuple(c for c in report.collectives if c.kind != "all-to-all")
    (cand,) = expert_gather(replace(report, collectives=kept))
    moved = sum(step_bytes(c) for c in _token_gathers(report))
    assert cand.finding.title == (
        "the expert layer has no all-to-all: every token is gathered over 'fsdp', 'expert' "
        f"({format_bytes(moved)} per step)"
    )
    assert cand.fixes and cand.fixes[0].line.endswith(marker_line("moe-dispatch"))


def test_a_scanned_expert_layer_is_recognised_through_the_loop_carry():
    """Layers stacked and scanned (as the issue's model): the weights reach the expert
    matmul through the loop's carried tuple and a layer's slice, and still count as the
    experts' weights, so the tokens gathered in the loop are named and found."""
    params, x = _args(("fsdp", "expert"))

    def stacked(a):
        spec = NamedSharding(a.sharding.mesh, P(None, *a.sharding.spec))
        return jax.device_put(jnp.stack([a, a]), spec)

    def scanned(stack, x):
        def loss(stack):
            h, _ = jax.lax.scan(lambda h, p: (moe(p, h), None), x, stack)
            return jnp.mean(h**2)

        return jax.grad(loss)(stack)

    r = sv.explain(scanned, jax.tree.map(stacked, params), x, run=False)
    tokens = _token_gathers(r)
    assert tokens and all(c.trips == 2 for c in tokens)
    (f,) = r.findings.of("expert-gather")
    assert f.cost.bytes == sum(step_bytes(c) for c in tokens)
    # The layer's weights, sliced out of the stack at the scan's line: gathered, no activation.
    weights = [c for c in r.collectives if c.why and "lax.scan(" in c.why.value]
    assert weights and all(c.why.conversion == "" for c in weights)


@pytest.mark.skipif(
    importlib.util.find_spec("libtpu") is None, reason="needs the shardviz[tpu] extra (libtpu)"
)
def test_a_deviceless_tpu_compile_names_the_same_token_gathers(report):
    """The TPU compiler drops a tile's size-1 dims before gathering ((1, 4, 8, 256) is
    gathered as (4, 8, 256)); the reasons read through that, and find the same tokens."""
    devices = sv.topology("v5e:2x4").devices
    mesh = Mesh(np.array(devices).reshape(2, 4), ("fsdp", "expert"))

    def sds(a):
        return jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=NamedSharding(mesh, a.sharding.spec))

    tpu = sv.explain(step, *jax.tree.map(sds, _args(("fsdp", "expert"))), run=False)
    assert tpu.platform == "tpu"
    got = [(c.why.from_spec, c.why.better_spec) for c in _token_gathers(tpu)]
    assert got and got == [(c.why.from_spec, c.why.better_spec) for c in _token_gathers(report)]
    assert tpu.findings.of("expert-gather")
    squeezed = [c for c in tpu.collectives if c.why and "contracts a dim" in c.why.summary]
    assert squeezed and squeezed[0].why.conversion == "activation-gather"


# --- finding texts never say "?" or "0 B" where the facts are known -------------------------

_LOG = (
    "W1129 04:23:01.260493 1739 spmd_partitioner.cc:656] [SPMD] Involuntary full "
    "rematerialization. The compiler cannot go from sharding {devices=[1,8,1,1]<=[8]} to "
    "{devices=[4,1,1,1,2]<=[2,4]T(1,0) last_tile_dim_replicate} efficiently for HLO "
    "operation %transpose.99 = bf16[4,8,8,64]{2,0,3,1} transpose(%dot), dimensions={2,0,3,1}, "
    "sharding={devices=[1,8,1,1]<=[8]}. As the last resort, SPMD will replicate the tensor"
)


def test_the_log_gives_the_rematerialized_value_its_type_and_dims():
    (r,) = full_rematerializations(_LOG)
    assert (r.instruction, r.dtype, r.dims) == ("transpose.99", "bf16", (4, 8, 8, 64))


def test_a_remat_of_a_value_the_report_lacks_keeps_both_sides_and_its_size(report):
    """A value only the compile log knows (a loop body's, say): its shardings as the log
    prints them, its size from the log's shape, not '?' and '0 B'."""
    remat = Remat(
        value="transpose.99", op_name="", from_spec=None, to_spec=None,
        from_hlo="{devices=[1,8,1,1]<=[8]}", to_hlo="{replicated}", dtype="bf16",
        shape=(4, 8, 8, 64),
    )  # fmt: skip
    (cand,) = involuntary_remat(report, CompilerEvidence(remats=(remat,)))
    f = cand.finding
    assert "{devices=[1,8,1,1]<=[8]}" in f.title and "{replicated}" in f.title
    assert "bfloat16[4, 8, 8, 64]" in f.title
    # 16 KiB whole, 1/8 kept: 14 KiB moved per device.
    assert f.cost.bytes == 4 * 8 * 8 * 64 * 2 * 7 // 8
    assert f"moving about {format_bytes(f.cost.bytes)}" in f.why
    _no_unknowns(f)


def test_a_sharding_with_no_spec_is_said_in_words():
    assert spec_code(None) == NO_SPEC and "?" not in spec_code(None)
    assert spec_code((("data",), ())) == "P('data', None)"


def _no_unknowns(f) -> None:
    texts = [f.title, f.why, *(x.description for x in ([f.fix] if f.fix else []))]
    for text in texts:
        for bad in (" ? ", "from ?", "to ?", "(?", "about 0 B", "?)"):
            assert bad not in text, (f.kind, bad, text)


@pytest.mark.parametrize(
    "program",
    ["involuntary_remat", "regather", "reshard_chain", "uneven", "loop_collective",
     "idle_axis", "full_reduce"],
)  # fmt: skip
def test_no_finding_text_says_unknown_where_it_is_known(program):
    found = getattr(planted, program)()
    assert found.findings, program
    for f in found.findings:
        _no_unknowns(f)


def test_no_unknowns_in_the_expert_layer_findings(report):
    for f in report.findings:
        _no_unknowns(f)


def test_the_issues_moe_remat_finding_has_both_shardings_and_its_bytes():
    """The issue's symptom: the scanned MoE's involuntary-remat finding read "from ? to ?,
    moving about 0 B" (its value lives in the loop body, not in the report); the compile
    log's own shape now gives its specs and size."""
    from tests.fixtures import moe_models

    fn, args, _ = moe_models.make(moe_models.GSHARD)
    r = sv.explain(fn, *args, run=False)
    remats = r.findings.of("involuntary-remat")
    assert remats
    for f in remats:
        assert "from P(" in f.title and " to P(" in f.title, f.title
        assert f.cost.bytes > 0 and f"moving about {format_bytes(f.cost.bytes)}" in f.why
    for f in r.findings:
        _no_unknowns(f)
