"""What a plan search compiles: the function's arguments by name (or a zoo model's train
state), the mesh, and how one assignment of specs becomes a compile-only report.

A zoo model's step is built exactly as :func:`~.runner.compare` builds it (from the plan's
rule set), so a plan and ``compare(model, [plan.rules])`` compile the same program; any other
function is compiled on ``ShapeDtypeStruct`` objects carrying the plan's shardings.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np
import optax
from jax.sharding import NamedSharding, PartitionSpec

from shardviz.capture.calls import named_args
from shardviz.capture.leaves import first_named_mesh, from_leaves, is_placeable, named_leaves
from shardviz.capture.mesh import Mesh, as_jax_mesh, mesh_has_memory
from shardviz.errors import ShardvizError, problem
from shardviz.explainer.explain import explain
from shardviz.model import Report, Spec
from shardviz.model.roles import argument_role
from shardviz.strategies.candidates import Leaf
from shardviz.strategies.memory_space import HOST_KIND, to_device, to_host
from shardviz.strategies.models.configs import ArchConfig
from shardviz.strategies.models.decoder import REMAT_POLICIES
from shardviz.strategies.pipeline.gspmd import pipelined_model
from shardviz.strategies.pipeline.rule_sets import pipeline_rules
from shardviz.strategies.pipeline.stages import STAGE_AXIS
from shardviz.strategies.rules import BUILTIN, RuleSet, default_mesh_shape
from shardviz.strategies.search.activations import activation_specs
from shardviz.strategies.search.rules import jax_entries, rule_set_of
from shardviz.strategies.search.structure import Structure, read_structure
from shardviz.strategies.step import strategy_step
from shardviz.strategies.zoo import ModelDef, get_model


@dataclass
class SearchInputs:
    """The searched arguments, by name, and how to compile a choice of specs for them."""

    name: str
    fn: Any
    named: dict[str, Any]
    jmesh: jax.sharding.Mesh
    model: ModelDef | None
    optimizer: Any
    target: Any

    def __post_init__(self) -> None:
        self.flat, self.treedef = named_leaves(self.named)

    def leaves(self) -> list[Leaf]:
        out = []
        for path, x in self.flat:
            if not is_placeable(x):
                continue
            arg, _, inner = path.partition("/")
            out.append(
                Leaf(
                    path=path, arg=arg, inner=inner or arg, role=argument_role(arg),
                    shape=tuple(int(n) for n in x.shape),
                    itemsize=int(np.dtype(x.dtype).itemsize),
                )
            )  # fmt: skip
        return out

    def _sharding(self, spec: Spec, host: bool = False) -> NamedSharding:
        kind = {"memory_kind": HOST_KIND} if host else {}
        return NamedSharding(self.jmesh, PartitionSpec(*jax_entries(spec)), **kind)

    def has_host_memory(self) -> bool:
        """Whether the mesh's devices have pinned host memory (CPU does; a deviceless
        topology lists no memories)."""
        return mesh_has_memory(self.jmesh, HOST_KIND)

    def place(
        self, specs: dict[str, Spec], abstract: bool = False, host: Sequence[str] = ()
    ) -> tuple:
        """The arguments with ``specs``: ``ShapeDtypeStruct`` objects (``abstract``, or when they
        are abstract already) or arrays put on the devices; the leaves at ``host`` in pinned
        host memory."""
        leaves = []
        on_host = set(host)
        for path, x in self.flat:
            if path not in specs:
                leaves.append(x)
                continue
            sharding = self._sharding(specs[path], path in on_host)
            if abstract or isinstance(x, jax.ShapeDtypeStruct):
                leaves.append(jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=sharding))
            else:
                leaves.append(jax.device_put(x, sharding))
        placed = from_leaves(self.treedef, leaves)  # a dict: jax orders its keys
        return tuple(placed[name] for name in self.named)

    def placed_batch(self, batch_paths: set[str]) -> tuple[str, ...] | None:
        """The mesh axes dim 0 of the inputs at ``batch_paths`` is placed over, when every one
        of them is placed alike with a ``NamedSharding`` on the search's mesh (the data
        arrives so: the search keeps it); ``None`` otherwise."""
        found: set[tuple[str, ...]] = set()
        for path, x in self.flat:
            if path not in batch_paths or not getattr(x, "shape", ()):
                continue
            sharding = getattr(x, "sharding", None)
            if not isinstance(sharding, NamedSharding) or sharding.mesh.shape != self.jmesh.shape:
                return None
            entries = [*sharding.spec] + [None] * (len(x.shape) - len(sharding.spec))
            if any(e is not None for e in entries[1:]):
                return None
            first = entries[0]
            found.add(() if first is None else (first,) if isinstance(first, str) else tuple(first))
        return found.pop() if len(found) == 1 else None

    def remat_policies(self, offload: bool) -> tuple[tuple[str, ...], str | None]:
        """The remat policies a plan may give the model's decoder, and the model's own: a
        published architecture's layer scan takes any of :data:`REMAT_POLICIES` (``offload``,
        which sends each layer's input to pinned host memory, only when ``offload``); any
        other program keeps its own remat (``()``)."""
        if self.model is None or not isinstance(self.model.info.get("config"), ArchConfig):
            return (), None
        own = self.model.info.get("remat")
        return tuple(r for r in REMAT_POLICIES if offload or r != "offload"), own

    def activation_specs(self, specs: dict[str, Spec], batch: tuple[str, ...]) -> dict[str, Spec]:
        """The activation specs a plan with ``specs`` implies on a published decoder
        (:mod:`.activations`); ``{}`` for any other program (the compiler places them)."""
        config = self.model.info.get("config") if self.model is not None else None
        if not isinstance(config, ArchConfig):
            return {}
        return activation_specs(config, specs, batch)

    def pipeline_options(self) -> tuple[dict[str, tuple[int, ...]], str]:
        """For each mesh axis that can carry a pipeline's stages, the microbatch counts that
        fit, and why none can (``""`` when some can).

        A pipeline (:mod:`~shardviz.strategies.pipeline`, GSPMD's form) needs a model whose
        parameters hold a list of identical layers (the zoo transformer), a mesh of one axis
        (``pp``) or two (``pp+dp``: the other axis splits each microbatch's rows), an axis
        whose size divides the layers, and a microbatch count that divides the batch, is at
        least the stages (fewer leave stages idle) and leaves each microbatch's rows
        dividing over the other axis.
        """
        if self.model is None:
            return (
                {},
                "a pipeline is a model's (the search of a plain function cannot stack its layers)",
            )
        layers = (
            self.named["params"].get("layers") if isinstance(self.named["params"], dict) else None
        )
        if not isinstance(layers, list) or not layers:
            return {}, (
                f"model {self.model.name!r} has no list of identical layers to pipeline "
                "(the zoo transformer has)"
            )
        if self.jmesh.devices.ndim > 2:
            return {}, "a pipeline is searched on a mesh of one or two axes"
        batch = int(jax.tree.leaves(self.named["batch"])[0].shape[0])
        sizes = dict(
            zip((str(a) for a in self.jmesh.axis_names), self.jmesh.devices.shape, strict=True)
        )
        out: dict[str, tuple[int, ...]] = {}
        for axis, stages in sizes.items():
            rest = math.prod(n for a, n in sizes.items() if a != axis)
            if stages < 2 or len(layers) % stages:
                continue
            counts = tuple(
                m for m in range(stages, batch + 1) if batch % m == 0 and (batch // m) % rest == 0
            )
            if counts:
                out[axis] = counts
        if not out:
            return {}, (
                f"no mesh axis divides the {len(layers)} layers with a microbatch count that "
                f"divides the batch of {batch}"
            )
        return out, ""

    def compile_pipeline(self, axis: str, microbatches: int) -> Report:
        """The compile-only report of the model trained as a pipeline (GSPMD's form, as
        ``compare`` runs ``pp``/``pp+dp``): mesh axis ``axis`` as the stages, the other axis
        (if any) as the data axis splitting each microbatch's rows."""
        assert self.model is not None
        names = tuple(str(a) for a in self.jmesh.axis_names)
        renamed = tuple(STAGE_AXIS if a == axis else "data" for a in names)
        jm = jax.sharding.Mesh(self.jmesh.devices, renamed)
        stages = int(self.jmesh.shape[axis])
        rules = search_pipeline_rules(len(names), stages, microbatches)
        model = pipelined_model(self.model, stages=stages, microbatches=microbatches)
        built = strategy_step(model, rules, jm, optimizer=self.optimizer)
        return explain(built.step, *built.abstract, run=False, target=self.target, diagnose=False)

    def structure(self) -> Structure | None:
        """The program's links and weights (:mod:`.structure`), read from its jaxpr with the
        arguments whole; ``None`` when it does not trace (compiling a plan then says why)."""
        if self.model is not None:
            whole = {path: tuple(() for _ in x.shape) for path, x in self.flat if is_placeable(x)}
            built = strategy_step(
                self.model, rule_set_of(whole, self.jmesh.axis_names), self.jmesh,
                optimizer=self.optimizer,
            )  # fmt: skip
            fn, args = built.step, built.abstract
        else:
            fn, args = self.fn, self.place({}, abstract=True)
        paths: list[str | None] = []
        for name, arg in zip(self.named, args, strict=True):
            paths += [p if is_placeable(x) else None for p, x in named_leaves({name: arg})[0]]
        try:
            return read_structure(fn, tuple(args), paths)
        except Exception:  # noqa: BLE001 - a program that does not trace fails when compiled
            return None

    def compile(
        self, specs: dict[str, Spec], rules: RuleSet | None, host: Sequence[str] = ()
    ) -> Report:
        """The compile-only report of the arguments placed with ``specs`` (the leaves at
        ``host`` in pinned host memory: a zoo model's step brings them to the device for the
        update and back, as ``rules.host`` says; any other function is compiled with those
        arguments brought to the device at its start).

        Without findings (``diagnose=False``): trying each finding's fix compiles again, and
        that time is better spent on more plans; explain the plan you pick for its findings
        (``sv.explain(fn, *search.arguments())``). ``rules`` (the plan's rule set) are
        needed for a zoo model only.
        """
        if self.model is not None:  # the zoo's step, exactly as compare builds it
            assert rules is not None, "a zoo model's step is built from its rules"
            built = strategy_step(self.model, rules, self.jmesh, optimizer=self.optimizer)
            fn, args = built.step, built.abstract
        else:
            fn, args = self.fn, self.place(specs, abstract=True, host=host)
            if host:
                fn = on_device(fn, {p.partition("/")[0] for p in host}, list(self.named))
        return explain(fn, *args, run=False, target=self.target, diagnose=False)


def search_pipeline_rules(mesh_axes: int, stages: int, microbatches: int) -> RuleSet:
    """The rule set of a searched pipeline on a mesh of ``mesh_axes`` axes: ``pp+dp`` (the
    other axis splitting each microbatch's rows), or ``pp`` on a one-axis mesh."""
    kind = "pp+dp" if mesh_axes > 1 else "pp"
    return pipeline_rules(kind, stages=stages, microbatches=microbatches)


def on_device(fn: Any, names: set[str], order: list[str]) -> Any:
    """``fn`` with its arguments named in ``names`` (kept in host memory) moved to the device
    at its start (jax computes on device memory only), and each output shaped like one of
    them (the updated optimizer state) sent back to host memory, as ZeRO-Offload does."""

    def signature(tree: Any) -> tuple:
        leaves, treedef = jax.tree.flatten(tree)
        return treedef, tuple(
            (getattr(x, "shape", None), getattr(x, "dtype", None)) for x in leaves
        )

    @functools.wraps(fn)
    def wrapped(*args: Any) -> Any:
        moved = [to_device(a) if n in names else a for n, a in zip(order, args, strict=False)]
        host = [signature(a) for n, a in zip(order, moved, strict=False) if n in names]
        out = fn(*moved, *args[len(moved) :])
        if not isinstance(out, tuple | list):
            return out
        back = [to_host(o) if signature(o) in host else o for o in out]
        return type(out)(back) if isinstance(out, list) else tuple(back)

    return wrapped


def search_inputs(
    fn: Any, args: tuple, mesh: Any, optimizer: Any, target: Any, seed: int
) -> SearchInputs:
    model = None
    if not args and isinstance(fn, str | ModelDef):
        model = get_model(fn) if isinstance(fn, str) else fn
        opt = optimizer or optax.adam(1e-3)
        key_p, key_b = jax.random.split(jax.random.key(seed))
        params = jax.eval_shape(model.init_params, key_p)
        named = {
            "params": params,
            "opt_state": jax.eval_shape(opt.init, params),
            "batch": jax.eval_shape(model.make_batch, key_b),
        }
        name = f"{model.name} train step"
    elif not callable(fn):
        raise ShardvizError(
            problem(
                "suggest",
                f"{type(fn).__name__} is neither a function nor a model",
                "pass a train step and its arguments (sv.suggest(step, params, opt_state, "
                "batch, mesh=...)), or a zoo model's name or ModelDef alone",
            )
        )
    else:
        named = named_args(fn, args)
        name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)
    jm = _mesh(mesh, named)
    return SearchInputs(name, fn, named, jm, model, optimizer, target)


def _mesh(mesh: Any, named: dict[str, Any]) -> jax.sharding.Mesh:
    if mesh is not None:
        return as_jax_mesh(mesh)
    placed = first_named_mesh(jax.tree.leaves(named))
    if placed is not None:
        return placed
    shape = default_mesh_shape(BUILTIN["tp"], len(jax.devices()))
    return Mesh(jax.devices(), shape, ("data", "model")).jax_mesh
