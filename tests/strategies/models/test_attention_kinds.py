"""The decoder's attention kinds: Pallas kernels run per shard in a sharded step, chosen by
'auto' on TPU meshes, refused with a fix where they cannot run."""

from __future__ import annotations

import pytest

import shardviz as sv
from shardviz.errors import ShardvizError
from shardviz.strategies.models import decoder_model

from .small import small

SIZES = {k: v for k, v in small("llama3.1-8b").items() if k != "batch"}
#: A width the TPU kernels take (head_dim 128: a whole lane tile), compiled in seconds.
TPU_SIZES = dict(SIZES, d_model=256, ffn=512, heads=8, head_dim=128, seq=512,
                 attention_block=128, compute_dtype="bfloat16")  # fmt: skip


def test_the_kernels_run_per_shard_and_match_one_device_on_cpu() -> None:
    """On CPU devices the kernels are interpreted, inside a shard_map over the strategy's
    specs: FSDP splits the batch, FSDP+TP the heads too; both match one device."""
    c = sv.compare("llama3.1-8b", ["fsdp", "fsdp+tp"], batch_per_device=1, steps=1,
                   attention="pallas", **SIZES)  # fmt: skip
    for r in c.results:
        assert r.report.check is not None and r.report.check.matches, r.strategy


@pytest.fixture(scope="module")
def tpu_plans() -> dict[str, sv.Comparison]:
    return {
        kind: sv.compare(
            "llama3.1-8b",
            ["fsdp+tp"],
            target="v5e:2x4",
            batch_per_device=1,
            attention=kind,
            **TPU_SIZES,
        )  # fmt: skip
        for kind in ("blockwise", "auto")
    }


def test_auto_takes_the_kernels_on_tpu_same_model_flops_no_more_hbm_traffic(tpu_plans) -> None:
    blockwise = tpu_plans["blockwise"].results[0].report.cost
    kernels = tpu_plans["auto"].results[0].report.cost
    assert blockwise is not None and kernels is not None
    # The kernels declare their flops: forward 4, dK/dV 8, dQ 6 (recomputation) x B H S^2 K.
    kinds = {op.name.split(".")[0] for op in kernels.ops if op.name.startswith("flash_")}
    assert kinds == {"flash_forward", "flash_backward_dkv", "flash_backward_dq"}
    assert not any(op.name.startswith("flash_") for op in blockwise.ops)
    # The same model flops (attention's matmuls as computed, recomputation once) either way.
    assert kernels.model_flops_per_device == pytest.approx(blockwise.model_flops_per_device)

    def hbm(cost) -> float:
        return sum(op.hbm_bytes * op.runs for op in cost.ops)

    # The kernels' score blocks stay in VMEM. So do the blockwise loop's at this size: the
    # TPU compiler fuses each block's scores, and its K/V block reads are counted as the
    # slices they are (8.8 MB against 11.0 MB here; equal at SL 1024). Counting the whole
    # K/V buffer per block, as before 2026-11-30, made blockwise look 3x heavier.
    assert hbm(kernels) <= hbm(blockwise)


@pytest.mark.parametrize(
    ("strategy", "target", "words"),
    [
        ("sp", None, "sequence is split"),
        ("fsdp", "h100:8", "TPU kernels"),
    ],
)
def test_the_kernels_are_refused_where_they_cannot_run(strategy, target, words) -> None:
    with pytest.raises(ShardvizError, match=words) as err:
        sv.compare("llama3.1-8b", [strategy], batch_per_device=1, target=target, steps=1,
                   attention="pallas", **SIZES)  # fmt: skip
    assert "attention='blockwise'" in str(err.value)


def test_an_unknown_attention_kind_lists_the_kinds() -> None:
    with pytest.raises(ShardvizError, match="'auto', 'blockwise', 'pallas'"):
        decoder_model("llama3.1-8b", attention="flash")
