"""Every public model object comes back from its JSON equal, not only rendering the same;
a document that is not one says which field is wrong."""

from __future__ import annotations

import json

import jax
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import shardviz as sv
from shardviz.errors import ShardvizError
from shardviz.model import Estimate, MeshLayout, Report
from shardviz.model._codec import JsonMixin
from tests.live_reports import megatron_mlp_report
from tests.render.report_fixtures import REPORTS, large_report, nasty_estimate_report, nasty_report


def _objects() -> list:
    """Objects as the suite builds them: hand-made reports (nasty strings included), a live
    explain with its cost per step, ops and estimate, a compare, a search."""
    live = megatron_mlp_report()
    ran = sv.explain(lambda a: a * 2, sv.mark_sharding(jax.numpy.ones((8, 8)),
                     sv.Mesh(range(8), (8,), ("data",)), ("data", None)), steps=1)  # fmt: skip
    estimated = sv.explain(lambda a: a @ a.T, jax.ShapeDtypeStruct((64, 64), "float32"),
                           run=False, target="v5e")  # fmt: skip
    comparison = sv.compare("mlp", ["dp", "fsdp"], steps=1, target="v5e")
    objects = [make() for make in REPORTS.values()]
    objects += [large_report(), nasty_report(), nasty_estimate_report(), live, ran, estimated]
    objects += [comparison, live.mesh, live.memory, live.arguments]
    objects += [r.estimate for r in (estimated, *(x.report for x in comparison.results))]
    objects += [live.cost, live.findings]
    # Parts without JSON of their own (a cost, the memory) travel inside their report.
    return [o for o in objects if isinstance(o, JsonMixin)]


OBJECTS = _objects()


def test_the_objects_cover_every_kind_the_suite_builds() -> None:
    kinds = {type(o).__name__ for o in OBJECTS}
    assert {"Report", "Comparison", "MeshLayout", "Estimate", "Findings"} <= kinds, kinds


def _estimate_json() -> str:
    estimate = REPORTS["dp_v5e"]().estimate
    assert estimate is not None
    return estimate.to_json()


@settings(max_examples=40, deadline=None, derandomize=True)
@given(st.sampled_from(OBJECTS))
def test_every_object_comes_back_equal(obj) -> None:
    back = type(obj).from_json(obj.to_json())
    assert back == obj
    assert back.to_json() == obj.to_json()


@pytest.mark.parametrize(
    ("cls", "text", "words"),
    [
        (Report, "not json", "the text is not JSON"),
        (Report, "[1, 2]", "Report expects an object"),
        (Report, '{"function": "f"}', "Report lacks field"),
        (MeshLayout, '{"axis_names": ["a"], "axis_sizes": ["2"], "devices": []}',
         "axis_sizes\\[0\\]: expected int"),
        (Estimate, json.dumps({**json.loads(_estimate_json()), "step_seconds": "fast"}),
         "step_seconds: expected float"),
    ],
)  # fmt: skip
def test_a_hostile_document_names_what_is_wrong(cls, text, words) -> None:
    with pytest.raises(ShardvizError, match=words) as err:
        cls.from_json(text)
    assert "Fix: pass the text" in str(err.value)
