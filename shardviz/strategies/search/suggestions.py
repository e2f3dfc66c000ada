"""``suggest(fn, *args, mesh=..., memory_limit=...)``: search partition specs for a function's
arguments, compile-only, and rank what was tried.

The search walks the knobs of :mod:`shardviz.strategies.candidates` (the batch split, each
parameter group's spec and its optimizer state's) on a mesh:

1. **Seeds.** Every built-in strategy (or the ``strategies`` given), read onto the mesh in
   every way its axes fit (DP over each axis and over all of them, Megatron's ``model`` on
   either axis...), and the program's own structure (:mod:`.structure`: each mesh axis given
   to the batch or to one link of dims the jaxpr joins, such as ``w1``'s columns with
   ``w2``'s rows), deduplicated, those needing the fewest bytes per device first; seeds that
   leave a mesh axis idle (every device on it repeats the work) wait until the descents
   from the others have converged.
2. **Descent, best first.** From the best plan not yet descended from, each knob in turn is
   changed one step (one mesh axis moved: onto a link's dims of several leaves at once, or
   one leaf's; the batch split; the optimizer state split ZeRO-style or not; a published
   decoder's remat policy; under a memory limit, offload to pinned host memory); the first
   change that ranks better is kept, and the sweeps go on until none helps. Then the descent
   starts again from the best plan among the top :data:`BEAM` not yet descended from, until
   every one of them has been. Seeds left for later then get their turn (each descended
   from in the same way), and the search has converged only when none is left.

When the arguments' names mark no parameters (``mlp(x, w1, w2)``), the leaves the program
uses as weights (:mod:`.structure`) are searched as parameters.

Nothing is compiled twice (two choices giving the same specs compile once), and an
assignment whose arguments alone need more than the memory limit is skipped without
compiling. Every plan is compiled compile-only (``explain(fn, *ShapeDtypeStructs,
run=False)``), and ranked by :mod:`.rank`'s rule. At ``budget_s`` the search stops and
returns what it has, saying so; so it does after ``max_plans`` compiles, a cap that makes a
search try the same plans on any machine (the seeds' share is then counted in plans, not
seconds).
"""

from __future__ import annotations

import dataclasses
import math
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import numpy as np
import optax

from shardviz.capture.mesh import mesh_layout
from shardviz.errors import ArgumentError, ShardvizError, problem
from shardviz.model import Report, Spec
from shardviz.model.arguments import byte_size, finite_number, shown, whole_number
from shardviz.model.roles import argument_role, role_parts
from shardviz.model.search import Plan, Search, short_how, summarised
from shardviz.model.units import format_bytes, format_seconds
from shardviz.strategies.candidates import (
    OFFLOAD_WORDS,
    ON_HOST_WORDS,
    Choice,
    Leaf,
    Space,
    mapping_words,
    role_mappings,
)
from shardviz.strategies.models.configs import ArchConfig
from shardviz.strategies.models.remat import offloads
from shardviz.strategies.rules import RuleSet
from shardviz.strategies.rules.logical import LOGICAL_STRATEGIES
from shardviz.strategies.rules.named import get_rule_set
from shardviz.strategies.rules.plans import rule_set_of
from shardviz.strategies.runner import rule_set_for
from shardviz.strategies.search.inputs import SearchInputs, search_inputs, search_pipeline_rules
from shardviz.strategies.search.progress import Progress, compiler_quiet, progress_for, tell
from shardviz.strategies.search.rank import better, ranked, ranking_words
from shardviz.strategies.zoo import ModelDef

__all__ = ["BEAM", "SuggestedPlan", "SuggestedSearch", "memory_bytes", "suggest"]

#: How many of the best plans the search keeps descending from (a beam): it stops, converged,
#: when each of the top ``BEAM`` plans has been descended from and no move ranked better.
BEAM = 3

#: How far past the budget (a share of it) a compile may be expected to end and still start:
#: a search stops within this of its budget, or when the compile under way ends.
OVERRUN = 0.1

#: The share of the budget the seeds may use once some plan fits: the rest is the descent's
#: (on a model whose plans take seconds to compile, the seeds alone would use it all).
SEED_SHARE = 0.5


def memory_bytes(limit: int | float | str | None, name: str = "memory_limit") -> int | None:
    """A memory limit in bytes (``None`` stays ``None``): :func:`~shardviz.model.arguments.
    byte_size`'s rule, one for every call that takes a size (an int, or a string such as
    ``"2 GiB"``, ``"512MiB"``, ``"1.5 GB"``; KiB/MiB/GiB are powers of 1024, KB/MB/GB of 1000).

    Raises:
        ArgumentError: not a size, zero or negative, NaN, infinite or past 8 EiB (the message
            shows how to write one).
    """
    return byte_size(limit, name)


# --- the result ------------------------------------------------------------------------------


class SuggestedPlan(Plan):
    """A :class:`~shardviz.model.search.Plan` with its rule set (for ``compare`` and the
    Explorer)."""

    @property
    def rules(self) -> RuleSet:
        """A :class:`~shardviz.strategies.rules.RuleSet` that gives a train step's arguments
        this plan's specs: ``sv.compare(model, [plan.rules], mesh=mesh)`` runs it for real
        (on a mesh of the search's shape: ``rules.extra["mesh_shape"]``), and
        ``sv.Explorer`` shows that comparison. Gradients follow the optimizer state. A
        pipeline plan's are the pipeline's own (``pp+dp`` or ``pp`` with its stages and
        microbatches): ``compare`` pipelines the model with them."""
        mesh = self.report.mesh if self.report is not None else None
        axes = mesh.axis_names if mesh is not None else ()
        if self.pipeline is not None:
            _, stages, microbatches = self.pipeline
            rules = search_pipeline_rules(len(axes), stages, microbatches)
            devices = len(mesh.devices) if mesh is not None else stages
            shape = (stages, devices // stages) if len(rules.axes) > 1 else (stages,)
            return dataclasses.replace(
                rules, name=f"suggested {self.label}", title=f"suggested plan {self.label}",
                description=self.how, extra={**rules.extra, "mesh_shape": shape},
            )  # fmt: skip
        return rule_set_of(
            self.specs,
            axes,
            name=f"suggested {self.label}",
            title=f"suggested plan {self.label}",
            description=self.how,
            mesh_shape=mesh.axis_sizes if mesh is not None else (),
            host=("optimizer",) if self.on_host else (),
            remat=self.remat,
            activations=self.activations,
        )


class SuggestedSearch(Search):
    """A :class:`~shardviz.model.search.Search` whose plans carry rule sets, and which can
    place the searched arguments with a plan's specs."""

    @classmethod
    def from_json(cls, text: str) -> SuggestedSearch:
        """A search read back from :meth:`to_json`, equal to the one written: its plans keep
        their rule sets (``search.best.rules``). Its arguments are not in the JSON:
        :meth:`arguments` needs the search itself."""
        base = Search.from_json(text)
        plans = tuple(
            SuggestedPlan(**{f.name: getattr(p, f.name) for f in dataclasses.fields(p)})
            for p in base.plans
        )
        fields = {f.name: getattr(base, f.name) for f in dataclasses.fields(base)}
        return cls(**{**fields, "plans": plans})

    def arguments(self, plan: Plan | str | None = None) -> tuple:
        """The searched function's arguments placed with ``plan``'s specs (default: the best
        plan): real arrays are put on the devices, ``ShapeDtypeStruct`` objects get the shardings,
        so ``sv.explain(fn, *search.arguments())`` or ``sv.Explorer(fn, *search.arguments())``
        show that plan.

        Raises:
            ShardvizError: no plan fits (and none was named).
        """
        chosen = self.plan(plan) if isinstance(plan, str) else plan or self.best
        if chosen is not None and chosen.pipeline is not None:
            raise ShardvizError(
                problem(
                    f"search.arguments({chosen.label!r})",
                    "a pipeline plan trains the model pipelined (its layers stacked by stage), "
                    "so the searched arguments do not fit it",
                    "run it with compare: sv.compare(model, [plan.rules])",
                )
            )
        if chosen is None:
            raise ShardvizError(
                problem(
                    "search.arguments()",
                    "no plan fits the memory limit, so there is no best plan to place",
                    "name a plan (search.arguments('#1')), or search again with a larger "
                    "memory_limit or more devices",
                )
            )
        inputs: SearchInputs | None = getattr(self, "_inputs_of", {}).get(
            chosen.label, getattr(self, "_inputs", None)
        )
        if inputs is None:
            raise ShardvizError(
                problem(
                    "search.arguments()",
                    "this search was read back from JSON, which does not keep the arguments",
                    "place them with the plan's specs yourself (plan.specs), or search again",
                )
            )
        return inputs.place(chosen.specs, host=chosen.on_host)


# --- the search ------------------------------------------------------------------------------


class _OutOfTime(Exception):
    pass


class _Runner:
    """Compiles choices into plans (each once), within the budget and the memory limit."""

    def __init__(
        self,
        space: Space,
        inputs: SearchInputs,
        limit: int | None,
        budget: float,
        progress: Progress,
        plans: list[SuggestedPlan] | None = None,
        start: float | None = None,
        host_limit: int | None = None,
        max_plans: int | None = None,
        whole: tuple[float, int | None] | None = None,
    ) -> None:
        self.space, self.inputs, self.limit, self.budget = space, inputs, limit, budget
        #: The whole search's budget and cap, which the progress fills towards (a mesh
        #: shape's runner has its share of each).
        self.whole = (budget, max_plans) if whole is None else whole
        #: At most this many plans compiled (over every mesh shape); ``None``: no cap.
        self.max_plans = max_plans
        #: The search stopped at :attr:`max_plans`.
        self.capped = False
        self.host_limit = host_limit
        #: The least host bytes an offloaded assignment skipped for the host limit needed.
        self.least_host_skipped: int | None = None
        self.progress = progress
        self.start = time.monotonic() if start is None else start
        # Shared by the runners of several mesh shapes: labels count over all of them.
        self.plans: list[SuggestedPlan] = [] if plans is None else plans
        self.choice_of: dict[str, Choice] = {}
        self.seen: set[Choice] = set()
        self.seen_specs: set[tuple] = set()
        self.skipped = 0
        self.least_skipped: int | None = None
        self.ran_out = False
        self.errors: list[ShardvizError] = []
        self.target_name = ""
        self._last = 0.0
        #: The longest one compile took (a compile cannot be stopped: past the budget, the
        #: notes say so).
        self.longest = 0.0
        self.with_target = inputs.target is not None
        self.kept_batch: tuple[str, ...] | None = None
        #: Seeds never compiled because the search stopped first (the budget or the cap).
        self.seeds_left = 0

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def _check_time(self, ahead: float = 0.0) -> None:
        """Stop once the budget is spent, or before a compile (taking ``ahead`` seconds, as
        long as the last one) that would end more than :data:`OVERRUN` of the budget past
        it; the first plan is always compiled."""
        elapsed = self.elapsed()
        late = elapsed > self.budget or elapsed + ahead > self.budget * (1 + OVERRUN)
        if self.plans and late:
            self.ran_out = True
            raise _OutOfTime

    def _check_cap(self) -> None:
        """Stop once :attr:`max_plans` plans are compiled."""
        if self.max_plans is not None and len(self.plans) >= self.max_plans:
            self.capped = True
            raise _OutOfTime

    def over_memory(self, choice: Choice) -> bool:
        return self.limit is not None and self.space.argument_bytes(choice) > self.limit

    def over_host(self, choice: Choice) -> bool:
        return self.host_limit is not None and self.space.host_bytes(choice) > self.host_limit

    def try_choice(self, choice: Choice, how: str) -> SuggestedPlan | None:
        """The plan for ``choice`` (``None`` if seen before or over the limit unseen). A
        choice whose arguments alone exceed the memory limit is tried with its optimizer
        state offloaded instead, where the search may offload."""
        self._check_time()  # moves that compile nothing still take time on large programs
        if choice in self.seen:
            return None
        self.seen.add(choice)
        if choice.pipeline is not None:
            return self._try_pipeline(choice, how)
        if self.over_memory(choice):
            self.skipped += 1
            need = self.space.argument_bytes(choice)
            self.least_skipped = min(self.least_skipped or need, need)
            if self.space.offload_ok and not choice.offload:
                return self.try_choice(dataclasses.replace(choice, offload=True), _offloaded(how))
            return None
        if self.over_host(choice):
            self.skipped += 1
            need = self.space.host_bytes(choice)
            self.least_host_skipped = min(self.least_host_skipped or need, need)
            return None
        specs = self.space.specs(choice)
        on_host = self.space.host_paths(choice)
        if on_host and OFFLOAD_WORDS not in how and "back in HBM" not in how:
            how = f"{how} [{ON_HOST_WORDS}]"
        key = (tuple(sorted(specs.items())), on_host, choice.remat)
        acts = self.inputs.activation_specs(specs, choice.batch)

        def build() -> Report:
            # Only a zoo model's step is built from rules; any other function is compiled on
            # its arguments placed with the specs.
            rules = (
                rule_set_of(
                    specs,
                    self.inputs.jmesh.axis_names,
                    host=("optimizer",) if on_host else (),
                    remat=choice.remat,
                    activations=acts,
                )  # fmt: skip
                if self.inputs.model is not None
                else None
            )
            return self.inputs.compile(specs, rules, host=on_host)

        return self._compile(
            choice, how, key, specs, build, on_host=on_host, remat=choice.remat, activations=acts
        )

    def _try_pipeline(self, choice: Choice, how: str) -> SuggestedPlan | None:
        """The plan for a pipeline ``choice``: the model pipelined, its specs the pipeline's
        (read back from the compiled arguments)."""
        assert choice.pipeline is not None
        axis, microbatches = choice.pipeline
        return self._compile(
            choice, how, ("pipeline", choice.pipeline), {},
            lambda: self.inputs.compile_pipeline(axis, microbatches),
            read_specs=True, pipeline=(axis, self.space.axes[axis], microbatches),
        )  # fmt: skip

    def try_placement(self, specs: dict[str, Spec], how: str) -> SuggestedPlan | None:
        """The arguments' own placement (``specs``), compiled as it is (over the memory
        limit too: it is the plan the user has) and ranked with the others; the descent may
        start from it when the search's knobs can express it (:func:`_as_choice`)."""
        choice = _as_choice(self.space, specs)
        if choice is not None:
            self.seen.add(choice)
        key = (tuple(sorted(specs.items())), (), None)
        plan = self._compile(
            choice or self.space.replicated(), how, key, specs,
            lambda: self.inputs.compile(specs, None),
        )  # fmt: skip
        if plan is not None and choice is None:
            del self.choice_of[plan.label]  # no knob setting gives it: nothing to descend from
        return plan

    def _compile(
        self,
        choice: Choice,
        how: str,
        key: tuple,
        specs: dict[str, Spec],
        build: Callable[[], Report],
        read_specs: bool = False,
        **fields: Any,
    ) -> SuggestedPlan | None:
        """The plan ``build()`` compiles, once per ``key`` and within the budget (a compile
        that fails is a plan with the compiler's words); ``read_specs``: its specs are the
        compiled arguments' (a pipeline's), not ``specs``. ``fields`` are the plan's own
        (``on_host``, ``remat``, ``activations``, ``pipeline``)."""
        if key in self.seen_specs:
            return None
        self._check_cap()
        self._check_time(ahead=self._last)
        self.seen_specs.add(key)
        label = f"#{len(self.plans) + 1}"
        began = time.monotonic()
        try:
            report = build()
        except ShardvizError as err:
            self.errors.append(err)
            plan = SuggestedPlan(
                label=label, how=short_how(how), specs=specs, report=None, peak_bytes=None,
                moved_bytes=None, error=str(err), found_seconds=self.elapsed(), **fields,
            )  # fmt: skip
        else:
            if read_specs:
                specs = {x.name: x.spec for x in report.arguments if x.spec is not None}
            plan = self._plan(label, how, specs, report, **fields)
        return self._record(plan, choice, began)

    def _record(self, plan: SuggestedPlan, choice: Choice, began: float) -> SuggestedPlan:
        """Keep ``plan`` (compiled from ``choice`` since ``began``) and report progress."""
        self._last = time.monotonic() - began
        self.longest = max(self.longest, self._last)
        self.plans.append(plan)
        self.choice_of[plan.label] = choice
        best = _summary(self.best())
        if self._last > self.budget:
            best += f" (one compile took {format_seconds(self._last)}, past the whole budget)"
        budget, cap = self.whole
        tell(self.progress, len(self.plans), self.elapsed(), budget, best, cap)
        return plan

    def _plan(
        self,
        label: str,
        how: str,
        specs: dict[str, Spec],
        report: Report,
        on_host: tuple[str, ...] = (),
        remat: str | None = None,
        activations: dict[str, Spec] | None = None,
        pipeline: tuple[str, int, int] | None = None,
    ) -> SuggestedPlan:
        if self.limit is None and report.estimate is not None:  # the target's HBM
            self.limit = report.estimate.hbm_bytes
        if report.estimate is not None:
            self.target_name = report.estimate.target
        peak, host = report.memory.peak_bytes, report.memory.host_bytes
        cost = report.cost
        fits = None
        if self.limit is not None or self.host_limit is not None:
            fits = (self.limit is None or peak <= self.limit) and (
                self.host_limit is None or host <= self.host_limit
            )
        return SuggestedPlan(
            label=label, how=short_how(how), specs=specs, report=report, peak_bytes=peak,
            moved_bytes=sum(c.moved_bytes * (c.trips or 1) for c in report.collectives),
            estimated_seconds=report.estimate.step_seconds if report.estimate else None,
            flops_per_device=cost.flops_per_device if cost else None,
            flops_global=cost.flops_global if cost else None,
            fits=fits, found_seconds=self.elapsed(), host_bytes=host, on_host=on_host,
            remat=remat, activations=activations or {}, pipeline=pipeline,
        )  # fmt: skip

    def ranked(self) -> list[SuggestedPlan]:
        return ranked(self.plans, self.with_target)  # type: ignore[return-value]

    def best(self) -> SuggestedPlan | None:
        plans = self.ranked()
        return plans[0] if plans and plans[0].compiled else None

    def better(self, a: Plan, b: Plan) -> bool:
        return better(a, b, self.plans, self.with_target)

    # --- descent -----------------------------------------------------------------------

    def descend(self, start: SuggestedPlan) -> None:
        """Change one knob at a time from ``start``, keeping the first change that ranks
        better, until a whole sweep finds none."""
        current = start
        improved = True
        # Each plan's moves, worked out once (not once per knob: on a program of many
        # leaves each costs a pass over them all).
        moves_of: dict[str, dict[str, list[tuple[Choice, str]]]] = {}

        def moves(plan: SuggestedPlan) -> dict[str, list[tuple[Choice, str]]]:
            if plan.label not in moves_of:
                moves_of[plan.label] = dict(self.space.moves(self.choice_of[plan.label]))
            return moves_of[plan.label]

        while improved:
            improved = False
            # Offloading is a move for plans over the limit only: one that fits keeps HBM.
            knobs = [
                k
                for k in moves(current)
                if k != "offload" or current.fits is False or current.on_host
            ]
            for knob in knobs:
                alts = moves(current).get(knob, [])
                if current.fits is not False and not offloads(current.remat):
                    # ... and so is sending activations to host.
                    alts = [(c, w) for c, w in alts if not offloads(c.remat)]
                for choice, words in alts:
                    plan = self.try_choice(choice, f"from {current.label}: {words}")
                    if plan is not None and plan.compiled and self.better(plan, current):
                        current = plan
                        improved = True
                        break


#: How the plan of the arguments' own shardings is named.
YOUR_PLACEMENT = "your placement (the shardings the arguments came with)"


def _as_choice(space: Space, specs: dict[str, Spec]) -> Choice | None:
    """The knob settings that give exactly ``specs`` (each parameter group's spec, its
    optimizer state's, the batch split), or ``None`` when none does (two leaves of one group
    placed differently, a data leaf split off dim 0...)."""
    params = {x.inner: x.path for x in space.leaves if x.role == "params"}
    optimizer = [x for x in space.leaves if x.role == "optimizer"]
    pairs = []
    for g in space.groups:
        lead = g.members[0]
        spec = specs[params[lead]]
        mirror = next(
            (x.path for x in optimizer if x.inner == lead or x.inner.endswith("/" + lead)), None
        )
        pairs.append((spec, specs[mirror] if mirror is not None else spec))
    data = next((x for x in space.leaves if x.role == "batch" and x.shape), None)
    batch = specs[data.path][0] if data is not None else ()
    choice = Choice(batch, tuple(pairs))
    return choice if space.specs(choice) == specs else None


def _offloaded(how: str) -> str:
    """``how`` for the same assignment with the optimizer state offloaded."""
    return f"{how}; {OFFLOAD_WORDS}"


def _summary(plan: Plan | None) -> str:
    if plan is None:
        return ""
    if plan.estimated_seconds is not None:
        return f"{plan.label} (est. {format_seconds(plan.estimated_seconds)})"
    moved = format_bytes(plan.moved_bytes or 0)
    return f"{plan.label} ({moved} moved, peak {format_bytes(plan.peak_bytes or 0)})"


#: The built-in seeds. ZeRO-2 before ZeRO-1: a plan's gradients follow its optimizer state,
#: so their common assignment compiles as ZeRO-2 and is named so; ``fsdp`` is ``zero3``.
_SEED_NAMES = ("dp", "zero2", "zero1", "zero3", "tp", "2d", "sp", "ep")


def _seed_rule_sets(
    strategies: Sequence[str | RuleSet] | None, model: ModelDef | None
) -> list[RuleSet]:
    """The seeds' rule sets: ``strategies`` (default every built-in); a published
    architecture's are its logical axis rules (``fsdp``, ``fsdp+tp``, ``tp``...), as
    ``compare`` runs it (by default not ``sp``, whose sequence split the search's pinned
    activations do not follow, nor ``ep`` on a dense model).

    Raises:
        ShardvizError: an unknown strategy name.
    """
    config = model.info.get("config") if model is not None else None
    if strategies is None and isinstance(config, ArchConfig):
        # Not 'sp': plans pin activations whole along the sequence, so its sequence axis
        # would only repeat work; not 'ep' on a dense model (no experts to split).
        strategies = tuple(
            s for s in LOGICAL_STRATEGIES if s != "sp" and (s != "ep" or config.experts)
        )
    elif strategies is None:
        strategies = _SEED_NAMES
    if model is None:
        return [get_rule_set(s) for s in strategies]
    return [rule_set_for(model, s, {}) for s in strategies]


def _seeds(
    space: Space, strategies: Sequence[RuleSet], limited: bool = False
) -> list[tuple[Choice, str]]:
    """The starting choices: each strategy on each reading of its axes, deduplicated, plus
    replicated parameters with the batch split over every axis, plus the structure's (unless
    ``strategies`` is empty) and the pipelines asked for; ordered so that choices with idle
    axes come last, the structure's first guess first (not under a memory limit: there the
    first plan should fit), then the pipelines, then those needing the fewest bytes per
    device."""
    seeds: dict[Choice, str] = {}
    # With the data kept as placed (one batch choice), every seed takes its batch split.
    kept = space.batch_choices[0] if len(space.batch_choices) == 1 else None
    # Seeds named after a strategy whose batch split gave way to the data as placed.
    rebatched: set[Choice] = set()
    for rule_set in strategies:
        for mapping in role_mappings(rule_set, space.axes):
            choice = space.from_rule_set(rule_set, mapping, any_batch=kept is not None)
            if choice is None:
                continue
            words = f"strategy {rule_set.name!r} ({mapping_words(mapping)})"
            if kept is not None and choice.batch != kept:
                # Only the strategy's parameter specs are left, and with the batch elsewhere
                # they may be another plan: ZeRO-3's weights over 'model' beside a batch over
                # 'data' is Megatron's split, not FSDP. A strategy that places the batch as
                # it is placed names the seed instead.
                choice = dataclasses.replace(choice, batch=kept)
                words = f"{words} parameters; batch as placed"
                if choice not in seeds:
                    rebatched.add(choice)
            elif choice in rebatched:
                del seeds[choice]
                rebatched.discard(choice)
            seeds.setdefault(choice, words)
    plain = space.replicated(space.batch_choices[0] if space.batch_choices else ())
    seeds.setdefault(plain, "parameters replicated, batch split over every axis it divides")
    structural: list[Choice] = []
    for choice, how in space.link_seeds() if strategies else ():
        if kept is not None and choice.batch != kept:
            choice, how = dataclasses.replace(choice, batch=kept), how.rpartition(";")[0]
        if not structural and choice in seeds:  # the first guess, named by the structure
            how = f"{how} (as {seeds[choice]})"
        seeds[choice] = seeds[choice] if structural and choice in seeds else how
        structural.append(choice)
    for choice, how in space.stage_seeds() if strategies else ():
        seeds.setdefault(choice, how)
    for choice, how in space.pipeline_seeds():
        seeds.setdefault(choice, how)
    # The expert's first guess (the batch on one axis, Megatron's split on another) first.
    lead = set(structural[:1]) if not limited else set()
    # Pipelines (asked for) right after it: their arguments are the pipelined model's.
    order = sorted(
        seeds,
        key=lambda c: (
            space.idle_ways(c),
            c not in lead,
            c.pipeline is None,
            space.argument_bytes(c),
        ),
    )
    return [(c, seeds[c]) for c in order]


def suggest(
    fn: Any,
    *args: Any,
    mesh: Any = None,
    memory_limit: int | float | str | None = None,
    host_memory_limit: int | float | str | None = None,
    target: Any = None,
    budget_s: float = 60.0,
    max_plans: int | None = None,
    strategies: Sequence[str | RuleSet] | None = None,
    optimizer: optax.GradientTransformation | None = None,
    progress: bool | Progress = True,
    seed: int = 0,
    mesh_shapes: bool | Sequence[Sequence[int]] = False,
    pipelines: bool = False,
) -> SuggestedSearch:
    """Search partition specs for ``fn``'s arguments, compile-only, and rank the plans.

    Leaves are read by path as the Explorer reads them: ``params``-like names hold
    parameters, ``opt*`` names optimizer state (leaves mirroring a parameter by path, like
    Adam's ``mu``/``nu``, follow it), anything else is data whose dim 0 is the batch. The
    name is the argument's, or inside a state object (``step(state, batch)`` with a dict,
    a Flax ``TrainState``, a namedtuple) the field's: ``state/params/...`` are parameters,
    ``state/opt_state/...`` optimizer state, and its other leaves (a step count) are kept
    as given.

    When the parameters or the optimizer state come placed (a ``NamedSharding`` on the
    search's mesh), the arguments' placement is plan ``#1``, ``"your placement"``, ranked
    with the others (leaves not placed there read as whole); the descent starts from it
    too when the knobs can express it.

    Args:
        fn: a train step (plain or jitted) to call as ``fn(*args)``; or, with no ``args``, a
            zoo model's name (``"transformer"``) or a :class:`~shardviz.strategies.zoo.ModelDef`:
            its Adam train step, built exactly as :func:`~shardviz.strategies.runner.compare`
            builds it.
        *args: the arguments: arrays or ``jax.ShapeDtypeStruct`` objects (nothing is run or
            allocated; their shardings are the first plan, and data placed alike is kept).
        mesh: a ``shardviz.Mesh`` or jax mesh; default the arguments' mesh, else 2 x n/2
            over all devices with axes ``('data', 'model')``.
        memory_limit: bytes per device a plan's peak may reach (an int, or ``"2 GiB"``);
            default the target's HBM, else no limit. Plans over it are listed, never best.
            With a limit, a train step's optimizer state may move to pinned host memory
            (ZeRO-Offload) where the devices have it: only plans over the limit try that
            (their ``how`` says so; ``plan.on_host`` lists the leaves, ``plan.host_bytes``
            the host bytes per device). A published architecture's remat policy is a knob
            too (``plan.remat``; ``"offload"``, which sends each layer's input to host
            memory, only under a limit and only from plans over it): with no target the
            ranking prefers the least recomputation that fits.
        host_memory_limit: host memory per device a plan may use (the same forms as
            ``memory_limit``); default no limit. Plans over it are listed, never best.
        target: a hardware preset or topology name (``"v5e"``, ``"h100"``): plans are then
            ranked by their estimated step there. Without one see :mod:`.rank`.
        budget_s: seconds to search, counted from the call (reading the program too); at
            the end the best plan so far is returned. A compile is never cut short: the
            search starts none once the budget is spent, nor one that would end more than
            10% past it (judged by the last), and the first plan is always compiled; when
            one compile alone outlasts the budget, the notes and the progress say so.
        max_plans: stop after compiling this many plans (a whole number >= 1; default no
            cap). Unlike the budget, a cap tries the same plans on any machine, however
            fast: the seeds' share is counted in plans, so give ``budget_s`` room to spare
            and let the cap end the search (``stopped == "max_plans"``).
        strategies: the seeds (built-in names or rule sets); default every built-in one.
            Beside them the program's structure seeds the search (Megatron's split read from
            the jaxpr, and the like); ``()`` starts from replicated parameters alone.
        optimizer: the model's optimizer (model only; default Adam).
        progress: show progress (a bar in a notebook, a line on a terminal), or an object
            with ``update``/``finish`` (see :mod:`.progress`).
        mesh_shapes: the mesh's shape as a knob: ``True`` searches every way to factor its
            devices over its axes (2 x 4, 4 x 2, 1 x 8, 8 x 1 for 8 devices on two axes),
            or give the shapes (``[(2, 4), (4, 2)]``, whole sizes); the mesh's own shape
            comes first, and each shape may use its share of the budget (and of
            ``max_plans``) and what the earlier ones left.
            A plan's report (and ``plan.rules.extra["mesh_shape"]``) says its shape.

        pipelines: search pipelines too (the zoo transformer, whose parameters hold a list
            of layers): the model trained as ``pp+dp`` (``pp`` on a one-axis mesh) with its
            stages on each mesh axis that divides the layers, from twice as many
            microbatches as stages, and the microbatch count as a knob (more shrink the
            bubble, fewer keep less in flight). ``plan.pipeline`` is (axis, stages,
            microbatches) and ``plan.rules`` the pipeline's rule set for ``compare``.

    Returns:
        A :class:`SuggestedSearch`: ``.plans`` best first, ``.best`` (``None`` when no plan
        fits the memory limit: ``.notes`` say so), ``.best.rules`` for ``compare``, and
        ``.arguments()`` placed as the best plan says. Plans are compiled without findings
        (each finding's fix would compile again): ``sv.explain(fn, *search.arguments())``
        gives the chosen plan's.

    Raises:
        ArgumentError: a memory limit or budget that is no size or finite number, a mesh
            shape whose sizes are not whole numbers, or arguments holding no array to place
            (the message names the argument and what to pass).
        ShardvizError: a bad mesh, model or strategy; ``pipelines=True`` for a program that
            cannot be pipelined (the message says why); or no plan compiled at all (the
            first compiler error, which names the cause).
        KeyboardInterrupt: Ctrl-C, passed on as it is once the progress has ended.
    """
    limit = memory_bytes(memory_limit)
    host_limit = memory_bytes(host_memory_limit, "host_memory_limit")
    budget = finite_number("suggest", "budget_s", budget_s, example=60)
    cap = None if max_plans is None else whole_number("suggest", "max_plans", max_plans, example=20)
    start = time.monotonic()  # reading the program counts against the budget too
    inputs = search_inputs(fn, args, mesh, optimizer, target, seed)
    shapes = _mesh_shapes(mesh_shapes, inputs.jmesh)
    found = inputs.leaves()
    _some_array(found, fn, args)
    seeds_from = _seed_rule_sets(strategies, inputs.model)
    structure = inputs.structure()
    leaves = _with_weights(found, structure.weights if structure else frozenset())
    links = [(k.dims, k.reduced, k.stacked) for k in structure.links] if structure else []
    kept = inputs.placed_batch({x.path for x in leaves if x.role == "batch"})
    host_memory = limit is not None and inputs.has_host_memory()
    offload = host_memory and any(x.role == "optimizer" and x.shape for x in leaves)
    remats, own_remat = inputs.remat_policies(offload=host_memory)
    placement = inputs.placement(leaves)
    with compiler_quiet() as terminal:
        reporter = progress_for(progress, terminal)
        runners: list[_Runner] = []
        plans: list[SuggestedPlan] = []
        done = False
        try:
            for k, shape in enumerate(shapes):
                if runners and plans and time.monotonic() - start > budget:
                    runners[-1].ran_out = True  # no time left for the other shapes
                    break
                if cap is not None and len(plans) >= cap:
                    break  # the cap is over every shape
                space, shaped, here = _shape_space(
                    inputs, shape, leaves, links, kept, k == 0, pipelines
                )
                space.offload_ok = offload
                space.remats, space.own_remat = remats, own_remat
                # Each shape may use its share of the budget and whatever the earlier ones
                # left.
                runner = _Runner(
                    space, shaped, limit, budget * (k + 1) / len(shapes), reporter,
                    plans=plans, start=start, host_limit=host_limit,
                    max_plans=None if cap is None else math.ceil(cap * (k + 1) / len(shapes)),
                    whole=(budget, cap),
                )  # fmt: skip
                if runners:
                    runner.limit = runners[0].limit  # a target's HBM, read from the first plan
                kept_here = here is not None and space.batch_choices == [here]
                runner.kept_batch = here if kept_here else None
                runners.append(runner)
                if k == 0 and placement is not None:
                    runner.try_placement(placement, YOUR_PLACEMENT)
                _walk(runner, _seeds(runner.space, seeds_from, limited=limit is not None))
            search = _result(runners, budget, reporter)
            done = True
        finally:
            # Interrupted (Ctrl-C) or failed: the bar or line still ends, saying so; the
            # exception goes on as it is.
            if not done:
                interrupted = isinstance(sys.exc_info()[1], KeyboardInterrupt)
                why = "interrupted" if interrupted else "stopped by an error"
                n = len(plans)
                reporter.finish(f"{why} after {n} plan{'s' if n != 1 else ''} compiled")
    return search


def _shape_space(
    inputs: SearchInputs,
    shape: tuple[int, ...],
    leaves: list[Leaf],
    links: list[tuple],
    kept: tuple[str, ...] | None,
    first: bool,
    pipelines: bool,
) -> tuple[Space, SearchInputs, tuple[str, ...] | None]:
    """The space to search on the mesh reshaped to ``shape`` (the data kept as placed, the
    pipelines that fit when asked for), the inputs on that mesh, and the mesh axes the data
    is kept on there (``None``: its split is searched)."""
    jm = inputs.jmesh
    if shape != tuple(jm.devices.shape):
        jm = jax.sharding.Mesh(jm.devices.reshape(shape), jm.axis_names)
    shaped = inputs if jm is inputs.jmesh else dataclasses.replace(inputs, jmesh=jm)
    axes = dict(zip((str(a) for a in jm.axis_names), shape, strict=True))
    space = Space(leaves, axes, links)
    if pipelines:
        space.pipelines = _pipeline_options(shaped, first)
    # The data as placed (by axis name; an axis of size 1 splits nothing): only the rest is
    # searched.
    here = None if kept is None else tuple(a for a in kept if axes[a] > 1)
    if here is not None and (here in space.batch_choices or not here):
        space.batch_choices = [here]
    return space, shaped, here


def _some_array(leaves: list[Leaf], fn: Any, args: tuple) -> None:
    """Refuse arguments that hold no array with a dim to split (nothing to place).

    Raises:
        ArgumentError: no argument holds one (``"hello"``, ``None``, ``{}``, nothing).
    """
    if any(x.shape for x in leaves) or (isinstance(fn, str | ModelDef) and not args):
        return
    if not args:
        got = "no arguments"
    elif not leaves:
        got = "arguments holding no array: " + ", ".join(shown(a, 40) for a in args)
    else:
        got = "only 0-d arrays (scalars have no dim to split)"
    raise ArgumentError(
        problem(
            "suggest",
            f"there are no arrays to place: it was given {got}",
            "pass the function's array arguments after it (arrays or jax.ShapeDtypeStruct "
            "objects with at least one dim), e.g. sv.suggest(step, params, opt_state, batch, "
            "mesh=mesh); or a zoo model's name alone (sv.suggest('mlp'))",
        )
    )


def _pipeline_options(inputs: SearchInputs, first: bool) -> dict[str, tuple[int, ...]]:
    """The pipelines to search on ``inputs``' mesh (:meth:`.inputs.SearchInputs.pipeline_options`).

    Raises:
        ShardvizError: none fits the mesh's own shape (``first``), saying why.
    """
    options, why = inputs.pipeline_options()
    if not options and first:
        raise ShardvizError(
            problem(
                "suggest(..., pipelines=True)",
                f"no pipeline can be searched: {why}",
                "search the zoo transformer (sv.suggest('transformer', pipelines=True)) on a "
                "mesh with an axis that divides its layers, or leave pipelines off",
            )
        )
    return options


def _mesh_shapes(mesh_shapes: Any, jm: jax.sharding.Mesh) -> list[tuple[int, ...]]:
    """The mesh shapes to search: the mesh's own first, then (``True``) every other way to
    factor its device count over its axes, or the shapes given.

    Raises:
        ArgumentError: not a flag nor a list of shapes, a size that is not a whole number
            >= 1, or a shape of another rank or device count.
    """
    own = tuple(int(n) for n in jm.devices.shape)
    n, rank = int(jm.devices.size), len(own)
    if isinstance(mesh_shapes, bool | np.bool_):
        if not mesh_shapes:
            return [own]
        wanted = [s for s in _factorisations(n, rank) if s != own]
    else:
        wanted = [_mesh_shape(shape, i, own) for i, shape in enumerate(_listed(mesh_shapes, own))]
    for shape in wanted:
        if len(shape) != rank or math.prod(shape) != n:
            raise ArgumentError(
                problem(
                    f"suggest(mesh_shapes={shown(mesh_shapes)})",
                    f"{shape} is not a shape of the mesh's {n} devices over its {rank} axes "
                    f"{tuple(str(a) for a in jm.axis_names)}",
                    f"give shapes of {rank} sizes whose product is {n}, e.g. {own}, or "
                    "mesh_shapes=True for every one",
                )
            )
    return [own, *(s for s in dict.fromkeys(wanted) if s != own)]


def _listed(mesh_shapes: Any, own: tuple[int, ...]) -> list[Any]:
    """``mesh_shapes`` as a list of shapes.

    Raises:
        ArgumentError: neither a flag nor a sequence of shapes (``None``, a number, a
            string, a dict).
    """
    if isinstance(mesh_shapes, str | bytes | Mapping) or not isinstance(
        mesh_shapes, Sequence | np.ndarray
    ):
        raise ArgumentError(
            problem(
                f"suggest(mesh_shapes={shown(mesh_shapes)})",
                "it is neither True/False nor a list of mesh shapes",
                f"pass mesh_shapes=[{own}] (a list of shapes, one size per mesh axis), "
                "mesh_shapes=True for every way to factor the devices, or False (the mesh's "
                "own shape)",
            )
        )
    return list(mesh_shapes)


def _mesh_shape(shape: Any, i: int, own: tuple[int, ...]) -> tuple[int, ...]:
    """One shape of ``mesh_shapes`` (the ``i``-th) as whole sizes.

    Raises:
        ArgumentError: not a sequence of sizes, or a size that is not a whole number >= 1.
    """
    if isinstance(shape, str | bytes | Mapping) or not isinstance(shape, Sequence | np.ndarray):
        raise ArgumentError(
            problem(
                f"suggest(mesh_shapes[{i}]={shown(shape)})",
                "a mesh shape is a tuple of sizes, one per mesh axis",
                f"pass mesh_shapes=[{own}]",
            )
        )
    return tuple(
        whole_number(
            "suggest", f"mesh_shapes[{i}][{j}]", size, example=own[j] if j < len(own) else 1
        )
        for j, size in enumerate(shape)
    )


def _factorisations(n: int, rank: int) -> list[tuple[int, ...]]:
    """Every ordered way to write ``n`` as a product of ``rank`` sizes."""
    if rank == 1:
        return [(n,)]
    return [
        (d, *rest)
        for d in range(1, n + 1)
        if n % d == 0
        for rest in _factorisations(n // d, rank - 1)
    ]


def _with_weights(leaves: list[Leaf], weights: frozenset[str]) -> list[Leaf]:
    """``leaves`` with those the program uses as weights searched as parameters, when no
    argument's name marks parameters (``mlp(x, w1, w2)``); names win otherwise."""
    if any(x.role == "params" for x in leaves):
        return leaves
    return [
        dataclasses.replace(x, role="params") if x.role == "batch" and x.path in weights else x
        for x in leaves
    ]


def _walk(runner: _Runner, seeds: list[tuple[Choice, str]]) -> None:
    """Compile the seeds that use every mesh axis (and tune each pipeline's microbatch
    count), then descend from the best plan not yet descended from among the top
    :data:`BEAM`, until each of them has been; then the same with the seeds that leave an
    axis idle (they duplicate work, so they rarely win). Once some plan fits, the seeds stop
    at :data:`SEED_SHARE` of the budget left (of ``max_plans`` when there is a cap), so the
    descent has the rest; the seeds left then get their turn once the descent has converged,
    so a search that converged compiled every seed. Stops when the budget (or the cap) runs
    out; :attr:`_Runner.seeds_left` then counts the seeds never tried."""
    descended: set[str] = set()
    busy = [s for s in seeds if runner.space.idle_ways(s[0]) == 1]
    idle = [s for s in seeds if runner.space.idle_ways(s[0]) > 1]
    if runner.max_plans is not None:
        share = len(runner.plans) + SEED_SHARE * (runner.max_plans - len(runner.plans))

        def seeds_done() -> bool:
            return len(runner.plans) >= share
    else:
        deadline = runner.elapsed() + SEED_SHARE * max(0.0, runner.budget - runner.elapsed())

        def seeds_done() -> bool:
            return runner.elapsed() > deadline

    try:
        for batch in (busy, idle):
            left = _seeded(runner, batch, descended, seeds_done)
            _descend_beam(runner, descended)
            while left:  # converged with time to spare: the seeds left for later, then on
                left = _seeded(runner, left, descended, lambda: False)
                _descend_beam(runner, descended)
    except _OutOfTime:
        runner.seeds_left += sum(1 for c, _ in seeds if c not in runner.seen)


def _seeded(
    runner: _Runner,
    seeds: list[tuple[Choice, str]],
    descended: set[str],
    done: Callable[[], bool],
) -> list[tuple[Choice, str]]:
    """Compile ``seeds`` in order until ``done()`` says their share is spent (only once some
    plan fits); the seeds left for later."""
    for i, (choice, how) in enumerate(seeds):
        if done() and any(p.compiled and p.fits is not False for p in runner.plans):
            return seeds[i:]
        plan = runner.try_choice(choice, how)
        # A pipeline's microbatch count is tuned at once (pipelines were asked for).
        if plan is not None and plan.compiled and choice.pipeline is not None:
            descended.add(plan.label)
            runner.descend(plan)
    return []


def _descend_beam(runner: _Runner, descended: set[str]) -> None:
    """Descend from the best plan not yet descended from among the top :data:`BEAM`, until
    each of them has been."""
    while True:
        beam = [p for p in runner.ranked() if p.compiled and p.label in runner.choice_of]
        starts = [p for p in beam[:BEAM] if p.label not in descended]
        if not starts:
            return
        descended.add(starts[0].label)
        runner.descend(starts[0])


def _result(runners: list[_Runner], budget: float, reporter: Progress) -> SuggestedSearch:
    runner = runners[0]  # the mesh's own shape; the others add their counts to it
    runner.ran_out = any(r.ran_out for r in runners)
    runner.capped = any(r.capped for r in runners)
    runner.skipped = sum(r.skipped for r in runners)
    runner.seeds_left = sum(r.seeds_left for r in runners)
    least = [r.least_skipped for r in runners if r.least_skipped is not None]
    runner.least_skipped = min(least) if least else None
    least_host = [r.least_host_skipped for r in runners if r.least_host_skipped is not None]
    runner.least_host_skipped = min(least_host) if least_host else None
    runner.target_name = next((r.target_name for r in runners if r.target_name), "")
    runner.longest = max(r.longest for r in runners)
    plans = runner.ranked()
    if plans and not any(p.compiled for p in plans):
        raise next(r.errors[0] for r in runners if r.errors)
    inputs_of = {label: r.inputs for r in runners for label in r.choice_of}
    first = plans[0] if plans else None
    inputs = inputs_of.get(first.label, runner.inputs) if first is not None else runner.inputs
    notes = _notes(runner, plans, budget)
    if len(runners) > 1:
        counts = ", ".join(
            f"{' x '.join(map(str, r.space.axes.values()))} ({len(r.choice_of)} plans)"
            for r in runners
        )
        notes.insert(0, f"mesh shapes searched: {counts}; each plan's report has its mesh")
    search = SuggestedSearch(
        function=inputs.name, mesh=mesh_layout(inputs.jmesh), plans=tuple(plans),
        ranking=ranking_words(
            runner.target_name if runner.with_target else "", any(p.on_host for p in plans)
        ),
        memory_limit=runner.limit, target=runner.target_name if runner.with_target else "",
        budget_seconds=budget, elapsed_seconds=runner.elapsed(),
        budget_ran_out=runner.ran_out, skipped=runner.skipped,
        roles=_roles(runner.space, inputs), notes=tuple(notes),
        stopped=_stopped(runner, plans), host_memory_limit=runner.host_limit,
    )  # fmt: skip
    object.__setattr__(search, "_inputs", inputs)
    object.__setattr__(search, "_inputs_of", inputs_of)
    best = search.best
    slow = (
        f"; one compile took {format_seconds(runner.longest)}, longer than the whole budget"
        if runner.longest > budget
        else ""
    )
    # One short line (under 100 characters with the progress's title, as a rule).
    reporter.finish(
        f"{search.tried} plan{'s' if search.tried != 1 else ''} in "
        f"{search.elapsed_seconds:.0f} s ({_STOP_WORDS.get(search.stopped, search.stopped)})"
        + (f"; best {_summary(best)}" if best is not None else "; no plan fits")
        + slow
    )
    return search


def _roles(space: Space, inputs: SearchInputs) -> dict[str, str]:
    """Argument name -> role, as searched (an argument whose leaves were all read as weights
    is ``params``); for a state object, each field that decided its leaves' role instead
    (``state/params`` -> ``params``, ``state/opt_state`` -> ``optimizer``)."""
    out: dict[str, str] = {}
    for name in inputs.named:
        leaves = [x for x in space.leaves if x.arg == name]
        roles = {x.role for x in leaves}
        if len(roles) <= 1:
            out[name] = roles.pop() if roles else argument_role(name)
            continue
        for x in leaves:
            out.setdefault(role_parts(x.path)[1], x.role)
    return out


#: Why a search stopped, in the progress's last line.
_STOP_WORDS = {
    "converged": "converged",
    "budget": "budget spent",
    "max_plans": "max_plans reached",
    "memory": "nothing fits",
}


def _stopped(runner: _Runner, plans: list[SuggestedPlan]) -> str:
    """Why the search stopped, in one word: ``budget``, ``max_plans`` (the cap on plans
    compiled), ``memory`` (no assignment fits the limit), or ``converged`` (every seed
    compiled, and no move from the best plans ranked better)."""
    if runner.capped:
        return "max_plans"
    if runner.ran_out:
        return "budget"
    if not plans or not any(p.compiled and p.fits is not False for p in plans):
        return "memory"
    return "converged"


def _notes(runner: _Runner, plans: list[SuggestedPlan], budget: float) -> list[str]:
    """What the search says beside its plans: why it stopped, what did not fit, what was
    offloaded, and what of the space it searched."""
    return (
        _stop_notes(runner, len(plans), budget)
        + _memory_notes(runner, plans)
        + _offload_notes(runner, plans)
        + _space_notes(runner, plans)
    )


def _stop_notes(runner: _Runner, n: int, budget: float) -> list[str]:
    """Why the search stopped where it did: its cap, its budget, or one compile longer than
    the budget."""
    notes = []
    if runner.capped:
        notes.append(
            f"the cap of {n} plan{'s' if n != 1 else ''} (max_plans) was reached: the best so "
            "far is shown; give a larger max_plans to search further"
        )
    elif runner.ran_out:
        notes.append(
            f"the budget of {budget:g} s ran out after {n} plan{'s' if n != 1 else ''}: the "
            "best so far is shown; give a larger budget_s to search further"
        )
    if runner.longest > budget:
        # A compile cannot be stopped halfway: the search ran past its budget by it.
        notes.append(
            f"one compile took {format_seconds(runner.longest)}, longer than the whole budget "
            f"of {format_seconds(budget)} (a compile is never cut short, so the search ran "
            f"past its budget by it): only {n} plan{'s' if n != 1 else ''} could be compiled; "
            f"give budget_s={math.ceil(10 * runner.longest)} or more to compare about ten plans"
        )
    return notes


def _memory_notes(runner: _Runner, plans: list[SuggestedPlan]) -> list[str]:
    """What did not fit in the memory limits (HBM, host), and the assignments never compiled
    because their arguments alone were over them."""
    notes = []
    fitting = [p for p in plans if p.compiled and p.fits is not False]
    lowest = min((p for p in plans if p.compiled), key=lambda p: p.peak_bytes or 0, default=None)
    # (A plan within the limit that still does not fit is over the host memory limit: the
    # host note below says so.)
    if (
        lowest is not None
        and not fitting
        and runner.limit is not None
        and (lowest.peak_bytes or 0) > runner.limit
    ):
        notes.append(
            f"no plan tried fits in {format_bytes(runner.limit)} per device: the lowest peak was "
            f"{format_bytes(lowest.peak_bytes or 0)} ({lowest.label}); raise memory_limit, use "
            "more devices, or a smaller batch or model"
        )
    if not plans and runner.least_skipped is not None:
        notes.append(
            f"no plan fits in {format_bytes(runner.limit or 0)} per device: every assignment "
            f"tried needs at least {format_bytes(runner.least_skipped)} for its arguments "
            "alone; raise memory_limit, use more devices, or a smaller batch or model"
        )
    host_needs = [p.host_bytes for p in plans if p.compiled and p.on_host and p.host_bytes]
    if runner.least_host_skipped is not None:
        host_needs.append(runner.least_host_skipped)
    if not fitting and runner.host_limit is not None and host_needs:
        need = min(host_needs)
        notes.append(
            f"no plan fits in {format_bytes(runner.limit or 0)} of HBM (memory_limit) and "
            f"{format_bytes(runner.host_limit)} of host memory (host_memory_limit) per device: "
            "the plans that fit HBM only by offloading the optimizer state to pinned host "
            f"memory need at least {format_bytes(need)} of it; raise host_memory_limit to "
            f"{format_bytes(need)} or more, raise memory_limit, use more devices, or a smaller "
            "batch or model"
        )
    if runner.skipped:
        host = (
            f" (or more than {format_bytes(runner.host_limit)} of host memory)"
            if runner.host_limit is not None
            else ""
        )
        notes.append(
            f"{runner.skipped} assignment{'s' if runner.skipped != 1 else ''} not compiled: "
            f"{'their' if runner.skipped != 1 else 'its'} arguments alone need more than "
            f"{format_bytes(runner.limit or 0)} per device{host}"
        )
    return notes


def _offload_notes(runner: _Runner, plans: list[SuggestedPlan]) -> list[str]:
    """The plans that keep the optimizer state in pinned host memory, or why none could."""
    notes = []
    offloaded = [p for p in plans if p.on_host]
    if offloaded:
        notes.append(
            f"{len(offloaded)} plan{'s keep' if len(offloaded) != 1 else ' keeps'} the optimizer "
            "state in pinned host memory (ZeRO-Offload; the how says so): peak is HBM, the host "
            "bytes per device are shown beside it; tried only from plans over the memory limit"
        )
        if runner.inputs.model is None:
            notes.append(
                "an offloaded plan was compiled with the optimizer state brought to the device "
                "at the function's start (jax.device_put(opt_state, jax.memory.Space.Device)): "
                "do the same in your step to run it on search.arguments(), or run plan.rules "
                "with compare"
            )
    elif (
        runner.limit is not None
        and not runner.space.offload_ok
        and any(x.role == "optimizer" and x.shape for x in runner.space.leaves)
    ):
        notes.append(
            "the optimizer state was not offloaded: these devices have no pinned_host memory"
        )
    return notes


def _space_notes(runner: _Runner, plans: list[SuggestedPlan]) -> list[str]:
    """What of the space was searched: pipelines, seeds left, remat policies, plans that did
    not compile, the data and weights as the search read them, and how plans were ranked."""
    notes = []
    piped = [p for p in plans if p.pipeline is not None and p.compiled]
    if runner.space.pipelines:
        tried = ", ".join(
            f"{p.pipeline[1]} stages on {p.pipeline[0]!r} x {p.pipeline[2]} microbatches"
            for p in piped
            if p.pipeline is not None
        )
        notes.append(
            "pipelines searched (GSPMD's form; the stage axis named 'stage' in their "
            f"reports, the other 'data'): {tried or 'none compiled within the budget'}; "
            "run one with sv.compare(model, [plan.rules])"
        )
    if runner.seeds_left:
        k = runner.seeds_left
        what = "max_plans" if runner.capped else "budget_s"
        notes.append(
            f"{k} seed{'s' if k != 1 else ''} never compiled: the search stopped first (the "
            f"seeds may use {SEED_SHARE:.0%} of the {'plans' if runner.capped else 'budget'} "
            f"once a plan fits, the descent the rest); give a larger {what} to try them"
        )
    if runner.space.remats:
        chosen = sorted({p.remat or runner.space.own_remat or "" for p in plans if p.compiled})
        others = [r for r in chosen if r != runner.space.own_remat]
        tried = (
            f"plans compiled with {', '.join(map(repr, chosen))}"
            if others
            else "no plan with another policy was compiled within the budget"
        )
        notes.append(
            f"the decoder's remat policy is a knob (the model's own: "
            f"{runner.space.own_remat!r}; {tried}): less recomputation ranks first where it "
            "fits; plan.remat and plan.rules say which a plan uses"
        )
    failed = [p for p in plans if not p.compiled]
    if failed:
        notes.append(
            f"{len(failed)} plan{'s' if len(failed) != 1 else ''} did not compile (listed last "
            "with the compiler's words)"
        )
    batch = [x.path for x in runner.space.leaves if x.role == "batch" and x.shape]
    if runner.kept_batch is not None and batch:
        notes.append(
            f"the data ({summarised(batch)}) kept as placed, dim 0 over "
            f"{', '.join(repr(a) for a in runner.kept_batch) or 'nothing'}: only the other "
            "leaves were searched; pass the data unplaced (a ShapeDtypeStruct without a "
            "sharding) to search its split too"
        )
    weights = [x.path for x in runner.space.leaves if x.role == "params" and x.arg == x.path]
    if (
        weights
        and runner.inputs.model is None
        and not any(role_parts(x.path)[0] == "params" for x in runner.space.leaves)
    ):
        notes.append(f"searched as weights, by how the program uses them: {summarised(weights)}")
    if runner.inputs.model is None:
        notes.append(
            "a plan's rules (plan.rules) put gradients like the optimizer state; in this "
            "function they are where the compiler chose"
        )
    if any(p.flops_per_device is None for p in plans if p.compiled) and not runner.with_target:
        notes.append("no cost analysis on this backend: plans are ranked by bytes moved alone")
    return notes
