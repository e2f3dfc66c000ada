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
