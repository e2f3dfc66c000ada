"""Hand-built :class:`~shardviz.model.Findings` for the findings views' tests.

Nothing here imports jax. The findings are named after the Megatron MLP of
:func:`.report_fixtures.megatron_report` (function ``mlp_block``) and attached to it to test
where the report shows them; their figures are made up (a loop, ledger numbers #2 and #3 that
report does not have), only consistent with each other: bytes per device, 12 trips of a
512 KiB all-gather move 6 MiB per step.
"""

from __future__ import annotations

import dataclasses

from shardviz.model import Finding, FindingCost, Findings, Fix, FixCheck, Outcome, Report, Where

from .report_fixtures import NASTY, megatron_report

KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB
TRAIN = "/home/ada/shardviz-demo/train.py"


def over_hbm() -> Finding:
    """An error with a spec fix that was checked and helps, with estimated seconds."""
    return Finding(
        kind="over-hbm",
        severity="error",
        title="Peak memory 21 GiB per device is over the v5e's 16 GiB of HBM",
        why=(
            "Every device holds all of params/w1 (16 GiB) because its spec replicates it over "
            "both mesh axes, so the program needs 21 GiB on each device and will not fit. "
            "Splitting the weight over 'model' leaves each device a quarter of it."
        ),
        cost=FindingCost("memory", 21 * GiB),
        where=Where(
            line=f"{TRAIN}:12",
            chain="train_step",
            leaf="params/w1",
            spec=((), ()),
            devices=(0, 1, 2, 3, 4, 5, 6, 7),
        ),
        fix=Fix(
            kind="spec",
            description="place params/w1 split over 'model' on its output dim",
            code='params["w1"] = jax.device_put(params["w1"], NamedSharding(mesh, P(None, "model")))',
            leaf="params/w1",
            spec=((), ("model",)),
        ),
        check=FixCheck(
            before=Outcome(1, 96 * KiB, 21 * GiB, 16_908_288.0, 0, 1.2e-3),
            after=Outcome(1, 96 * KiB, 9 * GiB, 16_908_288.0, 0, 1.2e-3),
            helps=True,
            verdict="peak 21 GiB -> 9 GiB per device, under the 16 GiB of HBM",
        ),
    )


def loop_collective() -> Finding:
    """A warning with a constraint fix; the check's estimate is known only after the fix."""
    return Finding(
        kind="loop-collective",
        severity="warning",
        title="w1 is all-gathered inside the scan: 12 times per step",
        why=(
            "The scan body reads params/w1, which is split over 'data', and the matmul needs "
            "it whole, so the partitioner gathers it on every one of the 12 iterations: 6 MiB "
            "moved per device per step where one gather before the loop would move 512 KiB."
        ),
        cost=FindingCost("moved", 6 * MiB, 4.8e-4),
        where=Where(
            line=f"{TRAIN}:44",
            chain="train_step > scan > mlp",
            code="h = jnp.tanh(x @ params['w1'])",
            leaf="params/w1",
            spec=(("data",), ()),
            collectives=(2, 3),
            values=("all-gather.7", "dot.8"),
        ),
        fix=Fix(
            kind="constraint",
            description="gather w1 once before the loop: constrain it to P(None, 'model')",
            code="w1 = jax.lax.with_sharding_constraint(params['w1'], P(None, 'model'))",
            leaf="params/w1",
            spec=((), ("model",)),
        ),
        check=FixCheck(
            before=Outcome(3, 6 * MiB + 96 * KiB, 2 * MiB, 16_908_288.0, 0, None),
            after=Outcome(2, 608 * KiB, 2 * MiB + 512 * KiB, 16_908_288.0, 0, 5.1e-5),
            helps=True,
            verdict="moved 6.1 MiB -> 608 KiB per device per step",
        ),
    )


def idle_axis() -> Finding:
    """Info without a fix: repeated work, and devices."""
    return Finding(
        kind="idle-axis",
        severity="info",
        title="Nothing is split over mesh axis 'data' in the loss: its devices repeat the work",
        why="No argument or value of the loss is split over 'data'.",
        cost=FindingCost("work", 0, flops=134_217_728),
        where=Where(devices=(4, 5, 6, 7)),
        unfixed="the change tried did not help (flops per device unchanged)",
    )


def findings() -> Findings:
    """Three findings, most severe first, and two notes."""
    return Findings(
        function="mlp_block",
        items=(over_hbm(), loop_collective(), idle_axis()),
        notes=(
            "regather: the trip count of while.3 is unknown, so its collectives count once.",
            "uneven: not checked for values without a named spec.",
        ),
    )


def no_findings() -> Findings:
    return Findings(function="mlp_block")


def nasty_findings() -> Findings:
    """User strings everywhere a finding shows them."""
    f = loop_collective()
    return Findings(
        function=f"step{NASTY}",
        items=(
            dataclasses.replace(
                f,
                title=f"title {NASTY}",
                why=f"why {NASTY}",
                where=dataclasses.replace(
                    f.where,
                    line=f"{NASTY}.py:3",
                    chain=f"chain {NASTY}",
                    code=f"code {NASTY}",
                    leaf=f"params/{NASTY}",
                    values=(f"value {NASTY}",),
                ),
                fix=dataclasses.replace(
                    f.fix, description=f"description {NASTY}", code=f"code {NASTY}"
                ),
                check=dataclasses.replace(f.check, verdict=f"verdict {NASTY}"),
            ),
        ),
        notes=(f"note {NASTY}",),
    )


def megatron_with_findings(found: Findings | None = None) -> Report:
    """The Megatron report with findings attached (by default :func:`findings`)."""
    return dataclasses.replace(megatron_report(), findings=findings() if found is None else found)
