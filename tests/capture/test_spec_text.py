"""Spec text as typed in the explorer's boxes: read with a tokenizer, written back in jax's spelling."""

from __future__ import annotations

import pytest

from shardviz.capture.spec_text import format_spec_text, parse_spec_text
from shardviz.errors import SpecError

# --- parse_spec_text ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "spec"),
    [
        ("('data', None)", ("data", None)),
        ("data, None", ("data", None)),
        ('"data", None', ("data", None)),
        ("(('data','model'), None)", (("data", "model"), None)),
        ("(data, model), None", (("data", "model"), None)),
        ("P('data', None)", ("data", None)),
        ("PartitionSpec('data', None)", ("data", None)),
        ("jax.sharding.PartitionSpec(None, 'model')", (None, "model")),
        ("P(('data', 'model'),)", (("data", "model"),)),
        ("P('data',)", ("data",)),
        ("data", ("data",)),
        ("('data')", ("data",)),
        ("('data', 'model')", ("data", "model")),
        ("((data, model))", ("data", "model")),
        ("((data, model),)", (("data", "model"),)),
        ("[data, None]", ("data", None)),
        ("data,", ("data",)),
        ("0, None", (0, None)),
        ("P(None)", (None,)),
        ("None", ()),
        ("", ()),
        ("   ", ()),
        ("P()", ()),
    ],
)
def test_parse_spec_text_accepts_what_users_type(text, spec):
    assert parse_spec_text(text) == spec


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("(data", "never closed"),
        ("data None", "expected a comma"),
        ("data,,None", "two commas"),
        ("P(data), None", "must wrap the whole spec"),
        ("((a, (b)), None)", "cannot hold another tuple"),
        ("(None, a), b", "None cannot be inside"),
        ("'data", "quote"),
        ("da$ta", r"'\$ta' is not an axis name"),
        ("(data]", "closed by"),
        ("__import__('os').system('true')", "is not an axis name"),  # never evaluated
        ("(), None", "empty tuple"),
    ],
)
def test_parse_spec_text_says_what_to_type(text, why):
    with pytest.raises(SpecError, match=why) as info:
        parse_spec_text(text, name="params/w1")
    msg = str(info.value)
    assert "'params/w1'" in msg
    assert "Fix: type one entry per dim" in msg


@pytest.mark.parametrize(
    "spec", [("data", None), (("data", "model"), None), (), (None,), ("model",), (0, 1)]
)
def test_format_spec_text_reads_back(spec):
    assert parse_spec_text(format_spec_text(spec)) == spec


def test_format_spec_text_takes_the_models_spec_too():
    assert format_spec_text((("data",), ())) == "P('data', None)"
