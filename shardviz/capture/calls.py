"""How a user's call ``fn(*args, **kwargs)`` maps onto a compiled program, and back.

Training steps come in several shapes: plain functions, ``jax.jit`` functions with their own
options (donation, static arguments), ``equinox.filter_jit`` functions whose arguments hold
non-array leaves (an activation function, an int), steps that run inside
``with jax.set_mesh(mesh):``. A :class:`CallPlan` records what the compiled program takes
(static arguments left out, non-array leaves closed over) and which of its inputs it donates,
so shardviz can call it again and again without ever passing a donated buffer twice.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import jax
import numpy as np

from shardviz.errors import ShardvizError, problem

#: Leaves jax can trace as arguments (everything else must be static or closed over).
_TRACEABLE = (jax.Array, np.ndarray, np.generic, jax.ShapeDtypeStruct, bool, int, float, complex)


def is_array(x: Any) -> bool:
    """An array leaf (traced by ``filter_jit``-style programs); other leaves are static."""
    return isinstance(x, jax.Array | np.ndarray | np.generic | jax.ShapeDtypeStruct)


def _is_none(x: Any) -> bool:
    return x is None


def _flatten(tree: Any) -> tuple[list, Any]:
    """Leaves with ``None`` counted as a leaf, so a tree with ``None`` holes keeps its shape."""
    return jax.tree.flatten(tree, is_leaf=_is_none)


def arrays_only(tree: Any) -> Any:
    """``tree`` with every non-array leaf replaced by ``None`` (what a program can return)."""
    leaves, treedef = _flatten(tree)
    return jax.tree.unflatten(treedef, [x if is_array(x) else None for x in leaves])


class Filtered:
    """``fn`` with only its array leaves traced: the other leaves of the arguments given at
    construction are closed over, and non-array outputs are kept aside at trace time.

    This is ``equinox.filter_jit``'s rule (arrays traced, everything else static), used for
    ``filter_jit`` functions and for arguments that ``jax.jit`` cannot take (functions,
    strings, objects). The program's arguments are the user's, position by position, with
    ``None`` in place of each non-array leaf, so ``donate_argnums`` and friends still apply.
    """

    def __init__(self, fn: Callable, args: tuple, kwargs: dict) -> None:
        functools.update_wrapper(self, fn, updated=())  # jit's name and signature: the user's
        refuse_hidden_arrays(args, kwargs)
        self.fn = fn
        leaves, self._in_tree = _flatten((args, kwargs))
        self._in_static = [None if is_array(x) else x for x in leaves]
        self._out: tuple[Any, list] | None = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        leaves, _ = _flatten((args, kwargs))
        full = [s if x is None else x for x, s in zip(leaves, self._in_static, strict=True)]
        a, k = jax.tree.unflatten(self._in_tree, full)
        out = self.fn(*a, **k)
        out_leaves, out_tree = _flatten(out)
        self._out = (out_tree, [None if is_array(x) else x for x in out_leaves])
        return arrays_only(out)

    def outputs(self, raw: Any) -> Any:
        """The user's outputs: the program's array outputs with the static ones put back."""
        if self._out is None:
            return raw
        out_tree, static = self._out
        leaves, _ = _flatten(raw)
        return jax.tree.unflatten(
            out_tree, [s if x is None else x for x, s in zip(leaves, static, strict=True)]
        )


def _hidden(obj: Any) -> list[str]:
    """The attributes of an object jax does not see into (not a pytree) that hold arrays."""
    try:
        attrs = dict(vars(obj))
    except TypeError:  # no __dict__ (slots, builtins)
        slots = getattr(type(obj), "__slots__", ())
        attrs = {n: getattr(obj, n, None) for n in ([slots] if isinstance(slots, str) else slots)}
    found = []
    for name, value in attrs.items():
        inner = value if isinstance(value, list | tuple | dict) else [value]
        items = inner.values() if isinstance(inner, dict) else inner
        if any(isinstance(v, jax.Array | jax.ShapeDtypeStruct) for v in items):
            found.append(name)
    return found


def refuse_hidden_arrays(args: tuple, kwargs: dict) -> None:
    """Refuse an argument jax cannot look into (an unregistered class) that holds arrays:
    traced the filter way it would be compiled in as a constant, its arrays neither inputs
    nor sharded. Names the argument, its fields and the fix."""
    leaves, _ = jax.tree_util.tree_flatten_with_path((args, kwargs), is_leaf=_is_none)
    for path, x in leaves:
        if x is None or is_array(x) or isinstance(x, type) or callable(x):
            continue
        fields = _hidden(x)
        if fields:
            where = argument_name(path)
            raise ShardvizError(
                problem(
                    where,
                    f"a {type(x).__name__} holds arrays in {', '.join(fields)}, but jax does not "
                    "see into it (it is not a pytree): they would be compiled in as constants",
                    f"register {type(x).__name__} as a pytree "
                    "(@jax.tree_util.register_dataclass, or register_pytree_node_class), as "
                    "jax's own error for such an argument says, or pass the arrays themselves",
                )
            )


def refuse_deleted(args: tuple, kwargs: dict) -> None:
    """Refuse an argument whose buffer is gone (donated to an earlier jitted call, or
    ``.delete()``d) before anything runs, naming it."""
    leaves, _ = jax.tree_util.tree_flatten_with_path((args, kwargs), is_leaf=_is_none)
    for path, x in leaves:
        if isinstance(x, jax.Array) and x.is_deleted():
            raise ShardvizError(
                problem(
                    argument_name(path),
                    f"the {x.dtype}{list(x.shape)} array was deleted: donated to an earlier "
                    "jitted call (donate_argnums) or .delete()d, so its buffer is gone",
                    "pass a live array: the one the donating call returned, or a copy made "
                    "before donating",
                )
            )


def argument_name(path: tuple) -> str:
    """``argument 0.params['w']`` or ``keyword argument 'x'`` from a key path into
    ``(args, kwargs)``."""
    head, rest = path[0], path[1:]
    first = rest[0] if rest else None
    key = getattr(first, "idx", getattr(first, "key", "?"))
    inner = jax.tree_util.keystr(tuple(rest[1:]))
    if getattr(head, "idx", 0) == 0:
        return f"argument {key}{inner}"
    return f"keyword argument {key!r}{inner}"


def needs_filter(args: tuple, kwargs: dict, static_argnums: Any, static_argnames: Any) -> bool:
    """Whether some argument that would be traced holds a leaf ``jax.jit`` cannot take."""
    dynamic = [a for i, a in enumerate(args) if i not in static_argnums]
    dynamic += [v for k, v in kwargs.items() if k not in static_argnames]
    return any(not isinstance(x, _TRACEABLE) for x in jax.tree.leaves(dynamic))


def is_jax_jit(fn: Any) -> bool:
    """A ``jax.jit`` function (which carries its own options, e.g. donation)."""
    return getattr(fn, "_jit_info", None) is not None and hasattr(fn, "lower")


def needs_own_jit(fn: Any) -> bool:
    """A ``jax.jit`` function whose donation or static arguments would be lost if it were
    wrapped in another ``jax.jit`` (the outer one inlines it): it must be lowered itself."""
    info = getattr(fn, "_jit_info", None) if is_jax_jit(fn) else None
    if info is None:
        return False
    return bool(
        info.donate_argnums or info.donate_argnames or info.static_argnums or info.static_argnames
    )


def equinox_jit(fn: Any) -> tuple[Callable, dict] | None:
    """For an ``equinox.filter_jit`` function: the plain function and its donation as jit
    options (``donate="all"`` donates every argument, ``"all-except-first"`` all but the first);
    ``None`` for anything else."""
    if not type(fn).__module__.startswith("equinox") or not hasattr(fn, "donate_first"):
        return None
    plain = fn.__wrapped__
    return plain, {"donate_first": bool(fn.donate_first), "donate_rest": bool(fn.donate_rest)}


def nnx_jit(fn: Any) -> Callable | None:
    """For a ``flax.nnx.jit`` function: the plain function made functional (it also returns
    its arguments, so in-place updates of the modules passed in, e.g. ``optimizer.update``,
    are outputs of the program as ``nnx.jit`` makes them); ``None`` for anything else."""
    if not type(fn).__module__.startswith("flax.nnx") or not callable(getattr(fn, "fun", None)):
        return None
    return returning_args(fn.fun)


def returning_args(fn: Callable) -> Callable:
    """``fn`` that returns ``(out, (args, kwargs))``: the arguments after the call, so state
    updated in place (NNX modules, which are pytrees) comes out of a jitted program."""

    @functools.wraps(fn)
    def with_args(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs), (args, kwargs)

    return with_args


def plain_function(fn: Any) -> Callable:
    """The Python function to run unjitted-equivalent: under a ``jax.jit``,
    ``equinox.filter_jit`` or ``flax.nnx.jit`` wrapper (the latter made functional).

    Only those: anything else is the function itself. ``jax.grad``, ``jax.vmap``,
    ``jax.checkpoint`` and every ``functools.wraps`` decorator also set ``__wrapped__``, to a
    function that computes something else."""
    eqx = equinox_jit(fn)
    if eqx is not None:
        return eqx[0]
    nnx = nnx_jit(fn)
    if nnx is not None:
        return nnx
    return fn.__wrapped__ if is_jax_jit(fn) else fn


def statics(jitted: Any, jit_kwargs: dict) -> tuple[frozenset[int], frozenset[str]]:
    """The static argument positions and names, as jax resolved them (names <-> positions)."""
    info = getattr(jitted, "_jit_info", None)
    if info is not None:
        return frozenset(info.static_argnums), frozenset(info.static_argnames)
    nums = jit_kwargs.get("static_argnums") or ()
    names = jit_kwargs.get("static_argnames") or ()
    nums = (nums,) if isinstance(nums, int) else nums
    names = (names,) if isinstance(names, str) else names
    return frozenset(int(n) for n in nums), frozenset(names)


@dataclass(frozen=True)
class CallPlan:
    """What the compiled program takes and gives back for a call ``fn(*args, **kwargs)``.

    Attributes:
        static_argnums, static_argnames: arguments compiled in (the program does not take them).
        filtered: the :class:`Filtered` wrapper when non-array leaves were closed over.
        returns_args: the program also returns its arguments after the call
            (:func:`returning_args`, for ``nnx.jit`` steps); the user's outputs are the first.
        donated: per leaf of the program's inputs (``lowered.args_info`` order), whether the
            program donates its buffer.
    """

    static_argnums: frozenset[int] = frozenset()
    static_argnames: frozenset[str] = frozenset()
    filtered: Filtered | None = field(default=None, compare=False)
    donated: tuple[bool, ...] = ()
    returns_args: bool = False

    @property
    def donating(self) -> bool:
        """Whether the program donates any input buffer."""
        return any(self.donated)

    def lower_args(self, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        """What ``jitted.lower`` takes: the user's arguments (non-array leaves as ``None``
        when filtered)."""
        if self.filtered is None:
            return args, kwargs
        return arrays_only(args), arrays_only(kwargs)

    def program_args(self, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        """What the compiled program takes: static arguments left out."""
        a, k = self.lower_args(args, kwargs)
        a = tuple(x for i, x in enumerate(a) if i not in self.static_argnums)
        k = {n: v for n, v in k.items() if n not in self.static_argnames}
        return a, k

    def outputs(self, raw: Any) -> Any:
        """The user's outputs from the program's."""
        out = raw if self.filtered is None else self.filtered.outputs(raw)
        return out[0] if self.returns_args else out

    def fresh(self, args: tuple, kwargs: dict) -> Callable[[], tuple[tuple, dict]] | None:
        """For a donating program: a function giving new copies of the donated inputs for
        each call (so no buffer is donated twice and the caller's arrays stay alive); ``None``
        when nothing is donated. ``args, kwargs`` are :meth:`program_args`."""
        if not self.donating:
            return None
        leaves, treedef = jax.tree.flatten((args, kwargs))
        if len(leaves) != len(self.donated):
            donated = [isinstance(x, jax.Array) for x in leaves]  # unknown mapping: copy all
        else:
            donated = list(self.donated)

        def copies() -> tuple[tuple, dict]:
            new = [
                _copy(x) if d and isinstance(x, jax.Array) else x
                for x, d in zip(leaves, donated, strict=True)
            ]
            return jax.block_until_ready(jax.tree.unflatten(treedef, new))

        return copies


def placed_for(compiled: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """The program's arguments, each array moved to the sharding the program was compiled for
    where it differs (as ``jax.jit`` does for an uncommitted array, such as an optimizer's
    step counter made on the default device); a compiled program itself refuses them."""
    leaves, treedef = jax.tree.flatten((args, kwargs))
    try:
        wanted = jax.tree.leaves(compiled.input_shardings)
    except Exception:  # no shardings to compare with: call as given
        return args, kwargs
    if len(wanted) != len(leaves):
        return args, kwargs
    moved = [
        jax.device_put(x, s)
        if isinstance(x, jax.Array) and not x.sharding.is_equivalent_to(s, x.ndim)
        else x
        for x, s in zip(leaves, wanted, strict=True)
    ]
    return jax.tree.unflatten(treedef, moved)


def abstract_placed(
    compiled: Any, args: tuple, kwargs: dict, committed_too: bool = True
) -> tuple[tuple, dict]:
    """The program's arguments as ``ShapeDtypeStruct`` objects, each with the sharding the
    program was compiled for: what a compile-only retrial needs, holding no array (so no
    buffer is kept alive, donated twice or read from the wrong call). Arrays jax would move
    at the call (an uncommitted step counter on the default device) get the program's
    sharding, as :func:`placed_for` moves them; without the program's shardings each keeps
    its own, and an uncommitted one none.

    ``committed_too=False`` turns only the uncommitted arrays into placed
    ``ShapeDtypeStruct`` objects and leaves the others as they are: what the program holds,
    for the report's argument layouts.
    """
    leaves, treedef = jax.tree.flatten((args, kwargs))
    try:
        wanted: list[Any] = list(jax.tree.leaves(compiled.input_shardings))
    except Exception:  # no shardings to read: each array's own
        wanted = []
    if len(wanted) != len(leaves):
        wanted = [None] * len(leaves)
    out = []
    for x, s in zip(leaves, wanted, strict=True):
        if isinstance(x, jax.Array | jax.ShapeDtypeStruct):
            committed = getattr(x, "committed", True)
            if not committed_too and (committed or s is None):
                out.append(x)
                continue
            own = x.sharding if committed else None
            x = jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=s if s is not None else own)
        out.append(x)
    return jax.tree.unflatten(treedef, out)


def _copy(x: jax.Array) -> jax.Array:
    return jax.device_put(x, x.sharding, may_alias=False)


def donated_flags(lowered: Any) -> tuple[bool, ...]:
    """Per input leaf of a lowered program, whether it is donated (empty if jax says nothing)."""
    try:
        infos = jax.tree.leaves(lowered.args_info)
    except Exception:  # an older or newer jax without args_info: assume no donation
        return ()
    return tuple(bool(getattr(i, "donated", False)) for i in infos)


def donated_positions(fn: Any, n_args: int) -> frozenset[int]:
    """The positions of the arguments calling ``fn`` donates (a ``jax.jit`` function's
    ``donate_argnums``/``donate_argnames`` as jax resolved them, an ``equinox.filter_jit``
    function's ``donate=``); plain functions donate nothing."""
    info = getattr(fn, "_jit_info", None)
    if info is not None:
        return frozenset(i for i in info.donate_argnums if i < n_args)
    eqx = equinox_jit(fn)
    if eqx is None:
        return frozenset()
    first = {0} if eqx[1]["donate_first"] else set()
    rest = set(range(1, n_args)) if eqx[1]["donate_rest"] else set()
    return frozenset((first | rest) & set(range(n_args)))


def copy_arrays(tree: Any) -> Any:
    """``tree`` with every ``jax.Array`` leaf copied (same sharding, new buffers)."""
    return jax.tree.map(lambda x: _copy(x) if isinstance(x, jax.Array) else x, tree)


# --- the mesh context ------------------------------------------------------------------------


def context_mesh() -> jax.sharding.Mesh | None:
    """The mesh set by ``with jax.set_mesh(mesh):`` in this thread, or ``None``."""
    mesh = jax.sharding.get_mesh()
    return None if mesh.empty else mesh


@contextlib.contextmanager
def in_mesh(mesh: jax.sharding.Mesh | None) -> Iterator[None]:
    """Run the block with ``mesh`` as the context mesh (``None``: no context mesh at all).

    jax's mesh context is per thread, so work moved to another thread must set it again.
    """
    with jax.set_mesh(mesh):
        yield


def one_device_like(mesh: jax.sharding.Mesh, device: Any) -> jax.sharding.Mesh:
    """A mesh of one device with ``mesh``'s axis names and types (every axis of size 1), so a
    function that names axes (``P('data')``) still traces, unsharded."""
    names = tuple(mesh.axis_names)
    devices = np.array([device], dtype=object).reshape((1,) * len(names))
    return jax.sharding.Mesh(devices, names, axis_types=tuple(mesh.axis_types))


def user_function(fn: Any) -> Any:
    """The user's own function inside a ``jax.jit`` or ``equinox.filter_jit`` wrapper."""
    eqx = equinox_jit(fn)
    return eqx[0] if eqx else (fn.__wrapped__ if is_jax_jit(fn) else fn)


def function_name(fn: Any) -> str:
    plain = user_function(fn)
    return getattr(plain, "__qualname__", None) or getattr(plain, "__name__", None) or repr(fn)


def named_args(fn: Any, args: tuple, kwargs: dict | None = None) -> dict[str, Any]:
    """The arguments by parameter name (``params``, ``opt_state``, ``batch``...) for leaf paths;
    keyword arguments by their keyword."""
    try:
        names = list(inspect.signature(user_function(fn)).parameters)
    except (TypeError, ValueError):
        names = []
    out: dict[str, Any] = {}
    for i, a in enumerate(args):
        name = names[i] if i < len(names) and not names[i].startswith("*") else f"arg{i}"
        out[name if name not in out else f"arg{i}"] = a
    for name, value in (kwargs or {}).items():
        out[name if name not in out else f"kwarg_{name}"] = value
    return out
