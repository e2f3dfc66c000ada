"""What capture adds for the detectors, checked against hand arithmetic."""

from __future__ import annotations

from shardviz.explainer.detector_inputs import parameter_specs

from . import planted


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


def test_parameter_specs_read_from_the_named_mesh_form():
    """jax 0.12 prints the partitioner's input shardings on the named mesh, with braces inside
    the sharding (jax 0.10.2 printed the form above)."""
    m = planted.mesh()
    text = """
ENTRY %main.0 (x.0: f32[16,32], w.0: f32[32,8], b.0: f32[8]) -> f32[16,8] {
  %x.0 = f32[16,32]{1,0} parameter(0), sharding={mesh['data'=2,'model'=4], [{'data'}, {}]}, metadata={op_name="x"}
  %w.0 = f32[32,8]{1,0} parameter(1), sharding={mesh['data'=2,'model'=4], [{}, {'model'}]}, metadata={op_name="w"}
  %b.0 = f32[8]{0} parameter(2), sharding={mesh['data'=2,'model'=4], replicated}, metadata={op_name="b"}
  ROOT %dot.0 = f32[16,8]{1,0} dot(%x.0, %w.0), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""
    from shardviz.capture.mesh import mesh_layout

    specs = parameter_specs(text, mesh_layout(m), list(range(8)))
    assert specs == {"x.0": (("data",), ()), "w.0": ((), ("model",)), "b.0": ((),)}
