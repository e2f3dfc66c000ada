"""What capture adds for the detectors, checked against hand arithmetic."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from shardviz.explainer.detector_inputs import parameter_specs, resident

from . import planted


def test_resident_bytes_per_device_and_lone_arrays():
    m = jax.make_mesh((8,), ("d",))
    before, _ = resident(range(8))
    split = [jax.device_put(jnp.ones((64, 8)), NamedSharding(m, P("d"))) for _ in range(3)]
    lone = jnp.ones((512, 1024), jnp.float32)  # 2 MiB on the first device
    try:
        after, lone_arrays = resident(range(8))
        # Each split array puts 8 rows x 8 x 4 B on every device; the lone one 2 MiB on d0.
        extra = {d: after[d] - before.get(d, 0) for d in range(8)}
        assert extra == {0: 3 * 256 + (2 << 20), **{d: 3 * 256 for d in range(1, 8)}}
        assert ((512, 1024), "float32", 0, 2 << 20) in lone_arrays
    finally:
        lone.delete()
        for x in split:
            x.delete()


def test_parameter_specs_read_from_the_dump():
    m = planted.mesh()
    text = """
ENTRY %main (x.0: f32[16,32], w.0: f32[32,8]) -> f32[16,8] {
  %x.0 = f32[16,32]{1,0} parameter(0), sharding={devices=[2,1,4]<=[8] last_tile_dim_replicate}
  %w.0 = f32[32,8]{1,0} parameter(1), sharding={replicated}
  ROOT %dot.0 = f32[16,8]{1,0} dot(%x.0, %w.0), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""
    from shardviz.capture.mesh import mesh_layout

    specs = parameter_specs(text, mesh_layout(m), list(range(8)))
    assert specs == {"x.0": (("data",), ()), "w.0": ((), ())}
