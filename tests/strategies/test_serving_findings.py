"""Serving findings on hand-built results: copied cache, copied weights, collective-bound;
each a program Finding of a serving kind."""

from __future__ import annotations

from dataclasses import replace

from shardviz.analysis.detect.serving import BY_HAND, serving_findings
from shardviz.model.findings import (
    FINDING_KINDS,
    PROGRAM_FINDING_KINDS,
    SERVING_FINDING_KINDS,
    Finding,
    FindingCost,
    Where,
)
from shardviz.model.serving import ExpertReads, ServingCollective, ServingResult

GiB = 1024**3

BASE = ServingResult(
    strategy="tp", mode="decode", target="v5e:2x4", chips=8,
    mesh=(("data", 1), ("sequence", 1), ("tensor", 8)), batch=32, context=8192,
    weight_dtype="int8", cache_dtype="int8", weight_bytes=8 * GiB, kv_bytes=5 * GiB,
    working_bytes=0, argument_bytes=13 * GiB, hbm_bytes=16 * GiB, kv_copies=1,
    weight_copies=1, collectives=(), flops=1e12, memory_seconds=0.017, compute_seconds=0.003,
    collective_seconds=0.001, step_seconds=0.017, bound="memory",
    tokens_per_second_per_chip=235.0, latency_seconds=0.017, max_batch=49,
)  # fmt: skip


def test_a_good_layout_has_no_findings():
    assert serving_findings([BASE]) == ()


def test_a_cache_copied_across_the_tensor_group_is_found_with_the_bytes_it_wastes():
    r = replace(BASE, strategy="tp-heads", mesh=(("data", 1), ("sequence", 2), ("tensor", 8)),
                chips=16, kv_copies=2)  # fmt: skip
    (f,) = serving_findings([r])
    assert f.kind == "kv-replicated" and f.where.strategy == "tp-heads"
    assert f.cost == FindingCost("memory", 5 * GiB // 2)
    assert f.fix is None and f.unfixed.startswith(BY_HAND) and "'tp'" in f.unfixed


def test_weights_copied_under_data_parallelism_where_tensor_parallelism_fits():
    r = replace(BASE, strategy="dp", mesh=(("data", 8), ("sequence", 1), ("tensor", 1)),
                weight_bytes=12 * GiB, weight_copies=8, kv_bytes=5 * GiB)  # fmt: skip
    over, f = serving_findings([r])  # 17 GiB > 16 GiB: over HBM, and the weights to blame
    assert over.kind == "over-hbm" and over.severity == "error" and over.cost.bytes == GiB
    assert f.kind == "weights-replicated" and f.severity == "error"
    assert f.cost.bytes == 12 * GiB - 12 * GiB // 8 and f.cost.kind == "memory"
    assert "'dp+tp' or 'tp'" in f.unfixed
    # already tensor-parallel, yet copied over data: a wider tensor axis is the fix
    both = replace(r, mesh=(("data", 2), ("sequence", 1), ("tensor", 4)), weight_copies=2)
    _, g = serving_findings([both])
    assert g.unfixed.endswith("wider tensor axis: strategy 'tp'")
    # weights too large to fit even split over every chip: only over HBM (splitting them
    # gains nothing), and its fix says the weights alone are past the HBM
    huge = replace(r, weight_bytes=8 * 17 * GiB)
    (h,) = serving_findings([huge])
    assert h.kind == "over-hbm" and "the weights alone" in h.unfixed


def test_a_step_set_by_its_collectives_names_the_largest():
    colls = (
        ServingCollective("all-reduce", ("tensor",), 160, 70_000_000, 0.02),
        ServingCollective("all-gather", ("tensor",), 2, 1_000, 1e-5),
    )
    r = replace(BASE, collectives=colls, collective_seconds=0.02, step_seconds=0.02,
                bound="collectives")  # fmt: skip
    (f,) = serving_findings([r])
    assert f.kind == "collective-bound"
    assert "160 x all-reduce over tensor" in f.why
    assert f.cost == FindingCost("moved", 70_000_000, seconds=0.02)
    assert f.where == Where(strategy="tp")


def test_expert_parallel_all_to_alls_get_a_fix_that_keeps_tokens_on_their_chips():
    # Narrower tensor groups, the dense fix, would not touch the tokens' all-to-alls.
    colls = (ServingCollective("all-to-all", ("data",), 4, 70_000_000, 0.02),)
    experts = ExpertReads(
        experts=8, experts_per_token=2, tokens=8, touched=7.2, layers=2, bytes_per_expert=1024,
        experts_per_device=1, tokens_per_expert=8, touched_per_device=0.9, held_bytes=2048,
        read_bytes=1843,
    )  # fmt: skip
    r = replace(BASE, strategy="ep", collectives=colls, collective_seconds=0.02,
                step_seconds=0.02, bound="collectives", experts=experts)  # fmt: skip
    (f,) = serving_findings([r])
    assert f.kind == "collective-bound" and "4 x all-to-all over data" in f.why
    assert "split every expert over 'tensor'" in f.unfixed and "narrower" not in f.unfixed
    dense = replace(r, experts=None, collectives=(replace(colls[0], kind="all-reduce"),))
    (g,) = serving_findings([dense])
    assert "narrower tensor groups" in g.unfixed


def test_serving_findings_are_program_findings_of_the_serving_kinds():
    r = replace(BASE, strategy="tp-heads", mesh=(("data", 1), ("sequence", 2), ("tensor", 8)),
                chips=16, kv_copies=2)  # fmt: skip
    (f,) = serving_findings([r])
    assert isinstance(f, Finding) and f.kind in SERVING_FINDING_KINDS
    assert set(SERVING_FINDING_KINDS) <= set(FINDING_KINDS)
    assert not set(SERVING_FINDING_KINDS) & set(PROGRAM_FINDING_KINDS)
    assert Finding.from_json(f.to_json()) == f
