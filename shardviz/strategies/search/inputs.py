"""What a plan search compiles: the function's arguments by name (or a zoo model's train
state), the mesh, and how one assignment of specs becomes a compile-only report.

A zoo model's step is built exactly as :func:`~shardviz.strategies.runner.compare` builds it
(from the plan's rule set), so a plan and ``compare(model, [plan.rules])`` compile the same
program; any other function is compiled on ``ShapeDtypeStruct`` objects carrying the plan's
shardings.
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
from shardviz.capture.leaves import (
    first_named_mesh,
    from_leaves,
    is_placeable,
    named_leaves,
    spec_on_mesh,
)
from shardviz.capture.mesh import Mesh, as_jax_mesh, mesh_has_memory
from shardviz.errors import ShardvizError, problem
from shardviz.explainer.explain import explain
from shardviz.model import Report, Spec
from shardviz.model.roles import path_parts, role_parts
from shardviz.strategies.candidates import Leaf
from shardviz.strategies.memory_space import HOST_KIND, to_device, to_host
from shardviz.strategies.models.configs import ArchConfig
from shardviz.strategies.models.decoder import REMAT_POLICIES
from shardviz.strategies.models.remat import offloads
from shardviz.strategies.pipeline.gspmd import pipelined_model
from shardviz.strategies.pipeline.stages import STAGE_AXIS
from shardviz.strategies.rules import BUILTIN, RuleSet, default_mesh_shape
from shardviz.strategies.rules.pipeline import pipeline_rules
from shardviz.strategies.rules.plans import jax_entries, rule_set_of
from shardviz.strategies.search.activations import activation_specs
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
        """The searched array leaves, each with its role read from its path
        (:func:`~shardviz.model.roles.role_parts`): an argument's name, or inside a state
        object (``state/params/...``, ``state/opt_state/...``) the field that holds it.
        ``inner`` is the path below that name, so optimizer state mirrors its parameter
        however the two are held. The other leaves of a state object that holds parameters
        or optimizer state (a step counter, an rng key) are not data: they are left out
        (kept as given: :meth:`place` passes them on)."""
        out = []
        stateful: set[str] = set()
        found = []
        for path, x in self.flat:
            if not is_placeable(x):
                continue
            role, _, inner = role_parts(path)
            arg = path_parts(path)[0]
            if role != "batch":
                stateful.add(arg)
            found.append((path, x, arg, role, inner))
        for path, x, arg, role, inner in found:
            if role == "batch" and arg in stateful:
                continue
            out.append(
                Leaf(
                    path=path, arg=arg, inner=inner, role=role,
                    shape=tuple(int(n) for n in x.shape),
                    itemsize=int(np.dtype(x.dtype).itemsize),
                )
            )  # fmt: skip
        return out

    def placement(self, leaves: Sequence[Leaf]) -> dict[str, Spec] | None:
        """The specs the arguments came with (the user's placement), for the searched
        ``leaves`` (their roles as searched: weights read from the program count as
        parameters): each leaf placed with a ``NamedSharding`` on the search's mesh keeps its
        spec, any other is whole; ``None`` when no parameter or optimizer leaf is placed on
        that mesh (nothing placed, the data alone, which the search keeps as placed anyway,
        or another mesh) or the search is a zoo model's."""
        if self.model is not None:
            return None
        by_path = dict(self.flat)
        specs: dict[str, Spec] = {}
        placed = False
        for leaf in leaves:
            try:
                spec = spec_on_mesh(by_path[leaf.path], self.jmesh, leaf.path)
            except ShardvizError:  # a spec that does not fit: not a placement to compile
                return None
            placed = placed or (spec is not None and leaf.role != "batch")
            specs[leaf.path] = spec if spec is not None else tuple(() for _ in leaf.shape)
        return specs if placed else None

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
        which sends each layer's input to pinned host memory, only when ``offload``) and its
        own custom one, if it has one (:func:`shardviz.custom_remat`); any other program
        keeps its own remat (``()``)."""
        if self.model is None or not isinstance(self.model.info.get("config"), ArchConfig):
            return (), None
        own = self.model.info.get("remat")
        named = tuple(r for r in REMAT_POLICIES if offload or r != "offload")
        # The model's own custom policy (MaxText's, tensor by tensor) is one to keep trying.
        mine = (
            (own,) if own and own not in REMAT_POLICIES and (offload or not offloads(own)) else ()
        )
        return named + mine, own

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
                fn = on_device(fn, host, list(self.named))
        return explain(fn, *args, run=False, target=self.target, diagnose=False)


def search_pipeline_rules(mesh_axes: int, stages: int, microbatches: int) -> RuleSet:
    """The rule set of a searched pipeline on a mesh of ``mesh_axes`` axes: ``pp+dp`` (the
    other axis splitting each microbatch's rows), or ``pp`` on a one-axis mesh."""
    kind = "pp+dp" if mesh_axes > 1 else "pp"
    return pipeline_rules(kind, stages=stages, microbatches=microbatches)


def on_device(fn: Any, host: Sequence[str], order: list[str]) -> Any:
    """``fn`` with the optimizer state kept in host memory (the leaves at ``host``: an
    argument such as ``opt_state``, or a state object's field such as ``state/opt_state``)
    moved to the device at its start (jax computes on device memory only), and each output
    part shaped like it (the updated optimizer state) sent back to host memory, as
    ZeRO-Offload does."""
    roots = sorted({role_parts(p)[1] for p in host})

    def under(path: str) -> str | None:
        """The root ``path`` lies under, or ``None``."""
        return next((r for r in roots if path == r or path.startswith(r + "/")), None)

    def signature(tree: Any) -> tuple:
        flat, _ = named_leaves(tree)
        return tuple((p, getattr(x, "shape", None), getattr(x, "dtype", None)) for p, x in flat)

    @functools.wraps(fn)
    def wrapped(*args: Any) -> Any:
        named = dict(zip(order, args, strict=False))
        moved = []
        shapes: dict[str, list[tuple]] = {r: [] for r in roots}
        for name, arg in named.items():
            flat, treedef = named_leaves({name: arg})
            leaves = []
            for path, x in flat:
                root = under(path)
                if root is not None:
                    rest = path[len(root) + 1 :] or "<root>"
                    shapes[root].append(
                        (rest, getattr(x, "shape", None), getattr(x, "dtype", None))
                    )
                leaves.append(to_device(x) if root is not None else x)
            moved.append(from_leaves(treedef, leaves)[name])
        wanted = {tuple(v) for v in shapes.values() if v}
        out = fn(*moved, *args[len(moved) :])
        return jax.tree.map(
            lambda x: to_host(x) if signature(x) in wanted else x,
            out,
            is_leaf=lambda x: signature(x) in wanted,
        )

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
