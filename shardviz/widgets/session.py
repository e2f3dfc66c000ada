"""The explorer's session: the user's function and arguments, re-placed per configuration.

:class:`ExplorerSession` reads the starting configuration from the arguments' shardings,
re-places the arguments on a new mesh for each :class:`~shardviz.widgets.controls.Config`
(typed specs, or a builtin strategy's), and explains the function on them. :func:`connect`
wires controls -> background run (newest wins) -> explorer.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from shardviz.capture.calls import context_mesh, in_mesh, named_args
from shardviz.capture.leaves import (
    first_named_mesh,
    from_leaves,
    is_placeable,
    leaf_shape,
    named_leaves,
    spec_on_mesh,
)
from shardviz.capture.mesh import Mesh, mark_sharding
from shardviz.capture.mesh_info import (
    device_pool,
    has_explicit_axes,
    mesh_devices,
    mesh_shape_and_names,
)
from shardviz.capture.spec_text import SpecEntries
from shardviz.errors import CompileError, problem
from shardviz.explainer.background import COMPILING, RUNNING, Latest, Stage
from shardviz.explainer.call import Call
from shardviz.explainer.explain import explain
from shardviz.explainer.fix_apply import CannotApply, apply_fix
from shardviz.model import Report
from shardviz.model.findings import Finding, Fix
from shardviz.model.roles import leaf_role, role_of
from shardviz.strategies.rules import axes_needed, spec_for_leaf
from shardviz.strategies.rules.named import get_rule_set
from shardviz.widgets.config_checks import invalid_words, unused_axes_note
from shardviz.widgets.controls import AS_GIVEN, Config, Controls
from shardviz.widgets.explorer.findings_pane import fix_route

__all__ = [
    "Connection",
    "ExplorerLike",
    "ExplorerSession",
    "FixedProgram",
    "connect",
    "fixed_words",
    "role_of",
]


class ExplorerLike(Protocol):
    """What :func:`connect` needs of the explorer widget."""

    status: str
    error: str
    #: Which control is wrong while the panes show the last valid configuration ("" if none).
    stale: str
    #: Which fixes the program shown has, while it is one shardviz fixed ("" for the user's).
    fixed: str

    def show(self, report: Any) -> None: ...


def _entries(spec: tuple[tuple[str, ...], ...]) -> SpecEntries:
    """The model's spec (a tuple of axes per dim) as spec entries (None, 'a' or ('a', 'b'))."""
    return tuple(None if not e else e[0] if len(e) == 1 else tuple(e) for e in spec)


class ExplorerSession:
    """A function and its arguments, explained under any mesh and specs the controls give.

    Args:
        fn: the function to explain (plain or jitted).
        *args: its arguments: pytrees of arrays (placed or not) and other values (kept as they
            are). Leaves are named by path, e.g. ``params/w1``, as in ``Report.arguments``.
        steps: timed steps per run.
        devices: the devices new meshes use: a count (the first ``n``), a list of device ids,
            or None for the devices of the arguments' mesh (all devices if none is placed).
            Arguments placed on a deviceless topology (``ShapeDtypeStruct`` objects on its mesh)
            make new meshes over that topology's devices: compiled for it, never run.
        target: the hardware estimates are made for (see :func:`shardviz.explain`).

    Made inside ``with jax.set_mesh(mesh):``, the session keeps that context for its runs
    (which happen on other threads, where jax's mesh context does not follow): each
    configuration runs with its own mesh as the context mesh, with the context mesh's axis
    types (Explicit axes stay Explicit), so ``P('data')`` inside the function resolves.
    A donating step (``jax.jit(step, donate_argnums=0)``) is run on copies by ``explain``:
    the arguments given stay alive.
    """

    def __init__(
        self,
        fn: Any,
        *args: Any,
        steps: int = 2,
        devices: int | Sequence[int] | None = None,
        target: Any = None,
    ) -> None:
        self.fn = fn
        self.target = target
        self.args = args
        self.steps = steps
        named = named_args(fn, args)
        self.arg_names = tuple(named)
        self._flat, self._treedef = named_leaves(named)
        #: Leaf path -> shape of every array leaf, in argument order.
        self.shapes = {p: leaf_shape(x) for p, x in self._flat if is_placeable(x)}
        self._mesh = first_named_mesh(leaf for _, leaf in self._flat)
        self._context = context_mesh()  # jax's mesh context is per thread: keep it
        self._pool = self._device_pool()
        self.device_ids = self._device_ids(devices)
        self._lock = threading.Lock()  # one compile/run at a time; stale waiters then stop

    # --- reading the arguments -------------------------------------------------------------

    def _device_pool(self) -> list[Any]:
        """The devices new meshes are made of (``device_ids`` index it): jax's, or a
        deviceless topology's when the arguments are placed on one (then nothing runs)."""
        return device_pool(self._mesh if self._mesh is not None else self._context)

    def _device_ids(self, devices: int | Sequence[int] | None) -> tuple[int, ...]:
        everything = self._pool
        if isinstance(devices, int):
            return tuple(range(devices))
        if devices is not None:
            return tuple(int(i) for i in devices)
        if self._mesh is None and self._context is not None:
            position = {d.id: i for i, d in enumerate(everything)}
            return tuple(position[d.id] for d in mesh_devices(self._context))
        if self._mesh is None:
            return tuple(range(len(everything)))
        position = {d.id: i for i, d in enumerate(everything)}
        return tuple(position[d.id] for d in mesh_devices(self._mesh))

    def _leaf_spec(self, path: str, leaf: Any) -> SpecEntries:
        spec = spec_on_mesh(leaf, self._mesh, path)
        if spec is None:
            return (None,) * len(leaf_shape(leaf))  # not on the session's mesh: start replicated
        return _entries(spec)

    def initial_config(self) -> Config:
        """The mesh, axis names and specs the arguments carry now (leaves not on the first
        named mesh are replicated; with no placed leaf, one ``data`` axis over all devices)."""
        if self._mesh is None and self._context is not None:
            shape, names = mesh_shape_and_names(self._context)
        elif self._mesh is None:
            shape, names = (len(self.device_ids),), ("data",)
        else:
            shape, names = mesh_shape_and_names(self._mesh)
        specs = {p: self._leaf_spec(p, x) for p, x in self._flat if is_placeable(x)}
        return Config(shape, names, AS_GIVEN, specs)

    # --- placing ---------------------------------------------------------------------------

    def strategy_specs(
        self, mesh_shape: tuple[int, ...], axis_names: tuple[str, ...], strategy: str
    ) -> dict[str, SpecEntries]:
        """Each array leaf's spec under a builtin strategy (by its role, :func:`leaf_role`:
        ``state/params/...`` gets the parameter rules, ``state/opt/...`` the optimizer's).

        Raises:
            ShardvizError: unknown strategy, or the mesh lacks an axis the strategy needs.
            SpecError: a rule's spec does not fit a leaf (names the leaf, dim and axis).
        """
        rule_set = get_rule_set(strategy)
        axes_needed(rule_set, axis_names)
        axes = dict(zip(axis_names, mesh_shape, strict=True))
        out: dict[str, SpecEntries] = {}
        for path, shape in self.shapes.items():
            arg, _, inner = path.partition("/")
            role = leaf_role(path)
            if not shape:
                out[path] = ()  # a scalar has no dim to split
                continue
            rules = rule_set.rules_for(role)
            out[path], _ = spec_for_leaf(inner or arg, shape, rules, axes, role)
        return out

    def specs_for(self, config: Config) -> dict[str, SpecEntries]:
        """The specs a configuration means: as typed, or its strategy's."""
        if config.strategy == AS_GIVEN:
            return {p: tuple(config.specs.get(p, ())) for p in self.shapes}
        return self.strategy_specs(config.mesh_shape, config.axis_names, config.strategy)

    def mesh(self, config: Config) -> Mesh:
        """The configuration's mesh over the session's devices (MeshError if it does not fit);
        its axes are Explicit when the context mesh the session was made in had Explicit axes."""
        explicit = self._context is not None and has_explicit_axes(self._context)
        kind = "explicit" if explicit else "auto"
        devices = [self._pool[i] for i in self.device_ids]
        return Mesh(devices, config.mesh_shape, config.axis_names, axis_types=kind)

    @contextlib.contextmanager
    def context(self, config: Config) -> Iterator[None]:
        """Run the block under the configuration's mesh as the context mesh, when the session
        was made under one (``with jax.set_mesh``); otherwise change nothing."""
        if self._context is None:
            yield
            return
        with in_mesh(self.mesh(config).jax_mesh):
            yield

    def build(self, config: Config) -> tuple:
        """The arguments re-placed on the configuration's mesh with its specs.

        Raises:
            MeshError, SpecError: the mesh or a spec does not fit (the message names the leaf).
        """
        mesh = self.mesh(config)
        specs = self.specs_for(config)
        leaves = [
            mark_sharding(x, mesh, specs[p], name=p) if p in specs else x for p, x in self._flat
        ]
        named = from_leaves(self._treedef, leaves)
        return tuple(named[name] for name in self.arg_names)  # jax sorts dict keys

    # --- running ---------------------------------------------------------------------------

    def run(self, config: Config, stage: Stage | None = None) -> Report:
        """Place, compile and run: ``explain(fn, *placed, run=True, steps=steps)``.

        With a :class:`~shardviz.explainer.background.Stage` (from :class:`Latest`), reports
        "compiling" then "running", and stops early once a newer request was submitted.
        """
        with self._lock, self.context(config):
            if stage is not None:
                stage(COMPILING)
            placed = self.build(config)
            if stage is not None:
                explain(self.fn, *placed, run=False, target=self.target)  # the run reuses it
                stage(RUNNING)
            report = explain(self.fn, *placed, run=True, steps=self.steps, target=self.target)
        notes = [
            n
            for n in (
                _strategy_note(config.strategy),
                unused_axes_note(config.strategy, config.mesh_shape, config.axis_names),
            )
            if n
        ]
        return replace(report, notes=(*report.notes, *notes)) if notes else report

    def run_fixed(
        self,
        config: Config,
        fix: Fix,
        base: FixedProgram | None = None,
        stage: Stage | None = None,
    ) -> FixedProgram:
        """Compile (compile-only) the program with ``fix`` applied: the function placed as
        ``config`` says, or ``base`` (a fixed program already shown) for fixes on top of it.

        For the fixes the controls cannot express (a sharding constraint added or dropped, a
        spec for a leaf no box controls); :func:`~shardviz.explainer.fix_apply.apply_fix` makes
        the fixed function and its abstract arguments.

        Raises:
            CompileError: the fix cannot be applied to this program (says why).
            ShardvizError: from placing or compiling.
        """
        with self._lock, self.context(config):
            if stage is not None:
                stage(COMPILING)
            fn, args = (base.fn, base.args) if base is not None else (self.fn, self.build(config))
            try:
                fixed = apply_fix(Call(fn, args), fix)
            except CannotApply as err:
                raise CompileError(
                    problem(
                        "try this fix",
                        f"shardviz cannot apply {fix.description!r} here ({err})",
                        f"make the change in your code: {fix.code}",
                    )
                ) from err
            report = explain(fixed.fn, *fixed.args, run=False, target=self.target)
        fixes = (*(base.fixes if base is not None else ()), fix)
        return FixedProgram(report, fixed.fn, fixed.args, fixes)

    def controls(self, logical_axes: Mapping[str, Sequence[str | None]] | None = None) -> Controls:
        """:class:`Controls` for this session's leaves, starting from :meth:`initial_config`
        (``logical_axes``: leaf pattern -> logical dim names, for the logical rules box)."""
        return Controls(
            self.shapes, self.initial_config(), devices=len(self.device_ids),
            strategy_specs=self.strategy_specs, logical_axes=logical_axes,
        )  # fmt: skip

    def connect(
        self, explorer: ExplorerLike, controls: Controls | None = None, *, run_now: bool = True
    ) -> Connection:
        """See :func:`connect` (with :meth:`controls` when none are given)."""
        return connect(
            explorer, controls if controls is not None else self.controls(), self, run_now=run_now
        )


def _strategy_note(strategy: str) -> str:
    """What a strategy could not do to a plain function: only its argument rules applied."""
    if strategy == AS_GIVEN:
        return ""
    rule_set = get_rule_set(strategy)
    skipped = []
    if rule_set.grads is not None and rule_set.grads != rule_set.params:
        skipped.append("gradients")
    if rule_set.activations:
        skipped.append("activations")
    if not skipped:
        return ""
    return (
        f"strategy {strategy!r} placed the arguments only: its rules for "
        f"{' and '.join(skipped)} need hooks inside the function (see shardviz.compare), so "
        "the compiler chose those shardings here"
    )


def status_setter(explorer: ExplorerLike):
    """Set ``explorer.error`` and ``explorer.status``, touching each only when it changes."""

    def on_status(status: str, error: str) -> None:
        if error and explorer.error != error:
            explorer.error = error  # the message first, so a view reacting to "error" has it
        if explorer.status != status:
            explorer.status = status
        if not error and explorer.error:
            explorer.error = ""

    return on_status


@dataclass(frozen=True)
class FixedProgram:
    """A program with fixes applied by shardviz (not the user's own), compiled: its report,
    the fixed function and abstract arguments (for a further fix on top), the fixes in order."""

    report: Report
    fn: Any
    args: tuple
    fixes: tuple[Fix, ...]


def fixed_words(fixes: Sequence[Fix]) -> str:
    """The Explorer's badge while it shows a fixed program: which fixes, and how to go back."""
    if not fixes:
        return ""
    what = "; then ".join(f.description for f in fixes)
    return (
        f"showing the fixed program, not your code (compile-only): {what}. "
        "Change a control to go back to your program."
    )


class Connection:
    """Controls wired to a session and an explorer (what :func:`connect` returns).

    ``submit(config)`` runs a configuration from code (the controls call it on each change);
    ``try_fix(finding)`` tries a finding's fix (a spec box, the mesh shape, or the fixed
    program compiled); ``wait()`` blocks until the newest run is shown; ``latest`` is the
    :class:`Latest`. ``program`` is the fixed program shown, or ``None`` for the user's own.
    """

    def __init__(
        self, explorer: ExplorerLike, session: ExplorerSession, controls: Controls | None = None
    ) -> None:
        self.explorer = explorer
        self.session = session
        self.controls = controls
        self.config: Config | None = controls.config if controls is not None else None
        self.program: FixedProgram | None = None
        self.latest = Latest(on_result=self._deliver, on_status=status_setter(explorer))

    def submit(self, config: Config) -> int:
        """Run ``config`` in the background; returns its generation number."""
        self.config = config
        return self.latest.submit(lambda stage: self.session.run(config, stage))

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the newest run is shown (or failed); False on timeout."""
        return self.latest.wait(timeout)

    @property
    def boxes(self) -> tuple[str, ...]:
        """The leaf paths the controls' spec boxes set."""
        return tuple(self.controls.spec_boxes) if self.controls is not None else ()

    def try_fix(self, finding: Finding) -> None:
        """Apply ``finding``'s fix as the Explorer's "try this fix" does.

        A spec for a leaf a box controls is typed into that box, a mesh reshape picked in the
        mesh shape control: the controls then recompile in the background as for an edit. Any
        other fix (a constraint added or dropped, a spec for a leaf no box controls) compiles
        the fixed program in the background (on top of the fixed program shown, if one is),
        shown with a badge saying so. Errors show in the explorer, never raise into the kernel
        from the background.

        Raises:
            ValueError: the finding has no fix.
        """
        fix = finding.fix
        if fix is None:
            raise ValueError(f"the finding {finding.title!r} has no fix to try")
        route = fix_route(fix, self.boxes)
        if route == "box" and self.controls is not None and self.program is None:
            self.controls.apply_spec(fix.leaf, _entries(fix.spec or ()))
            return
        if route == "mesh" and self.controls is not None and self.program is None:
            self.controls.apply_mesh_shape(fix.mesh_shape)
            return
        config = self.config or (self.controls.config if self.controls is not None else None)
        config = config or self.session.initial_config()
        base = self.program
        self.latest.submit(lambda stage: self.session.run_fixed(config, fix, base, stage))

    def _deliver(self, result: Report | FixedProgram) -> None:
        """Show a run's report (the user's program) or a fixed program (with its badge)."""
        program = result if isinstance(result, FixedProgram) else None
        words = fixed_words(program.fixes) if program is not None else ""
        if getattr(self.explorer, "fixed", None) != words:
            self.explorer.fixed = words
        self.explorer.show(program.report if program is not None else result)
        self.program = program


def connect(
    explorer: ExplorerLike, controls: Controls, session: ExplorerSession, *, run_now: bool = True
) -> Connection:
    """Wire ``controls`` -> background runs of ``session`` (newest wins) -> ``explorer``.

    Every valid configuration the controls hand on is run in a background thread; the newest
    one's report goes to ``explorer.show`` and its progress to ``explorer.status`` /
    ``explorer.error``. While a field is wrong, ``explorer.stale`` says which (the panes keep
    the last valid configuration). Nothing is raised into the kernel. With ``run_now``, the
    controls' current configuration runs at once. An explorer with ``set_fix_handler`` (the
    :class:`~shardviz.widgets.explorer.widget.ExplorerWidget`) gets :meth:`Connection.try_fix` for its
    "try this fix" buttons, and its ``fixed`` says when it shows a program shardviz fixed.
    """
    connection = Connection(explorer, session, controls)
    controls.on_change(connection.submit)
    set_fix_handler = getattr(explorer, "set_fix_handler", None)
    if callable(set_fix_handler):
        set_fix_handler(connection.try_fix, connection.boxes)
    controls.on_errors(lambda errors: setattr(explorer, "stale", invalid_words(errors)))
    explorer.stale = invalid_words(controls.errors)
    if run_now and controls.config is not None:
        connection.submit(controls.config)
    return connection
