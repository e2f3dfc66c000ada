"""Spec checking: each mistake gives a SpecError naming the array, the dim, the axis and the fix."""

import pytest
from jax.sharding import PartitionSpec as P

from shardviz.capture.spec import normalize_spec
from shardviz.errors import ShardvizError, SpecError

NAMES = ("data", "model")
SIZES = (2, 4)


def norm(spec, shape=(8, 8), **kw):
    return normalize_spec(spec, shape, NAMES, SIZES, name="w1", **kw)


def test_entries_by_name_index_tuple_and_none():
    assert norm(("data", None)) == (("data",), ())
    assert norm((1, 0)) == (("model",), ("data",))
    assert norm(((0, "model"),)) == (("data", "model"), ())
    assert norm(None) == ((), ())
    assert norm("model") == (("model",), ())
    assert normalize_spec((), (), NAMES, SIZES) == ()


def test_short_spec_is_padded_with_unsplit_dims():
    assert norm(("data",), shape=(8, 4, 2)) == (("data",), (), ())


def test_unknown_axis_names_array_dim_axis_and_suggests():
    with pytest.raises(SpecError) as err:
        norm((None, "modle"))
    msg = str(err.value)
    for part in ("'w1'", "dim 1", "'modle'", "did you mean 'model'", "Fix:"):
        assert part in msg


def test_axis_used_twice_names_both_dims():
    with pytest.raises(SpecError) as err:
        norm(("data", "data"))
    msg = str(err.value)
    assert "dim 1" in msg and "dim 0" in msg and "'data'" in msg and "Fix:" in msg
    with pytest.raises(SpecError, match="this dim"):
        norm((("model", "model"), None))


def test_spec_longer_than_rank():
    with pytest.raises(SpecError) as err:
        norm(("data", None, None))
    assert "rank 2" in str(err.value) and "3 entries" in str(err.value)


def test_uneven_split_says_what_jax_does():
    with pytest.raises(SpecError) as err:
        norm(("model", None), shape=(6, 8))
    msg = str(err.value)
    assert "size 6" in msg and "'model'" in msg and "pad" in msg and "dim 0 to 8" in msg
    assert "replicate it with None" in msg
    assert norm(("model", None), shape=(6, 8), allow_uneven=True) == (("model",), ())


def test_unconstrained_has_no_placement_to_show():
    with pytest.raises(SpecError) as err:
        norm((None, P.UNCONSTRAINED))
    msg = str(err.value)
    assert "dim 1" in msg and "UNCONSTRAINED" in msg and "Fix: name an axis, or None" in msg


def test_an_axis_splits_one_dim_and_a_tuple_splits_over_several():
    assert norm(P(("data", "model"), None), shape=(16, 8)) == (("data", "model"), ())
    assert norm(P(None, ("model",))) == ((), ("model",))


def test_bad_entries():
    with pytest.raises(SpecError, match="out of range"):
        norm((2,))
    with pytest.raises(SpecError, match="is a float"):
        norm((1.5,))
    with pytest.raises(SpecError, match="not a sequence"):
        norm(object())


def test_errors_share_one_base_and_builtin():
    with pytest.raises(ShardvizError):
        norm(("x",))
    with pytest.raises(ValueError):
        norm(("x",))
