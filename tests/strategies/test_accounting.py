"""ZeRO accounting: hand-computed figures, errors, monotonicity, and agreement with the compiler."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from hypothesis import given
from hypothesis import strategies as st
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from shardviz.errors import ShardvizError
from shardviz.strategies.accounting import (
    ProjectionRow,
    StateBytes,
    count_params,
    model_state_bytes,
    projection_table,
)
from shardviz.strategies.zoo import get_model, init_train_state, make_train_step

PSI = 7_500_000_000  # the ZeRO paper's example: 7.5B parameters on N_d = 64 GPUs, K = 12


def test_zero_paper_figure_7_5b_on_64() -> None:
    def at(stage: int) -> StateBytes:
        return model_state_bytes(PSI, zero_stage=stage, data_parallel=64)

    # stage 0: (2 + 2 + 12) * 7.5e9 = 120 GB on every device
    assert at(0) == StateBytes(15_000_000_000, 15_000_000_000, 90_000_000_000, 120_000_000_000)
    # stage 1: 2 * 7.5e9 + 2 * 7.5e9 + 12 * 7.5e9 / 64 = 15 + 15 + 1.40625 = 31.40625 GB ("31.4")
    assert at(1) == StateBytes(15_000_000_000, 15_000_000_000, 1_406_250_000, 31_406_250_000)
    # stage 2: 2 * 7.5e9 + (2 + 12) * 7.5e9 / 64 = 15 + 0.234375 + 1.40625 = 16.640625 GB ("16.6")
    assert at(2) == StateBytes(15_000_000_000, 234_375_000, 1_406_250_000, 16_640_625_000)
    # stage 3: 16 * 7.5e9 / 64 = 1.875 GB ("1.9")
    assert at(3) == StateBytes(234_375_000, 234_375_000, 1_406_250_000, 1_875_000_000)


def test_trillion_parameters_on_1024_devices() -> None:
    # 16 bytes * 1e12 = 16 TB; / 1024 = 15.625 GB per device at stage 3
    got = model_state_bytes(1e12, zero_stage=3, data_parallel=1024)
    assert got.total == 16 * 10**12 // 1024 == 15_625_000_000


def test_tensor_parallel_divides_everything() -> None:
    # tp = 8 and dp = 8: stage 0 splits all 120 GB by 8; stage 3 by 64
    tp0 = model_state_bytes(PSI, zero_stage=0, data_parallel=8, tensor_parallel=8)
    assert tp0 == StateBytes(1_875_000_000, 1_875_000_000, 11_250_000_000, 15_000_000_000)
    tp3 = model_state_bytes(PSI, zero_stage=3, data_parallel=8, tensor_parallel=8)
    assert tp3 == model_state_bytes(PSI, zero_stage=3, data_parallel=64)
    # stage 1 with tp = 4, dp = 16: (2 + 2) * 7.5e9 / 4 + 12 * 7.5e9 / 64
    tp1 = model_state_bytes(PSI, zero_stage=1, data_parallel=16, tensor_parallel=4)
    assert tp1.total == 7_500_000_000 + 1_406_250_000


def test_each_component_rounds_up() -> None:
    # 10 params on 3 ranks, stage 3: ceil(20 / 3) + ceil(20 / 3) + ceil(120 / 3) = 7 + 7 + 40
    assert model_state_bytes(10, zero_stage=3, data_parallel=3) == StateBytes(7, 7, 40, 54)
    # fp32 Adam without a master copy: 4 + 4 + 8 bytes; half-byte params round up too
    assert model_state_bytes(
        3, zero_stage=0, data_parallel=1, param_bytes=0.5, grad_bytes=4, optimizer_bytes=8
    ) == StateBytes(2, 12, 24, 38)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"zero_stage": 4}, "zero_stage=4 is not a ZeRO stage"),
        ({"zero_stage": -1}, "zero_stage=-1 is not a ZeRO stage"),
        ({"zero_stage": True}, "zero_stage=True is not a ZeRO stage"),
        ({"data_parallel": 0}, "data_parallel=0 is not an integer >= 1"),
        ({"data_parallel": 2.5}, "data_parallel=2.5 is not an integer >= 1"),
        ({"tensor_parallel": 0}, "tensor_parallel=0 is not an integer >= 1"),
        ({"num_params": -5}, "num_params=-5 is not an integer >= 0"),
        ({"num_params": 7.5}, "num_params=7.5 is not an integer"),
        ({"optimizer_bytes": -12}, "optimizer_bytes=-12 is not a number of bytes"),
        ({"param_bytes": "bf16"}, "param_bytes='bf16' is not a number of bytes"),
    ],
)
def test_bad_inputs(kwargs: dict, match: str) -> None:
    args = {"num_params": 1000, "zero_stage": 1, "data_parallel": 8, **kwargs}
    num_params = args.pop("num_params")
    with pytest.raises(ShardvizError, match=match) as err:
        model_state_bytes(num_params, **args)
    assert "Fix:" in str(err.value)


@given(
    num_params=st.integers(0, 10**13),
    data_parallel=st.integers(1, 8192),
    tensor_parallel=st.integers(1, 64),
    stage=st.integers(0, 2),
    more=st.integers(1, 4096),
)
def test_totals_never_grow_with_stage_or_data_parallel(
    num_params: int, data_parallel: int, tensor_parallel: int, stage: int, more: int
) -> None:
    def total(stage: int, dp: int) -> int:
        return model_state_bytes(
            num_params, zero_stage=stage, data_parallel=dp, tensor_parallel=tensor_parallel
        ).total

    assert total(stage + 1, data_parallel) <= total(stage, data_parallel)
    assert total(stage, data_parallel + more) <= total(stage, data_parallel)
    assert total(3, data_parallel + more) <= total(3, data_parallel)


def test_projection_table() -> None:
    rows = projection_table(
        [1e6, 7.5e9, 1e12], [8, 64, 1024, 4096], hbm_bytes=80e9, zero_stages=(0, 3)
    )
    assert len(rows) == 3 * 4 * 2
    assert all(isinstance(r, ProjectionRow) for r in rows)
    assert [(r.num_params, r.devices, r.zero_stage) for r in rows[:3]] == [
        (1_000_000, 8, 0),
        (1_000_000, 8, 3),
        (1_000_000, 64, 0),
    ]
    by_key = {(r.num_params, r.devices, r.zero_stage): r for r in rows}
    assert by_key[(7_500_000_000, 64, 0)].total == 120_000_000_000
    assert by_key[(7_500_000_000, 64, 0)].fits is False  # 120 GB > 80 GB
    assert by_key[(7_500_000_000, 64, 3)].fits is True
    assert by_key[(10**12, 4096, 3)].total == 16 * 10**12 // 4096
    assert by_key[(10**12, 1024, 0)].to_dict()["hbm_bytes"] == 80_000_000_000
    assert all(r.fits is None for r in projection_table([1e9], [8]))


def test_projection_table_with_tensor_parallel() -> None:
    rows = projection_table([7.5e9], [64], tensor_parallel=8, zero_stages=(0,))
    assert (rows[0].data_parallel, rows[0].tensor_parallel, rows[0].total) == (8, 8, 15 * 10**9)
    with pytest.raises(ShardvizError, match=r"device counts \[1, 4\] do not divide"):
        projection_table([7.5e9], [1, 4, 8], tensor_parallel=8)


def test_count_params() -> None:
    tree = {
        "a": np.zeros((3, 4)),
        "b": [jnp.zeros(5), jax.ShapeDtypeStruct((2, 2), jnp.float32)],
        "c": None,
    }
    assert count_params(tree) == 12 + 5 + 4
    params = {"w": jnp.zeros((8, 4))}
    assert count_params(optax.adam(1e-3).init(params)) == 2 * 32 + 1  # mu, nu and the count


# --- agreement with the compiler ----------------------------------------------------------


def _placed(tree, mesh: Mesh, spec_of) -> object:
    return jax.tree.map(
        lambda leaf: jax.ShapeDtypeStruct(
            leaf.shape, leaf.dtype, sharding=NamedSharding(mesh, spec_of(leaf))
        ),
        tree,
    )


def _dim0(axis):
    """Split the first dim over ``axis`` (ZeRO's flat split, as FSDP does it); scalars replicate."""
    return lambda leaf: P(axis) if leaf.ndim else P()


def _replicated(leaf) -> P:
    return P()


def _megatron(leaf) -> P:
    """MLP tensor parallel over "model": w1 and b1 by column, w2 by row, b2 replicated."""
    if leaf.ndim == 0:
        return P()
    if leaf.shape == (128, 512):
        return P(None, "model")
    if leaf.shape in ((512, 128), (512,)):
        return P("model")
    return P()


def _argument_state_bytes(model, mesh, param_spec, opt_spec, batch_axis) -> tuple[int, int]:
    """Compiled per-device argument bytes of the train step, minus the batch's share."""
    params, opt_state, batch = jax.eval_shape(
        lambda k: init_train_state(model, k), jax.random.key(0)
    )
    args = (
        _placed(params, mesh, param_spec),
        _placed(opt_state, mesh, opt_spec),
        _placed(batch, mesh, lambda leaf: P(batch_axis)),
    )
    compiled = jax.jit(make_train_step(model)).lower(*args).compile()
    batch_share = sum(
        leaf.size * leaf.dtype.itemsize // mesh.shape[batch_axis] for leaf in jax.tree.leaves(batch)
    )
    return compiled.memory_analysis().argument_size_in_bytes - batch_share, count_params(params)


@pytest.mark.parametrize(
    ("name", "dtype", "stage", "layout"),
    [
        ("mlp", jnp.float32, 0, "dp8"),
        ("mlp", jnp.float32, 1, "dp8"),
        ("mlp", jnp.float32, 3, "dp8"),
        ("mlp", jnp.float32, 0, "dp2xtp4"),
        ("transformer", jnp.bfloat16, 3, "dp8"),
    ],
)
def test_projection_matches_compiled_argument_bytes(
    name: str, dtype, stage: int, layout: str
) -> None:
    """The compiler's per-device argument bytes hold the parameters and the Adam state (the
    gradients are temporaries), so they must equal ``params + optimizer`` of the projection
    for Adam without a master copy (optimizer_bytes = 2 * param bytes: mu and nu), within 1%."""
    model = get_model(name, dtype=dtype)
    devices = np.array(jax.devices()[:8])
    if layout == "dp8":
        mesh = Mesh(devices, ("data",))
        tp = 1
        param_spec = _dim0("data") if stage >= 3 else _replicated
        opt_spec = _dim0("data") if stage >= 1 else _replicated
    else:
        mesh = Mesh(devices.reshape(2, 4), ("data", "model"))
        tp = 4
        param_spec = opt_spec = _megatron
    got, num_params = _argument_state_bytes(model, mesh, param_spec, opt_spec, "data")
    itemsize = jnp.dtype(dtype).itemsize
    want = model_state_bytes(
        num_params,
        zero_stage=stage,
        data_parallel=mesh.shape["data"],
        tensor_parallel=tp,
        param_bytes=itemsize,
        grad_bytes=itemsize,
        optimizer_bytes=2 * itemsize,
    )
    assert abs(got - (want.params + want.optimizer)) <= 0.01 * got, (got, want)
