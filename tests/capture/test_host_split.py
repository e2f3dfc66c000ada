"""The ledger's host split as ``explain`` fills it in: hand-made devices for the notes, then
real compiles for deviceless multi-host systems (``h100:2x8``: 2 hosts x 8 GPUs;
``v5e:16x16``: 256 chips on 64 hosts) and 8 CPU devices in one process.

The host of each device is checked against jax's own ``device.process_index`` of the
topology's devices, and the bytes against the definition in ``Collective``'s docstring: a
group of ``n`` devices on ``h > 1`` hosts sends ``moved * h / n`` across hosts per device.
"""

from __future__ import annotations

import importlib.util
import os

os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")  # as tests/capture/test_backends_live.py

from types import SimpleNamespace  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import pytest  # noqa: E402
from jax.sharding import NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

import shardviz as sv  # noqa: E402
from shardviz.capture.host_split import host_split  # noqa: E402
from shardviz.model import Collective, Device, MeshLayout, Report  # noqa: E402
from shardviz.model.units import format_bytes  # noqa: E402

HAS_TPU = importlib.util.find_spec("libtpu") is not None
HAS_GPU = importlib.util.find_spec("jax_plugins.xla_cuda12") is not None

B, D, H = 256, 1024, 4096


def train_step(w1, w2, x):
    """One SGD step of a two-layer MLP, the hidden dim split over 'model' (Megatron style)
    and the batch over 'data': activations all-reduce over 'model', gradients over 'data'."""

    def loss(w1, w2):
        return jnp.mean((jnp.tanh(x @ w1) @ w2) ** 2)

    g1, g2 = jax.grad(loss, argnums=(0, 1))(w1, w2)
    return w1 - 0.1 * g1, w2 - 0.1 * g2


def explain_on(devices, shape, names) -> Report:
    mesh = sv.Mesh(devices, shape, names).jax_mesh

    def sds(dims, spec):
        return jax.ShapeDtypeStruct(dims, jnp.float32, sharding=NamedSharding(mesh, spec))

    args = (sds((D, H), P(None, "model")), sds((H, D), P("model", None)), sds((B, D), P("data")))
    return sv.explain(train_step, *args, run=False)


def hosts_of(report: Report, devices) -> dict[int, int]:
    """Device id -> jax's process_index, from the topology's own device objects."""
    ids = set(report.mesh.device_ids)
    return {int(d.id): int(d.process_index) for d in devices if int(d.id) in ids}


def expected(c: Collective, hosts: dict[int, int]) -> int:
    """The docstring's definition, worked out from jax's process indices."""
    worst = 0
    for g in c.groups:
        h = len({hosts[d] for d in g})
        if h > 1:
            worst = max(worst, c.moved_bytes * h // len(g))
    return worst


def host_notes(report: Report) -> list[str]:
    return [n for n in report.notes if "spans hosts" in n]


# --- the notes, on hand-made devices -------------------------------------------------------


def _coll(groups, moved, axes, trips=1) -> Collective:
    return Collective(
        name="c", kind="all-reduce", in_dtype="f32", in_shape=(8,), out_dtype="f32",
        out_shape=(8,), in_bytes=moved, out_bytes=moved, moved_bytes=moved,
        group_size=len(groups[0]), groups=groups, axes=axes, trips=trips,
    )  # fmt: skip


def _mesh(names, platform="gpu", slices=(0,) * 8) -> MeshLayout:
    devices = tuple(Device(i, i // 4, platform, platform, slice_index=slices[i]) for i in range(8))
    return MeshLayout(names, (2, 4), devices)


def test_a_model_axis_across_hosts_is_called_out() -> None:
    # ('model', 'data') on 2 hosts of 4: 'model' pairs {i, i+4} cross, 'data' rows do not.
    mesh = _mesh(("model", "data"))
    ledger = (
        _coll(((0, 4), (1, 5), (2, 6), (3, 7)), 3 * 1024 * 1024, ("model",), trips=2),
        _coll(((0, 1, 2, 3), (4, 5, 6, 7)), 4096, ("data",)),
    )
    split, notes = host_split(ledger, mesh.devices, mesh, "gpu")
    assert [c.cross_host_bytes for c in split] == [3 * 1024 * 1024, 0]
    assert notes == [
        "axis 'model' spans hosts (up to 2 along it): 6 MiB per device per step cross the host "
        "boundary (1 collective over it); a model-parallel axis talks every layer, and across "
        "hosts over the network, far slower than within one: put 'model' within a host"
    ]


def test_a_data_axis_across_hosts_is_not_called_out() -> None:
    mesh = _mesh(("data", "model"))
    ledger = (_coll(((0, 4), (1, 5), (2, 6), (3, 7)), 1024, ("data",)),)
    split, notes = host_split(ledger, mesh.devices, mesh, "gpu")
    assert split[0].cross_host_bytes == 1024 and notes == []


def test_on_one_tpu_slice_the_note_says_ici() -> None:
    mesh = _mesh(("model", "data"), "tpu")
    ledger = (_coll(((0, 4), (1, 5), (2, 6), (3, 7)), 1024, ("model",)),)
    (note,) = host_split(ledger, mesh.devices, mesh, "tpu")[1]
    assert "1 KiB per device per step" in note and "over ICI" in note
    assert "put 'model'" not in note
    multi = _mesh(("model", "data"), "tpu", slices=(0,) * 4 + (1,) * 4)
    (note,) = host_split(ledger, multi.devices, multi, "tpu")[1]
    assert "2 slices joined by DCN" in note and "put 'model' within a slice" in note


def test_an_unknown_device_leaves_a_note_not_an_error() -> None:
    mesh = _mesh(("data", "model"))
    ledger = (_coll(((0, 99),), 1024, ()),)
    split, notes = host_split(ledger, mesh.devices, mesh, "gpu")
    assert split == ledger and notes == ["no cross-host split of the ledger: device 99 has no "
                                         "known process"]  # fmt: skip


# --- one process -------------------------------------------------------------------------


def test_one_process_has_nothing_across_hosts() -> None:
    r = explain_on(jax.devices()[:8], (2, 4), ("data", "model"))
    assert r.mesh.num_processes == 1 and r.collectives
    assert all(c.cross_host_bytes == 0 and c.cross_host_groups == () for c in r.collectives)
    assert host_notes(r) == [] and "across hosts" not in str(r)


# --- h100:2x8: 2 hosts of 8 GPUs -----------------------------------------------------------


@pytest.fixture(scope="module")
def h100() -> SimpleNamespace:
    if not HAS_GPU:
        pytest.skip("needs the shardviz[gpu] extra (CUDA plugin)")
    topo = sv.topology("h100:2x8")
    return SimpleNamespace(
        devices=topo.devices,
        # 'data' across the 2 hosts, 'model' within each; then the other way round.
        data_across=explain_on(topo.devices, (2, 8), ("data", "model")),
        model_across=explain_on(topo.devices, (2, 8), ("model", "data")),
    )


def test_h100_data_across_hosts(h100) -> None:
    r = h100.data_across
    hosts = hosts_of(r, h100.devices)
    assert sorted(set(hosts.values())) == [0, 1]
    data = r.collectives_of(axes=("data",))
    model = r.collectives_of(axes=("model",))
    assert data and model
    for c in data:  # pairs {i, i+8} on hosts 0 and 1: everything moved crosses
        assert all(len({hosts[d] for d in g}) == 2 for g in c.groups)
        assert c.cross_host_bytes == c.moved_bytes == expected(c, hosts) > 0
        assert c.cross_host_groups == tuple(range(len(c.groups)))
    for c in model:  # rows of 8 on one host each
        assert all(len({hosts[d] for d in g}) == 1 for g in c.groups)
        assert c.cross_host_bytes == 0 and c.cross_host_groups == ()
    assert host_notes(r) == []  # data parallel across hosts is the intended layout


def test_h100_model_across_hosts_is_called_out(h100) -> None:
    r = h100.model_across
    hosts = hosts_of(r, h100.devices)
    model = r.collectives_of(axes=("model",))
    assert model and r.collectives_of(axes=("data",))
    for c in r.collectives:
        assert c.cross_host_bytes == expected(c, hosts)
        assert (
            (c.cross_host_bytes == c.moved_bytes > 0)
            if c.axes == ("model",)
            else (c.cross_host_bytes == 0)
        )
    per_step = sum(c.cross_host_bytes * (c.trips or 1) for c in model)
    (note,) = host_notes(r)
    assert note.startswith(
        f"axis 'model' spans hosts (up to 2 along it): {format_bytes(per_step)} per device per step"
    )
    assert "put 'model' within a host" in note and "'data'" not in note


def test_h100_views_show_the_split(h100) -> None:
    r = h100.model_across
    lines = str(r).splitlines()
    crossing = sum(c.cross_host_bytes for c in r.collectives)
    k = next(i for i, x in enumerate(lines) if x.startswith("Collectives"))
    assert f"{format_bytes(crossing)} across hosts (2 hosts)" in lines[k]
    assert lines[k + 1].split()[:6] == ["#", "kind", "operand", "in", "moved", "across"]
    html = r._repr_html_()
    assert html.count("data-cross-host=") == len(r.collectives)


# --- v5e:16x16: 256 chips, 64 hosts of 4 ---------------------------------------------------


@pytest.fixture(scope="module")
def v5e() -> SimpleNamespace:
    if not HAS_TPU:
        pytest.skip("needs the shardviz[tpu] extra (libtpu)")
    topo = sv.topology("v5e:16x16")
    return SimpleNamespace(
        devices=topo.devices, report=explain_on(topo.devices, (16, 16), ("data", "model"))
    )


def test_v5e_which_axis_spans_hosts(v5e) -> None:
    """On a (16, 16) mesh of v5e:16x16 each host holds 4 chips of one mesh row: a 'model'
    row of 16 runs over 4 hosts, a 'data' column over 16 (one chip on each)."""
    r = v5e.report
    hosts = hosts_of(r, v5e.devices)
    assert r.mesh.num_processes == 64 and len(set(hosts.values())) == 64
    rows = [r.mesh.device_ids[16 * i : 16 * (i + 1)] for i in range(16)]
    assert all(len({hosts[d] for d in row}) == 4 for row in rows)
    assert all(len({hosts[row[j]] for row in rows}) == 16 for j in range(16))
    model = r.collectives_of(axes=("model",))
    data = r.collectives_of(axes=("data",))
    assert model and data
    for c in model:  # 4 hosts among 16: 4 of 16 hops cross
        assert c.cross_host_bytes == c.moved_bytes * 4 // 16 == expected(c, hosts) > 0
        assert len(c.cross_host_groups) == len(c.groups) == 16
    for c in data:  # one chip per host: every hop crosses
        assert c.cross_host_bytes == c.moved_bytes == expected(c, hosts) > 0
    (note,) = host_notes(r)  # 'model' only; on one slice it says the bytes stay on ICI
    per_step = sum(c.cross_host_bytes * (c.trips or 1) for c in model)
    assert note.startswith(f"axis 'model' spans hosts (up to 4 along it): {format_bytes(per_step)}")
    assert "over ICI" in note
