"""The step's ops grouped by module and by layer, predicted and (from a profile) measured.

Each op of the compiled schedule (:attr:`shardviz.model.Cost.ops`) is put in a module from
what the program says about it, the most specific first:

1. the named scopes in its ``op_name`` (``jax.named_scope("attn")``, flax module names,
   ``jit(log_softmax)``), innermost first; for an op the compiler named by its loop alone
   (a cast of a scanned layer's weights), the scopes and functions of the op it feeds;
2. an embedding lookup: a ``gather`` (or its gradient, a ``scatter-add``) outside any loop;
3. the Python functions that made it (``layer > attention``, optax's ``scale_by_adam``),
   innermost first;
4. the optimizer by position: an op of neither the forward pass (``jvp``) nor the backward
   (``transpose``), scheduled after the last backward op (the update of params and state);
5. else ``other``, shown with the rest.

Its layer: the loop it runs in (a scanned stack of layers: its body's ops run once per trip,
and the per-step figures count every trip), else a numbered name in its scopes
(``layers_3``, ``block.3``), else the top level. Times are the prediction's own
(:mod:`.estimate.predict`), so the groups add up to the predicted step. No jax import.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable

from shardviz.analysis.estimate.predict import predict_with, rates_of
from shardviz.model import Collective, OpWork
from shardviz.model.hardware import Target
from shardviz.model.op_profile import (
    MODULES,
    OTHER,
    MeasuredOp,
    OpProfile,
    ProfiledOp,
    ProfileGroup,
)
from shardviz.model.program import Loop, OpEvent, Report

__all__ = ["LAYER_TOP", "measured_of_timeline", "module_of", "op_profile_of"]

#: The layer of ops in no loop and no numbered scope.
LAYER_TOP = "top level"

#: Words in a scope or function name that say its module, per module, in the order tried
#: on each name (``log_softmax`` is the loss before ``softmax`` is attention).
_WORDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("optimizer", ("optax", "adam", "sgd", "optimizer", "opt_state", "apply_updates",
                   "update_moment", "scale_by_", "momentum", "adafactor", "rmsprop",
                   "adagrad", "clip_by_global_norm")),
    ("loss", ("loss", "cross_entropy", "crossentropy", "xent", "log_softmax", "logsumexp",
              "nll")),
    ("experts", ("moe", "expert", "router", "routing", "dispatch", "combine", "megablox",
                 "gmm", "top_k", "gshard", "switch", "dropless", "mixture")),
    ("attention", ("attn", "attention", "mha", "gqa", "mqa", "softmax", "rope", "rotary",
                   "qkv", "q_proj", "k_proj", "v_proj", "o_proj", "flash", "splash",
                   "kv_cache")),
    ("mlp", ("mlp", "ffn", "feed_forward", "feedforward", "fc1", "fc2", "up_proj",
             "down_proj", "gate_proj", "swiglu", "geglu")),
    ("embedding", ("embed", "wte", "wpe", "tok_emb", "lm_head", "vocab")),
    ("norm", ("norm", "rms", "layer_norm", "layernorm")),
)  # fmt: skip
#: Primitives of an embedding lookup and its gradient.
_LOOKUP = frozenset(("gather", "scatter-add", "scatter_add", "take"))
#: A numbered layer in a scope: ``layers_3``, ``layer.3``, ``block3``, ``h/3``.
_NUMBERED = re.compile(r"(?:^|[/_.(])(layers?|blocks?|h|decoder_layer|encoder_layer)[_./]?(\d+)")
#: A loop's own ops (``while/body/jit(dynamic_index_in_dim)/dynamic_slice``: a scan slicing
#: its stacked inputs, stacking its outputs, counting its trips): no scope past the loop's.
_LOOP_OWN = re.compile(r"/while(?:/(?:body|cond)/(?:jit\(dynamic_\w+\)/)?[\w-]+)?$")
#: Names of control ops a profile times around the ops they run (counted in those).
_CONTROL = re.compile(r"(while|call|conditional)(\.\d+)?")


def _scopes(op_name: str) -> list[str]:
    """The names in ``op_name``, innermost first, transforms unwrapped
    (``transpose(jvp(jit(log_softmax)))`` -> ``log_softmax``), the primitive last of all."""
    parts = [p for p in op_name.split("/") if p]
    names = []
    for p in parts[1:-1] if len(parts) > 1 else []:
        inner = re.sub(r"^(?:\w+\()+|\)+$", "", p)
        if inner:
            names.append(inner.lower())
    return names[::-1]


def _by_word(names: Iterable[str]) -> str | None:
    for name in names:
        for module, words in _WORDS:
            if any(w in name for w in words):
                return module
    return None


def _functions(op: OpWork) -> list[str]:
    """The Python functions that made ``op``, innermost first, lower-cased."""
    return [f.lower() for f in reversed(op.functions.split(" > ")) if f]


def module_of(op: OpWork, in_loop: bool, after_backward: bool) -> str:
    """The module ``op`` belongs to (see the module's docstring for the order of the rules);
    ``in_loop``: it runs in a loop body; ``after_backward``: it is scheduled after the last
    op of the backward pass."""
    found = _by_word(_scopes(op.op_name))
    if found:
        return found
    if op.feeds:  # named by its loop alone (a weight's cast in a scanned body): what it feeds
        found = _by_word(_scopes(op.feeds)) or _by_word(_functions(op))
        if found:
            return found
    if in_loop and _LOOP_OWN.search(op.op_name):
        return OTHER  # the loop's own slicing and counting: no module's work
    primitive = op.op_name.rsplit("/", 1)[-1].lower()
    if primitive in _LOOKUP and not in_loop:
        return "embedding"
    found = _by_word(_functions(op))
    if found:
        return found
    differentiated = "jvp(" in op.op_name or "transpose(" in op.op_name
    if after_backward and op.op_name and not differentiated:
        return "optimizer"
    return OTHER


def _layer_of(op_name: str, loop: Loop | None, runs: int) -> str:
    """``loop model.py:41 x12`` for the op of a loop body run 12 times per step, ``layer 3`` for a
    numbered scope, else the top level."""
    if loop is not None:
        return f"loop {loop.where} x{runs}"
    if runs > 1:
        return f"a loop x{runs}"
    match = _NUMBERED.search(op_name.lower())
    if match:
        return f"{match.group(1).rstrip('s')} {int(match.group(2))}"
    return LAYER_TOP


def _last_backward(ops: tuple[OpWork, ...], entry: str) -> int:
    """The position of the last backward-pass op of the entry computation (-1: none)."""
    last = -1
    for k, op in enumerate(ops):
        if op.computation == entry and "transpose(" in op.op_name:
            last = k
    return last


def _predicted_rows(report: Report, target: Target | None) -> tuple[list[ProfiledOp], float]:
    """One row per op of the schedule and per collective, and the exposed seconds."""
    cost = report.cost
    ops = cost.ops if cost is not None else ()
    loops = {c: lp for lp in cost.loops for c in (lp.body, lp.condition)} if cost else {}
    entry = ops[0].computation if ops else ""
    last = _last_backward(ops, entry) if ops else -1
    exposed: dict[str, float] = {}
    rates = rates_of(target) if target is not None else None
    if rates is not None:
        trips = {c.hlo_name: c.trips for c in report.collectives}
        everything = len(ops) + len(report.collectives)
        pred = predict_with(ops, report.collectives, trips, rates, everything)
        exposed = dict(pred.exposed) if pred is not None else {}
    rows = []
    for k, op in enumerate(ops):
        loop = loops.get(op.computation)
        seconds = None
        if rates is not None:
            own = rates.op_seconds(op) * op.runs
            seconds = exposed.get(op.name, 0.0) if op.transfer else own
        rows.append(ProfiledOp(
            op.name, op.opcode, module_of(op, op.runs > 1 or loop is not None, k > last > -1),
            _layer_of(op.op_name, loop, op.runs), op.runs, op.flops * op.runs,
            op.hbm_bytes * op.runs, seconds, op_name=op.op_name,
        ))  # fmt: skip
    rows.extend(_collective_rows(report.collectives, exposed, rates is not None, loops))
    return rows, sum(exposed.values())


def _collective_rows(
    collectives: tuple[Collective, ...], exposed: dict[str, float], timed: bool,
    loops: dict[str, Loop],
) -> list[ProfiledOp]:  # fmt: skip
    """A row per compiled collective (a combined all-reduce's parts as one): the seconds the
    step waits for it; its bytes moved over the links are not HBM bytes of an op."""
    out: list[ProfiledOp] = []
    seen: set[str] = set()
    for c in collectives:
        if c.hlo_name in seen:
            continue
        seen.add(c.hlo_name)
        runs = c.trips or 1
        work = OpWork(c.hlo_name, 0.0, 0.0, runs, op_name=c.op_name,
                      functions=c.source.chain if c.source is not None else "")  # fmt: skip
        loop = next((lp for lp in loops.values() if lp.counted_runs == runs > 1), None)
        out.append(ProfiledOp(
            c.hlo_name, c.kind, module_of(work, runs > 1, False), _layer_of(c.op_name, loop, runs),
            runs, 0.0, 0.0, exposed.get(c.hlo_name, 0.0) if timed else None, op_name=c.op_name,
        ))  # fmt: skip
    return out


def _measured_rows(
    rows: list[ProfiledOp], measured: tuple[MeasuredOp, ...]
) -> tuple[list[ProfiledOp], tuple[str, ...], float]:
    """``rows`` with each one's measured seconds, a row in ``other`` for each measured op the
    schedule does not list, those names, and the measured total (control ops' own events,
    which time the ops they run, left out of it)."""
    by_name = {m.name: m for m in measured}
    out = []
    for r in rows:
        m = by_name.get(r.name)
        out.append(_with_measured(r, m.seconds if m else 0.0))
    listed = {r.name for r in rows}
    unmatched = tuple(sorted(m.name for m in measured if m.name not in listed))
    for name in unmatched:
        m = by_name[name]
        out.append(ProfiledOp(name, "", OTHER, LAYER_TOP, round(m.runs), 0.0, 0.0, None,
                              m.seconds, predicted=False))  # fmt: skip
    total = sum(m.seconds for m in measured if not _CONTROL.fullmatch(m.name))
    return out, unmatched, total


def _with_measured(r: ProfiledOp, seconds: float) -> ProfiledOp:
    return ProfiledOp(r.name, r.opcode, r.module, r.layer, r.runs, r.flops, r.hbm_bytes,
                      r.seconds, seconds, r.op_name, r.predicted)  # fmt: skip


def _groups(rows: list[ProfiledOp], key: str, order: tuple[str, ...]) -> tuple[ProfileGroup, ...]:
    """``rows`` added up by ``key`` (``module`` or ``layer``): the names in ``order`` first,
    the rest by predicted flops; control ops' measured events left out of the sums."""
    parts: dict[str, list[ProfiledOp]] = defaultdict(list)
    for r in rows:
        parts[getattr(r, key)].append(r)
    out = []
    for name, members in parts.items():
        timed = [r.seconds for r in members if r.seconds is not None]
        measured = [
            r.measured_seconds for r in members
            if r.measured_seconds is not None and not _CONTROL.fullmatch(r.name)
        ]  # fmt: skip
        out.append(ProfileGroup(
            name, len(members), sum(r.flops for r in members),
            sum(r.hbm_bytes for r in members), sum(timed) if timed else None,
            sum(measured) if measured else None, max(r.runs for r in members),
        ))  # fmt: skip
    rank = {name: k for k, name in enumerate(order)}
    return tuple(sorted(out, key=lambda g: (rank.get(g.name, len(rank)), -g.flops, g.name)))


def measured_of_timeline(events: tuple[OpEvent, ...]) -> tuple[MeasuredOp, ...]:
    """The ops of one profiled step (``Report.timeline``, from ``explain(profile=True)``) as
    measured ops: each op's seconds in the step, averaged over the devices."""
    devices = len({e.device for e in events}) or 1
    seconds: dict[str, float] = defaultdict(float)
    runs: dict[str, int] = defaultdict(int)
    for e in events:
        seconds[e.name] += e.seconds
        runs[e.name] += 1
    return tuple(
        MeasuredOp(name, s / devices, runs[name] / devices) for name, s in sorted(seconds.items())
    )


def op_profile_of(
    report: Report, target: Target | None, measured: tuple[MeasuredOp, ...] | None = None
) -> OpProfile:
    """``report``'s step as an op profile on ``target`` (``None``: flops and bytes only, no
    times), with ``measured`` (a profile's ops, :mod:`shardviz.capture.trace_file`) beside
    the prediction."""
    rows, exposed = _predicted_rows(report, target)
    notes = []
    if report.cost is None or not report.cost.ops:
        notes.append("no compiled schedule in the report: nothing predicted")
    elif not any(op.op_name or op.functions for op in report.cost.ops):
        notes.append("the ops carry no jax names (a report saved by an older shardviz?): "
                     "modules and layers unknown, every op in 'other'")  # fmt: skip
    if target is None:
        notes.append("no target: predicted times need one (e.g. target='v5e')")
    if report.cost is not None and report.cost.lower_bound:
        where = ", ".join(lp.where for lp in report.cost.unknown_loops)
        notes.append(f"loops of unknown count counted once ({where}): figures are lower bounds")
    unmatched: tuple[str, ...] = ()
    measured_total = None
    if measured is not None and target is not None:
        notes.append(f"measured where the profile ran, predicted on {target.label}: "
                     "compare the shares")  # fmt: skip
    if measured is not None:
        rows, unmatched, measured_total = _measured_rows(rows, measured)
        if unmatched:
            notes.append(f"{len(unmatched)} profiled ops are not in the schedule: in 'other'")
    timed = [r.seconds for r in rows if r.seconds is not None]
    layer_order = sorted(
        {r.layer for r in rows}, key=lambda name: (name == LAYER_TOP, name)
    )  # fmt: skip
    return OpProfile(
        function=report.function,
        target=target.label if target is not None else "",
        ops=tuple(rows),
        modules=_groups(rows, "module", MODULES),
        layers=_groups(rows, "layer", tuple(layer_order)),
        seconds=sum(timed) if target is not None else None,
        exposed_seconds=exposed if target is not None else None,
        flops=sum(r.flops for r in rows),
        hbm_bytes=sum(r.hbm_bytes for r in rows),
        measured_seconds=measured_total,
        unmatched=unmatched,
        notes=tuple(notes),
    )
