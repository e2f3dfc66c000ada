"""Documents read back (``from_json``) are checked for size and range before anything is drawn:
a whole number past 2**63, NaN or an infinity in a figure, nesting 10,000 deep, a schedule of a
million stages: each a ShardvizError naming the field, never an OverflowError or a
RecursionError from a view, nor minutes of drawing."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest

import shardviz as sv
from shardviz.errors import ShardvizError
from shardviz.model import _codec
from shardviz.model.compare import Comparison, MemoryBreakdown, StrategyResult
from shardviz.model.physical import PhysicalLayout
from shardviz.model.schedule import Schedule, gpipe
from shardviz.model.search import Search
from shardviz.model.serving import (
    ServingCollective,
    ServingComparison,
    ServingResult,
    SliceChoice,
    SliceTried,
)
from tests.render.report_fixtures import REPORTS

GiB = 1024**3


def _serving() -> ServingComparison:
    result = ServingResult(
        strategy="tp", mode="decode", target="v5e:2x4", chips=8,
        mesh=(("data", 1), ("tensor", 8)), batch=32, context=8192, weight_dtype="int8",
        cache_dtype="int8", weight_bytes=8 * GiB, kv_bytes=5 * GiB, working_bytes=GiB // 2,
        argument_bytes=13 * GiB, hbm_bytes=16 * GiB, kv_copies=1, weight_copies=1,
        collectives=(ServingCollective("all-reduce", ("tensor",), 161, 147 << 20, 1e-3),),
        flops=1e12, memory_seconds=0.0175, compute_seconds=0.003, collective_seconds=0.001,
        step_seconds=0.0175, bound="memory", tokens_per_second_per_chip=228.3,
        latency_seconds=0.0175, max_batch=49, sweep=((1, 9 * GiB, 10.0), (32, 13 * GiB, 228.0)),
    )  # fmt: skip
    return ServingComparison(
        model="llama", num_params=70_553_706_496, kv_bytes_per_token=163_840,
        weight_bytes_total=70_553_706_496, results=(result,),
    )  # fmt: skip


def _slice() -> SliceChoice:
    return SliceChoice(
        model="llama", chip="v5e", slice="v5e:2x4", chips=8, weight_dtype="int8",
        cache_dtype="int8", batch=8, context=4096, weight_bytes=70 * GiB, kv_bytes=10 * GiB,
        hbm_bytes_per_chip=16 * GiB, room_sequences=40,
        tried=(SliceTried("v5e:2x2", 4, 80 * GiB, 64 * GiB),),
    )  # fmt: skip


def _result(loss: float | None = 2.5) -> StrategyResult:
    report = REPORTS["dp"]()
    memory = MemoryBreakdown(1, 2, 3, 4, 5, 6, 6, 7, 8, 0, 30)
    return StrategyResult(
        "dp", "DP", "data parallel", report.mesh, report, memory, (), loss=loss,
        reference_loss=loss, loss_matches=True, step_seconds=0.01, schedule=gpipe(2, 3),
    )  # fmt: skip


def _comparison() -> Comparison:
    return Comparison("mlp", 1_000, "float32", (_result(),))


def _physical() -> PhysicalLayout:
    return sv.physical(REPORTS["dp_v5e"]())


def _search() -> Search:
    return Search("f", REPORTS["dp"]().mesh, (), "by bytes moved", memory_limit=16 * GiB)


#: Each class read back, an object of it, and a whole-number field to overflow.
DOCUMENTS = {
    "ServingComparison": (_serving, "weight_bytes_total"),
    "SliceChoice": (_slice, "weight_bytes"),
    "PhysicalLayout": (_physical, "link_bytes"),
    "Comparison": (_comparison, "num_params"),
    "Search": (_search, "memory_limit"),
    "Schedule": (lambda: gpipe(2, 3), "residual_bytes"),
}


def _with(obj, **fields) -> str:
    return json.dumps({**json.loads(obj.to_json()), **fields})


def _refused(cls, text: str, *words: str) -> str:
    with pytest.raises(ShardvizError) as err:
        cls.from_json(text)
    message = str(err.value)
    assert message.startswith(f"{cls.__name__}.from_json: ")
    assert "Fix: pass the text" in message
    for w in words:
        assert w in message, message
    return message


@pytest.fixture(scope="module", params=list(DOCUMENTS))
def document(request):
    make, field = DOCUMENTS[request.param]
    return make(), field


def test_each_document_still_comes_back_equal(document):
    obj, _ = document
    assert type(obj).from_json(obj.to_json()) == obj


def test_a_whole_number_past_2_63_is_refused_naming_its_field(document):
    obj, field = document
    cls = type(obj)
    _refused(cls, _with(obj, **{field: 10**400}), f"{field}: a whole number of 401 digits")
    _refused(cls, _with(obj, **{field: 2**63}), f"{field}: {2**63} is past the largest")
    _refused(cls, _with(obj, **{field: -(2**64)}), field)
    assert cls.from_json(_with(obj, **{field: 2**63 - 1})) is not None


def test_nesting_ten_thousand_deep_is_refused_before_it_is_parsed(document):
    obj, field = document
    cls = type(obj)
    deep = "[" * 10_000 + "]" * 10_000
    text = obj.to_json().replace(f'"{field}": ', f'"{field}": {deep}, "x": ', 1)
    _refused(cls, text, "it nests lists and objects 10,0", f"past the {_codec.MAX_DEPTH} levels")
    _refused(cls, "[" * 200_000, "200,000 deep")  # never closed: still measured, not parsed
    _refused(cls, '{"a": "' + "[" * 10_000 + '"}', "lacks field")  # brackets in a string


def test_nan_and_infinities_in_a_figure_are_refused():
    serving = _serving()
    for bad in (math.inf, -math.inf, math.nan):
        text = _with(serving, kv_bytes_per_token=bad)
        assert "Infinity" in text or "NaN" in text  # what json.dumps writes
        _refused(ServingComparison, text, "kv_bytes_per_token: ", "is not a finite number")
    _refused(ServingComparison, _with(serving, kv_bytes_per_token=1e300), "past the largest")
    text = serving.to_json().replace('"flops": 1000000000000.0', '"flops": 1e400')
    _refused(ServingComparison, text, "results[0].flops: inf is not a finite number")


def test_a_measured_loss_or_check_may_be_nan_and_comes_back():
    diverged = Comparison("mlp", 1_000, "float32", (_result(math.nan),))
    back = Comparison.from_json(diverged.to_json())
    assert math.isnan(back.results[0].loss) and math.isnan(back.results[0].reference_loss)
    report = REPORTS["dp"]()
    assert report.check is not None
    broken = replace(report, check=replace(report.check, max_abs_diff=math.nan,
                                           max_rel_diff=math.inf, matches=False))  # fmt: skip
    again = type(report).from_json(broken.to_json())
    assert again.check is not None and math.isnan(again.check.max_abs_diff)
    assert again.check.max_rel_diff == math.inf


def test_a_schedule_of_a_million_stages_is_refused_not_drawn():
    s = gpipe(2, 3)
    _refused(Schedule, _with(s, stages=10**6), "stages: 1000000 is outside", "(1 to 128)")
    _refused(Schedule, _with(s, stages=0), "stages: 0 is outside")
    _refused(Schedule, _with(s, microbatches=10**6), "microbatches: ")
    doc = json.loads(s.to_json())
    doc["slots"][1]["time"] = 10**9  # one slot a billion units late: a row of a billion cells
    _refused(Schedule, json.dumps(doc), "slots[1].time: 1000000000 is outside")
    doc = json.loads(s.to_json())
    doc["slots"] = doc["slots"] * 20_000
    _refused(Schedule, json.dumps(doc), "slots: 240,000 items, more than the 65,536")
    big = gpipe(8, 32)
    assert Schedule.from_json(big.to_json()) == big


def test_a_physical_layout_of_a_huge_target_is_refused():
    p = _physical()
    doc = json.loads(p.to_json())
    doc["target"]["shape"], doc["target"]["wraparound"] = [4096, 4096], [False, False]
    _refused(PhysicalLayout, json.dumps(doc), "target.chips: 16777216 is more than the 16,384")
    doc["target"]["shape"], doc["target"]["wraparound"] = [2] * 5, [False] * 5
    _refused(PhysicalLayout, json.dumps(doc), "target.shape: ")
    doc = json.loads(p.to_json())
    doc["links"] = doc["links"] * 30_000
    _refused(PhysicalLayout, json.dumps(doc), "links: ", "more than the 262,144")


def test_counts_declared_on_the_other_classes_are_enforced():
    serving = json.loads(_serving().to_json())
    serving["results"] = serving["results"] * 1025
    _refused(ServingComparison, json.dumps(serving), "results: 1,025 items")
    choice = json.loads(_slice().to_json())
    choice["tried"] = choice["tried"] * 1025
    _refused(SliceChoice, json.dumps(choice), "tried: 1,025 items")


def test_a_limit_inside_an_optional_field_is_named_not_swallowed_by_the_union():
    doc = json.loads(_serving().to_json())
    doc["results"][0]["working_bytes"] = 10**30  # int | None
    _refused(ServingComparison, json.dumps(doc), "results[0].working_bytes: ", "past the largest")
    cmp = json.loads(_comparison().to_json())
    cmp["results"][0]["schedule"]["stages"] = 10**6  # Schedule | None
    _refused(Comparison, json.dumps(cmp), "results[0].schedule.stages: 1000000 is outside")


def test_text_that_is_not_a_document_is_refused_plainly():
    _refused(Schedule, "not json", "the text is not JSON")
    _refused(Schedule, "1" * 5000, "the text is not JSON")  # past Python's digit limit
    _refused(Schedule, None, "the text is not JSON")  # type: ignore[arg-type]
    s = gpipe(2, 2)
    assert Schedule.from_json(s.to_json().encode()) == s  # type: ignore[arg-type]
