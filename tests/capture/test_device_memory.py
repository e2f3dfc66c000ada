"""Device memory read while training runs: the program's devices, their statistics, the estimate."""

from __future__ import annotations

from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from shardviz.capture.device_memory import (
    compiler_memory_bytes,
    devices_memory_stats,
    program_devices_by_id,
)


@pytest.fixture(scope="module")
def compiled():
    """A program on 8 devices whose mesh lists them out of id order."""
    devices = np.array(jax.devices()[:8])[[7, 6, 5, 4, 3, 2, 1, 0]].reshape(2, 4)
    mesh = jax.sharding.Mesh(devices, ("data", "model"))
    x = jax.device_put(jnp.ones((8, 16)), NamedSharding(mesh, P("data", "model")))
    return jax.jit(lambda a: a * 2).lower(x).compile()


def test_program_devices_are_every_device_of_its_shardings_by_id(compiled):
    assert [d.id for d in program_devices_by_id(compiled)] == list(range(8))


def test_a_program_without_shardings_has_no_devices():
    assert program_devices_by_id(SimpleNamespace(input_shardings=(), output_shardings=())) == []


def test_cpu_devices_keep_no_memory_statistics():
    assert devices_memory_stats(jax.devices()[:3]) == [None, None, None]


def test_memory_statistics_are_read_from_each_device():
    class Device:
        def __init__(self, stats):
            self.stats = stats

        def memory_stats(self):
            if self.stats == "raise":
                raise RuntimeError("not supported")
            return self.stats

    devices = [Device({"bytes_in_use": 5}), Device({}), Device("raise")]
    assert devices_memory_stats(devices) == [{"bytes_in_use": 5}, None, None]


def test_compiler_memory_bytes_are_the_memory_analysis(compiled):
    ma = compiled.memory_analysis()
    assert compiler_memory_bytes(compiled) == (
        ma.argument_size_in_bytes,
        ma.output_size_in_bytes,
        ma.alias_size_in_bytes,
        ma.temp_size_in_bytes,
    )


def test_no_memory_analysis_is_an_error():
    with pytest.raises(RuntimeError, match="no memory analysis"):
        compiler_memory_bytes(SimpleNamespace(memory_analysis=lambda: None))
