"""A program a framework already jitted: jax's stages (``Traced``, ``Lowered``, ``Compiled``)
as :func:`~shardviz.explain` takes them.

MaxText, Levanter and Flax NNX trainers build their step and its shardings themselves and hold
``jax.jit(step).trace(*args)``, ``.lower(*args)`` or ``.lower(*args).compile()``. A
:class:`StageProgram` stands for the function in shardviz's machinery: it has the function's
name and parameter names, its arguments' shapes and dtypes (``args_info``; the shardings come
from the compiled program), checks the arguments a caller passes to run it, and for a
``Traced`` runs its jaxpr unsharded (the single-device check). A Flax NNX stage
(``nnx.jit(step).lower(...)``) is read through the jax stage it wraps.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

import jax
import numpy as np

from shardviz.capture.calls import argument_name
from shardviz.errors import ShardvizError, problem

#: jax's stage classes, the most compiled last.
_KINDS = (
    (jax.stages.Compiled, "Compiled"),
    (jax.stages.Lowered, "Lowered"),
    (jax.stages.Traced, "Traced"),
)

_STAGES = (jax.stages.Traced, jax.stages.Lowered, jax.stages.Compiled)

#: What a Flax NNX stage calls the jax stage it wraps.
_NNX_INNER = ("compiled", "lowered", "traced")


def jax_stage(x: Any) -> Any:
    """The jax stage ``x`` is or wraps (a Flax NNX ``Traced``/``Lowered``/``Compiled``
    wraps one), else ``None``."""
    if isinstance(x, _STAGES):
        return x
    if type(x).__module__.startswith("flax.nnx"):
        for name in _NNX_INNER:
            inner = getattr(x, name, None)
            if isinstance(inner, _STAGES):
                return inner
    return None


def _kind(stage: Any) -> str:
    return next(name for cls, name in _KINDS if isinstance(stage, cls))


class StageProgram:
    """A jax stage standing for the function :func:`~shardviz.explain` was given.

    Attributes:
        stage: the jax ``Traced``, ``Lowered`` or ``Compiled`` itself.
        kind: ``"Traced"``, ``"Lowered"`` or ``"Compiled"``.
        wrapped_by: ``"flax.nnx"`` for a Flax NNX stage (its arguments are NNX's pure state,
            not the modules), else ``""``.
        jaxpr: the traced ``ClosedJaxpr`` (a ``Traced``'s; ``None`` for the others: a
            ``Lowered`` in jax 0.10 keeps only its MLIR module).
        entry: where the traced function runs, to start call chains at: its file (``""``
            when only its name is known) and names.
        leaf_names: the name jax gives each input leaf (``params['w']``), in ``args_info``
            order, or ``()`` when the program does not say.

    Equal to another only when both wrap the same stage object (the cache's key).
    """

    def __init__(self, given: Any) -> None:
        stage = jax_stage(given)
        if stage is None:
            raise TypeError(f"not a jax stage: {type(given).__name__}")
        self.stage = stage
        self.kind = _kind(stage)
        self.wrapped_by = "flax.nnx" if stage is not given else ""
        self.jaxpr = stage.jaxpr if isinstance(stage, jax.stages.Traced) else None
        name, file = _function_name(stage, self.jaxpr)
        # The names a function has, read by function_name() and the reports.
        self.__name__ = self.__qualname__ = name
        self.entry: tuple[str, frozenset[str]] = (file, frozenset({name}))
        self.leaf_names = _leaf_names(stage, self.jaxpr)
        self._signature = _signature(stage, self.leaf_names)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StageProgram) and other.stage is self.stage

    def __hash__(self) -> int:
        return hash((StageProgram, id(self.stage)))

    def __repr__(self) -> str:
        return f"<{self.kind} of {self.__name__}>"

    @property
    def __signature__(self) -> inspect.Signature:
        """The parameters, positional ones by name where the program says them (for the
        report's argument names)."""
        return self._signature

    @property
    def where(self) -> str:
        """How messages name this program: ``the Lowered of 'step'``."""
        return f"the {self.kind} of {self.__name__!r}"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """A ``Traced``: its jaxpr evaluated on the arguments (unsharded, on whatever
        devices they are on). The others have no function to run."""
        if self.jaxpr is None:
            raise ShardvizError(
                problem(
                    self.where,
                    "it holds no Python function or jaxpr to run again",
                    "pass reference=<the step function> to check its outputs, or explain "
                    "the step function itself to try fixes",
                )
            )
        leaves = jax.tree.leaves((args, kwargs))
        out = jax.core.eval_jaxpr(self.jaxpr.jaxpr, self.jaxpr.consts, *leaves)
        return jax.tree.unflatten(self.stage.out_tree, out)

    def abstract(self) -> tuple[tuple, dict]:
        """The arguments as the program takes them: ``ShapeDtypeStruct`` objects without
        shardings (the compiled program's are added by
        :func:`~shardviz.capture.calls.abstract_placed`)."""
        infos = self.stage.args_info
        shaped = jax.tree.map(lambda i: jax.ShapeDtypeStruct(i.shape, i.dtype), infos)
        args, kwargs = shaped
        return tuple(args), dict(kwargs)

    def donated(self) -> tuple[bool, ...]:
        """Per input leaf, whether the program donates its buffer (as jit was told)."""
        return tuple(
            bool(getattr(i, "donated", False)) for i in jax.tree.leaves(self.stage.args_info)
        )

    def arguments(self, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        """The arguments a caller gave to run the program, as it takes them.

        Static arguments given as for ``jax.jit(f).lower(...)`` are left out (the program has
        them compiled in) when that makes the arguments fit.

        Raises:
            ShardvizError: the arguments do not fit the program: another number or
                structure, or an array of another shape or dtype (naming the argument).
        """
        if self.wrapped_by:
            raise ShardvizError(
                problem(
                    self.where,
                    "a Flax NNX stage takes NNX's pure state, not the modules you hold",
                    "explain the nnx.jit function itself to run it "
                    "(sv.explain(train_step, model, optimizer, batch)), or its stage "
                    "without arguments to see the program",
                )
            )
        want_args, want_kwargs = self.abstract()
        if len(args) > len(want_args):
            dynamic = tuple(a for a in args if jax.tree.leaves(a) and _has_array(a))
            if len(dynamic) == len(want_args):
                args = dynamic
        want: Any = jax.tree.structure((want_args, want_kwargs))
        if jax.tree.structure((args, kwargs)) != want:
            raise ShardvizError(
                problem(
                    self.where,
                    f"the arguments given ({_count(args, kwargs)}) are not the ones it was "
                    f"lowered for ({_count(want_args, want_kwargs)}: {self._expected()})",
                    "pass the arguments as the lowered program takes them (its static "
                    "arguments left out), or none to explain it without running",
                )
            )
        wanted = jax.tree.leaves((want_args, want_kwargs))
        given = jax.tree_util.tree_flatten_with_path((args, kwargs))[0]
        for i, ((path, x), w) in enumerate(zip(given, wanted, strict=True)):
            shape, dtype = np.shape(x), getattr(x, "dtype", None)
            # as jax takes them: a float64 numpy array is float32 unless x64 is on
            same_dtype = dtype is None or jax.dtypes.canonicalize_dtype(dtype) == w.dtype
            if tuple(shape) != tuple(w.shape) or not same_dtype:
                had = f"{dtype}{list(shape)}" if dtype is not None else f"{type(x).__name__}"
                raise ShardvizError(
                    problem(
                        f"{argument_name(path)}{self._leaf_label(i)} of {self.where}",
                        f"it is {had}, but the program was lowered for {w.dtype}{list(w.shape)}",
                        "pass arrays of the shapes and dtypes it was lowered for, or lower "
                        "it again for these (jax.jit(step).lower(*args))",
                    )
                )
        return args, kwargs

    def _leaf_label(self, i: int) -> str:
        return f" ({self.leaf_names[i]})" if i < len(self.leaf_names) else ""

    def _expected(self) -> str:
        args, kwargs = self.abstract()
        names = list(self._signature.parameters)
        parts = [
            f"{names[i] if i < len(names) else f'arg{i}'}: {_shape_text(a)}"
            for i, a in enumerate(args)
        ]
        parts += [f"{k}=: {_shape_text(v)}" for k, v in kwargs.items()]
        return ", ".join(parts) or "no arguments"

    def how_to_run(self) -> str:
        """What to pass to run, time and check the program."""
        if self.wrapped_by:
            return (
                "to run, time and check it, explain the nnx.jit function with its arguments "
                f"(sv.explain({self.__name__}, model, ...))"
            )
        return (
            f"pass them after it (sv.explain({self.kind.lower()}, *args)) to run, time and check it"
        )

    def notes(self) -> tuple[str, ...]:
        """What explaining this stage leaves out, for the report."""
        if self.kind != "Compiled":
            return ()
        return (
            "explained from a jax Compiled alone: it keeps only the final program, so there "
            "are no intermediate shardings, no reasons for the collectives, no global cost, no "
            "compiler log and, on TPU/GPU, no buffer assignment (the peak is the compiler's "
            "own figure, which on TPU also counts on-chip VMEM); explain its Lowered "
            "(jax.jit(step).lower(*args)) to have them",
        )


def _has_array(x: Any) -> bool:
    return any(
        isinstance(v, jax.Array | np.ndarray | jax.ShapeDtypeStruct) for v in jax.tree.leaves(x)
    )


def _count(args: tuple, kwargs: dict) -> str:
    leaves = len(jax.tree.leaves((args, kwargs)))
    words = f"{len(args)} positional" + (f", {len(kwargs)} keyword" if kwargs else "")
    return f"{words}; {leaves} array{'s' if leaves != 1 else ''}"


def _shape_text(tree: Any) -> str:
    leaves = jax.tree.leaves(tree)
    if len(leaves) == 1 and leaves[0] is tree:
        return f"{tree.dtype}{list(tree.shape)}"
    return f"{len(leaves)} arrays"


_SOURCE = re.compile(r"^(?P<name>.+?) at (?P<file>.+):\d+$")


def _function_name(stage: Any, jaxpr: Any) -> tuple[str, str]:
    """The traced function's name and file (``""`` when the program does not say it): from
    the jaxpr's debug info (``step at /path/train.py:12``), else from the lowering's name
    (``jit(step)``)."""
    info = getattr(getattr(jaxpr, "jaxpr", None), "debug_info", None)
    match = _SOURCE.match(getattr(info, "func_src_info", "") or "")
    if match:
        return match["name"], match["file"]
    for owner in (getattr(stage, "_lowering", None), getattr(stage, "_executable", None)):
        name = getattr(owner, "_name", None) or getattr(
            getattr(owner, "_unloaded_executable", None), "name", None
        )
        if isinstance(name, str) and name:
            inner = re.fullmatch(r"\w+\((.*)\)", name)
            return (inner[1] if inner else name), ""
    return "program", ""


def _leaf_names(stage: Any, jaxpr: Any) -> tuple[str, ...]:
    """Each input leaf's name as jax gives it, ``()`` when unknown: the jaxpr's argument
    names, a Lowered's MLIR argument locations (``loc("params['w']")``), or a Compiled's
    entry parameters' ``op_name``."""
    n = len(jax.tree.leaves(stage.args_info))
    info = getattr(getattr(jaxpr, "jaxpr", None), "debug_info", None)
    names = tuple(getattr(info, "arg_names", None) or ())
    if len(names) == n and all(names):
        return names
    if isinstance(stage, jax.stages.Compiled):
        return _parameter_names(stage, n)
    if not isinstance(stage, jax.stages.Lowered):
        return ()
    try:
        module: Any = stage.compiler_ir()
        main = next(
            op
            for op in module.body.operations
            if str(op.attributes["sym_name"]).strip('"') == "main"
        )
        locs = [str(a.location) for a in main.regions[0].blocks[0].arguments]
    except Exception:  # another jax keeps its module otherwise: names are a nicety
        return ()
    found = tuple(m[1] if (m := re.fullmatch(r'loc\("(.*)"\)', loc)) else "" for loc in locs)
    return found if len(found) == n and all(found) else ()


#: An entry parameter of the final module and the name jax gave it.
_PARAMETER = re.compile(r'parameter\((\d+)\).*?op_name="((?:[^"\\]|\\.)*)"')


def _parameter_names(compiled: Any, n: int) -> tuple[str, ...]:
    """A Compiled's input leaves' names, from its entry computation's parameters (each
    carries the leaf's name as ``op_name``); ``()`` unless every one of the ``n`` has one."""
    try:
        text = compiled.as_text() or ""
    except Exception:  # a backend that prints nothing: names are a nicety
        return ()
    entry = text[text.find("\nENTRY") :] if "\nENTRY" in text else ""
    found: dict[int, str] = {}
    for line in entry.splitlines()[1:]:
        if line.startswith("}"):
            break
        match = _PARAMETER.search(line)
        if match:
            found[int(match[1])] = re.sub(r"\\(.)", r"\1", match[2])
    return tuple(found[i] for i in range(n)) if sorted(found) == list(range(n)) else ()


def _signature(stage: Any, leaf_names: tuple[str, ...]) -> inspect.Signature:
    """Positional parameters named as the program's leaves say (``params['w']`` ->
    ``params``), ``arg0``... where it does not."""
    args, kwargs = stage.args_info
    params = []
    start = 0
    taken: set[str] = set()
    for i, a in enumerate(args):
        count = len(jax.tree.leaves(a))
        name = ""
        if count and start < len(leaf_names):
            name = re.split(r"[\[.]", leaf_names[start], maxsplit=1)[0]
        if not name.isidentifier() or name in taken or name in kwargs:
            name = f"arg{i}"
        taken.add(name)
        params.append(inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD))
        start += count
    params += [inspect.Parameter(k, inspect.Parameter.KEYWORD_ONLY) for k in kwargs]
    return inspect.Signature(params)
