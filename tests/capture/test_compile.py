"""The compiled program's final module is parsed once and read by the ledger and the loops."""

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from shardviz.capture import hlo
from shardviz.capture.compile import _rejected, lower_and_compile


def _layers(w, x):
    """Four layers in a scan: the gradient all-reduce runs inside the loop."""

    def body(h, wi):
        return jnp.tanh(h @ wi), None

    return jax.lax.scan(body, x, w)[0].sum()


def test_final_module_is_parsed_once_and_reads_as_the_text():
    mesh = jax.make_mesh((8,), ("data",), devices=jax.devices()[:8])
    w = jax.device_put(np.ones((4, 16, 16), np.float32), NamedSharding(mesh, P()))
    x = jax.device_put(np.ones((32, 16), np.float32), NamedSharding(mesh, P("data")))
    jitted = jax.jit(jax.grad(_layers))
    comp = lower_and_compile(jitted, (w, x), {}, "layers")

    module = comp.module()
    assert comp.module() is module
    assert hlo.collectives(module) == hlo.collectives(comp.hlo_text)
    trips = hlo.collective_trip_counts(module)
    assert trips == hlo.collective_trip_counts(comp.hlo_text)
    assert " while(" in comp.hlo_text and 4 in trips.values()


def test_a_kernel_over_scoped_vmem_is_not_called_an_hbm_overflow():
    """TPU's CompileTimeScopedVmemOom (splash attention's 2048-blocks without MaxText's
    flag) is a kernel's on-chip scratch: the fix is the blocks or the VMEM limit, not FSDP."""
    err = RuntimeError(
        "RESOURCE_EXHAUSTED: E1001: CompileTimeScopedVmemOom: Ran out of memory in memory "
        "space vmem while allocating on stack for %splash_mha_dkv"
    )
    text = str(_rejected("train_step", err))
    assert "scoped VMEM" in text and "xla_tpu_scoped_vmem_limit_kib" in text
    assert "does not fit on a device" not in text
    hbm = str(_rejected("train_step", RuntimeError("RESOURCE_EXHAUSTED: Ran out of memory in HBM")))
    assert "does not fit on a device" in hbm
