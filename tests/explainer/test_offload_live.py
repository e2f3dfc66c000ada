"""Host memory through ``explain``, live: a deviceless TPU compile of the offload fixture's
training step (tests/fixtures/offload/make_fixtures.py) and the same step on CPU. Skipped
without the shardviz[tpu] extra for the TPU part."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from jax.sharding import Mesh, NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

import shardviz as sv  # noqa: E402
from shardviz.capture.topology import topology  # noqa: E402
from shardviz.model.program import HOST_FROM_COMPILER, HOST_FROM_SHARDINGS  # noqa: E402

sys.path.insert(0, str(Path(__file__).parents[1] / "fixtures" / "offload"))
import make_fixtures as fx  # noqa: E402

needs_tpu = pytest.mark.skipif(
    importlib.util.find_spec("libtpu") is None, reason="needs the shardviz[tpu] extra (libtpu)"
)
ACT = fx.B * fx.D * 4  # one layer's activation per device
OPT = fx.L * fx.D * fx.D * 4


def _args(devices):
    mesh = Mesh(np.array(devices), ("data",))
    rep, host = NamedSharding(mesh, P()), NamedSharding(mesh, P(), memory_kind="pinned_host")
    return (
        jax.ShapeDtypeStruct((fx.L, fx.D, fx.D), jnp.float32, sharding=rep),
        jax.ShapeDtypeStruct((fx.B * len(devices), fx.D), jnp.float32,
                             sharding=NamedSharding(mesh, P("data"))),
        jax.ShapeDtypeStruct((fx.L, fx.D, fx.D), jnp.float32, sharding=host),
    )  # fmt: skip


@pytest.fixture(scope="module")
def tpu_report():
    return sv.explain(fx.step_of(fx.layer_tagged), *_args(list(topology("v5e:2x2").devices)))


@needs_tpu
def test_tpu_report_lists_the_offload_transfers_per_step(tpu_report):
    ts = tpu_report.host_transfers
    off = [t for t in ts if t.role == "offload"]
    assert sum(t.bytes_per_step for t in off if t.direction == "to host") == fx.L * ACT
    assert sum(t.bytes_per_step for t in off if t.direction == "to device") == fx.L * ACT
    assert {t.role for t in ts} == {"offload", "argument", "output"}


@needs_tpu
def test_tpu_report_has_the_requests_and_the_compilers_host_figures(tpu_report):
    reqs = tpu_report.offload_requests
    assert [(r.value, r.output) for r in reqs] == [
        (f"f32[{fx.B * 4},{fx.D}]", False), (f"f32[{fx.L},{fx.D},{fx.D}]", True)
    ]  # fmt: skip
    m = tpu_report.memory
    assert (m.host_argument_bytes, m.host_output_bytes) == (OPT, OPT)
    assert m.offloaded_bytes == fx.L * ACT and m.host_bytes == 2 * OPT + fx.L * ACT
    assert m.host_source == HOST_FROM_COMPILER and m.host_mismatch == ""


def test_cpu_report_moves_nothing_and_counts_host_from_the_shardings():
    r = sv.explain(fx.step_of(fx.layer_tagged), *_args(jax.devices()[:4]), run=False)
    assert r.host_transfers == ()
    # jax 0.10.2 on CPU lowers neither the remat offload nor device_put(..., Space.Host) to a
    # placement request: the output's host memory kind is in its sharding only.
    assert [x.happened for x in r.offload_requests] == [False]  # the policy's, missed
    assert [x.memory_kind for x in r.outputs] == ["device", "pinned_host"]
    assert r.memory.host_source == HOST_FROM_SHARDINGS
    assert (r.memory.host_argument_bytes, r.memory.host_output_bytes) == (OPT, OPT)


@needs_tpu
def test_tpu_report_views_list_the_transfers_and_the_host_link_time(tpu_report):
    text, html = str(tpu_report), tpu_report._repr_html_()
    # to host: 4 x 128 KiB of activations + the 4 MiB output; to device: the same + opt.
    assert "Host transfers per device · 4.5 MiB to host · 4.5 MiB to device per step" in text
    assert 'class="sv-transfers" data-to-host="4718592" data-to-device="4718592"' in html
    assert 'data-role="offload" data-direction="to host"' in html
    e = tpu_report.estimate
    # v5e's host link: 1.5e10 B/s each way (the scaling book); the larger direction's bytes.
    assert e.host_seconds == pytest.approx((fx.L * ACT + OPT) / 1.5e10)
    assert e.host_text.startswith("host link: 4.5 MiB to host + 4.5 MiB to device per step")
    assert "host link" in text and e.host_text in text
    # It hides under the longest of the step's other parts (communication included).
    others = max(e.compute_seconds, e.memory_seconds, e.collective_seconds)
    assert e.host_exposed_seconds == pytest.approx(max(0.0, e.host_seconds - others))


def _findings(report):
    return [f for f in report.findings.items if f.kind == "offload-missed"]


@needs_tpu
def test_an_offload_the_program_made_raises_no_finding(tpu_report):
    assert _findings(tpu_report) == []


@needs_tpu
def test_a_tag_on_no_saved_value_offloads_nothing_and_says_why():
    r = sv.explain(fx.step_of(fx.layer_output_tagged), *_args(list(topology("v5e:2x2").devices)))
    assert not [t for t in r.host_transfers if t.role == "offload"]
    (f,) = _findings(r)
    assert (
        f.title == "'act' (remat policy) was asked to live in pinned_host memory but stays in HBM"
    )
    assert "tags 'act' only on values the backward pass does not save" in f.why


def test_on_cpu_an_offloading_policy_is_a_finding_that_says_cpu_moves_nothing():
    r = sv.explain(fx.step_of(fx.layer_tagged), *_args(jax.devices()[:4]), run=False)
    (f,) = _findings(r)
    assert f.severity == "info" and "on CPU jax lowers no offload" in f.why


def test_a_policy_naming_nothing_the_program_tags_is_a_finding():
    policy = jax.checkpoint_policies.save_and_offload_only_these_names(
        names_which_can_be_saved=[], names_which_can_be_offloaded=["acts"],
        offload_src="device", offload_dst="pinned_host",
    )  # fmt: skip

    def loss(ws, x):
        def body(x, w):
            return jax.checkpoint(fx.layer_tagged, policy=policy)(x, w), None

        return jnp.sum(jax.lax.scan(body, x, ws)[0])

    ws, x, _ = _args(jax.devices()[:4])
    (f,) = _findings(sv.explain(jax.grad(loss), ws, x, run=False))
    assert (
        "offloads 'acts', which the program never tags with checkpoint_name (it tags 'act')"
        in f.why
    )


def test_offload_policy_refuses_a_name_the_program_never_tags():
    from shardviz.capture.remat_offload import offload_policy

    ws, x, _ = _args(jax.devices()[:4])
    with pytest.raises(sv.ShardvizError) as err:
        offload_policy(fx.layer_tagged, jnp.ones((8, 8)), jnp.ones((8, 8)),
                       names=["act", "attn_out"])  # fmt: skip
    msg = str(err.value)
    assert msg.startswith(
        "offload names: 'attn_out' is never tagged in layer_tagged (it tags 'act')"
    )
    assert "checkpoint_name(x, 'name')" in msg
    assert offload_policy(fx.layer_tagged, jnp.ones((8, 8)), jnp.ones((8, 8)), names=["act"])


needs_gpu = pytest.mark.skipif(
    importlib.util.find_spec("jax_plugins.xla_cuda12") is None,
    reason="needs the shardviz[gpu] extra (CUDA plugin)",
)


@needs_gpu
def test_gpu_offloads_activations_and_its_host_output_differs_from_the_shardings():
    """jax 0.10.2's deviceless GPU devices list no memories, and NamedSharding drops its
    memory kind there: ``opt`` is compiled into HBM, and the output the program sends to
    host memory (device_put inside) carries no host kind in its sharding."""
    devices = list(topology("h100:4").devices)
    assert [a.sharding.memory_kind for a in _args(devices)] == [None, None, None]
    r = sv.explain(fx.step_of(fx.layer_tagged), *_args(devices))
    off = [t for t in r.host_transfers if t.role == "offload"]
    assert sum(t.bytes_per_step for t in off if t.direction == "to host") == fx.L * ACT
    assert _findings(r) == []
    m = r.memory
    assert (m.host_argument_bytes, m.host_output_bytes) == (0, OPT)
    assert m.offloaded_bytes == fx.L * ACT
    assert m.peak_bytes == dict(m.by_space)["default"] < m.compiler_peak_bytes
    assert "which also counts host memory (not HBM)" in str(r)
    assert m.host_mismatch == (
        "outputs placed in host memory by their shardings: 0 B (0 B) per device; the "
        "compiler keeps 4 MiB (4,194,304 B) of outputs on host"
    )
    assert "differs: outputs placed in host memory" in str(r)
    # H100's host link: PCIe Gen5, 6.4e10 B/s each way (datasheet: 128 GB/s both ways).
    assert r.estimate.host_seconds == pytest.approx((fx.L * ACT + OPT) / 6.4e10)


@needs_gpu
def test_a_memory_kind_on_a_topology_without_memories_is_refused():
    mesh = sv.Mesh(topology("h100:4").devices, (4,), ("data",))
    sds = jax.ShapeDtypeStruct((8, 4), jnp.float32)
    with pytest.raises(sv.ShardvizError, match="list no memory kinds"):
        sv.mark_sharding(sds, mesh, ("data", None), memory_kind="pinned_host")
