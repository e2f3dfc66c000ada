"""How the why texts write mesh axes and specs: as the user writes them in jax, never as a
Python tuple (``('data',)``) or with jax's one-dim tuple comma (``P('model',)``)."""

from __future__ import annotations

from shardviz.model.array import format_spec
from shardviz.model.why import why_axes, why_spec


def test_axes_read_as_names() -> None:
    assert why_axes(("data",)) == "'data'"
    assert why_axes(("data", "model")) == "'data', 'model'"
    assert why_axes(()) == "no mesh axis"


def test_a_one_dim_spec_drops_the_tuple_comma() -> None:
    assert why_spec((("model",),)) == "P('model')"
    assert why_spec(((),)) == "P(None)"
    assert why_spec((("data", "model"),)) == "P(('data', 'model'))"
    # Other specs read as format_spec writes them, and format_spec itself is unchanged.
    assert why_spec((("data",), ())) == format_spec((("data",), ())) == "P('data', None)"
    assert why_spec(()) == "P()" and why_spec(None) == format_spec(None)
    assert format_spec((("model",),)) == "P('model',)"
