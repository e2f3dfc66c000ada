"""The space a plan search walks: the arguments' leaves, the knobs a plan sets, the specs each
knob may take (only those whose splits divide the dims), and the memory they need.

A plan sets three kinds of knob:

- the **batch**: the mesh axes that split dim 0 of every data leaf (all of them alike);
- each **group** of parameters: a partition spec for the parameters and one for their
  optimizer state (Adam's ``mu``/``nu`` mirror their parameter, as in
  :mod:`shardviz.strategies.step`). A group is the parameters of one shape at one place in
  repeated layers (``layers/*/attn/{wq,wk,wv}``): layers are alike, so they share a spec;
- nothing else: scalars and leaves that mirror no parameter stay replicated.

Pure Python on shapes and mesh sizes (no jax): the search compiles what this module proposes.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace

from shardviz.errors import ShardvizError
from shardviz.model import Spec, format_spec
from shardviz.strategies.rules import RuleSet, spec_for_leaf

#: How many of the program's links (the largest by bytes) move as knobs ...
TOP_LINKS = 4
#: ... and how many seed the search (each mesh axis to the batch or one of them): more seeds
#: leave less of the budget to the moves when a plan takes seconds to compile.
SEED_LINKS = 2

#: How a plan that keeps the optimizer state in pinned host memory says so.
OFFLOAD_WORDS = "optimizer state offloaded to pinned host memory"
#: ... and a plan reached from an offloaded one, which keeps it there.
ON_HOST_WORDS = "optimizer state in pinned host memory"

#: Parameter groups holding less than this fraction of the parameters' bytes are not moved
#: on their own (their spec barely changes memory or traffic; the seeds still set them).
SMALL_GROUP = 0.01


@dataclass(frozen=True)
class Leaf:
    """One array leaf of the arguments: ``path`` is ``arg/inner`` (``params/w1``)."""

    path: str
    arg: str
    inner: str
    role: str
    shape: tuple[int, ...]
    itemsize: int

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.itemsize


@dataclass(frozen=True)
class Group:
    """Parameter leaves that share a spec: one shape, one place in repeated layers.

    ``members`` are inner paths (``layers/0/attn/wq``); ``name`` shows them with layer
    numbers as ``*`` and siblings in braces (``layers/*/attn/{wk,wq,wv}``).
    """

    name: str
    members: tuple[str, ...]
    shape: tuple[int, ...]
    nbytes: int


@dataclass(frozen=True)
class GroupLink:
    """A link of the program (dims it joins into one logical dim) over the search's groups:
    ``dims`` holds (group index, dim) pairs; ``words`` names them; ``nbytes`` is the bytes of
    the groups it splits; ``reduced``: the program reduces over it outside a dot;
    ``stacked``: it is the stacked layer dim a ``scan`` runs over."""

    dims: tuple[tuple[int, int], ...]
    words: str
    nbytes: int
    reduced: bool = False
    stacked: bool = False


@dataclass(frozen=True)
class Choice:
    """One plan's knob settings (hashable, so the search never compiles one twice).

    ``batch`` is the mesh axes splitting dim 0 of the data; ``params`` holds, per group in
    :attr:`Space.groups` order, the parameters' spec and the optimizer state's spec;
    ``offload``: the optimizer state lives in pinned host memory (ZeRO-Offload); ``remat``:
    the decoder's remat policy (``None``: the model's own); ``pipeline``: the model trained
    as a pipeline, (the mesh axis carrying its stages, microbatches), its specs the
    pipeline's own (``batch`` and ``params`` then mean nothing).
    """

    batch: tuple[str, ...]
    params: tuple[tuple[Spec, Spec], ...]
    offload: bool = False
    remat: str | None = None
    pipeline: tuple[str, int] | None = None


def _norm(path: str) -> str:
    """A path with its numeric parts (layer indices) as ``*``."""
    return "/".join("*" if part.isdigit() else part for part in path.split("/"))


def spec_ways(spec: Spec, axes: dict[str, int]) -> int:
    """How many pieces ``spec`` cuts a leaf into."""
    return math.prod(axes[a] for entry in spec for a in entry)


def all_specs(shape: tuple[int, ...], axes: dict[str, int]) -> list[Spec]:
    """Every spec for ``shape``: each mesh axis (of size > 1) on one dim or on none, axes on
    one dim in mesh order, kept only when each dim divides evenly by its axes."""
    names = [a for a, n in axes.items() if n > 1]
    out: list[Spec] = []
    for placement in itertools.product(range(-1, len(shape)), repeat=len(names)):
        dims: list[list[str]] = [[] for _ in shape]
        for a, d in zip(names, placement, strict=True):
            if d >= 0:
                dims[d].append(a)
        if all(n % math.prod(axes[a] for a in dims[d]) == 0 for d, n in enumerate(shape)):
            out.append(tuple(tuple(x) for x in dims))
    return out


def _placement(spec: Spec) -> dict[str, int]:
    return {a: d for d, entry in enumerate(spec) for a in entry}


def distance(a: Spec, b: Spec) -> int:
    """How many mesh axes sit on a different dim (or on none) in ``a`` and ``b``."""
    pa, pb = _placement(a), _placement(b)
    return sum(1 for axis in set(pa) | set(pb) if pa.get(axis) != pb.get(axis))


def zero_split(spec: Spec, shape: tuple[int, ...], axes: dict[str, int]) -> Spec:
    """``spec`` further split over every mesh axis it leaves idle (ZeRO's split of the
    optimizer state): each idle axis goes on the largest dim it divides, an unsplit dim first."""
    out = [list(e) for e in spec]
    used = {a for e in spec for a in e}
    for axis, size in axes.items():
        if size == 1 or axis in used:
            continue
        fits = [
            d for d, n in enumerate(shape) if n % (math.prod(axes[a] for a in out[d]) * size) == 0
        ]
        if not fits:
            continue
        d = max(fits, key=lambda d: (not out[d], shape[d]))
        out[d].append(axis)
        used.add(axis)
    return tuple(tuple(e) for e in out)


def batch_options(leaves: Sequence[Leaf], axes: dict[str, int]) -> list[tuple[str, ...]]:
    """Every set of mesh axes (in mesh order) that divides dim 0 of every data leaf, the
    most split first; ``()`` (the batch whole) last."""
    names = [a for a, n in axes.items() if n > 1]
    dims0 = [leaf.shape[0] for leaf in leaves if leaf.role == "batch" and leaf.shape]
    out = []
    for k in range(len(names), -1, -1):
        for subset in itertools.combinations(names, k):
            ways = math.prod(axes[a] for a in subset)
            if all(n % ways == 0 for n in dims0):
                out.append(subset)
    out.sort(key=lambda s: -math.prod(axes[a] for a in s))
    return out


def _group_name(norm_parent: str, names: Sequence[str]) -> str:
    last = names[0] if len(names) == 1 else "{" + ",".join(names) + "}"
    return f"{norm_parent}/{last}" if norm_parent else last


class Space:
    """The leaves, groups and knob options of one search, and what a choice means.

    Args:
        leaves: every array leaf of the arguments, in argument order.
        axes: mesh axis name -> size.
        links: dims the program joins into one logical dim, each as its (leaf path, dim)
            pairs, whether the program reduces over it outside a dot and (optionally)
            whether it is a scan's stacked layer dim (see :mod:`.search.structure`):
            Megatron's column/row pairs, attention's heads. They seed the search and move as
            one knob; the links of several groups that are never reduced nor stacked, taken
            together where they share no group, are Megatron's split.
    """

    def __init__(
        self,
        leaves: Sequence[Leaf],
        axes: dict[str, int],
        links: Sequence[tuple] = (),
    ) -> None:
        self.leaves = tuple(leaves)
        self.axes = dict(axes)
        params = [x for x in self.leaves if x.role == "params"]
        self._param_by_inner = {x.inner: x for x in params}
        self.groups = self._make_groups([x for x in params if x.shape])
        self.batch_choices = batch_options(self.leaves, self.axes)
        self._options = {g.name: all_specs(g.shape, self.axes) for g in self.groups}
        total = sum(g.nbytes for g in self.groups) or 1
        self.searched = tuple(g for g in self.groups if g.nbytes >= SMALL_GROUP * total)
        # Optimizer leaves mirror the first parameter (in parameter order) whose path ends
        # theirs, as strategy_step places them.
        self._mirrors: dict[str, str | None] = {}
        for x in self.leaves:
            if x.role == "optimizer":
                self._mirrors[x.path] = next(
                    (k for k in self._param_by_inner if x.inner == k or x.inner.endswith("/" + k)),
                    None,
                )
        self.links = self._group_links(links)
        #: Whether the optimizer state may move to pinned host memory (the search sets it:
        #: under a memory limit, on devices that have that memory kind).
        self.offload_ok = False
        #: The remat policies the search may give the decoder (a published architecture's
        #: layer scan; empty for any other program, whose remat is its own), and the
        #: model's own policy.
        self.remats: tuple[str, ...] = ()
        self.own_remat: str | None = None
        #: Mesh axis -> the microbatch counts a pipeline with its stages on that axis may
        #: take (the search sets it when asked to search pipelines).
        self.pipelines: dict[str, tuple[int, ...]] = {}

    def _group_links(self, links: Sequence[tuple]) -> list[GroupLink]:
        """The links over searched groups (a group by its first member): Megatron's (every
        link of several groups neither reduced nor stacked, disjoint, largest first) first,
        then links of several groups (the stacked layer dim after the others), then the most
        bytes; the link holding the batch dim is left out (the batch knob moves it). The
        stacked layer dim is no Megatron pair: it joins every layer's weights, and taking it
        would leave no pair beside it."""
        batch = {(x.path, 0) for x in self.leaves if x.role == "batch" and x.shape}
        index = {self._param_by_inner[g.members[0]].path: i for i, g in enumerate(self.groups)}
        out: dict[tuple[tuple[int, int], ...], GroupLink] = {}
        for link, reduced, *more in links:
            stacked = bool(more and more[0])
            if batch & set(link):
                continue
            dims: dict[int, int] = {}
            for path, d in link:
                i = index.get(path)
                if i is not None and i not in dims:
                    dims[i] = d
            if not dims:
                continue
            key = tuple(sorted(dims.items()))
            names = [self.groups[i].name for i in dims]
            words = ", ".join(f"{n} dim {d}" for n, d in zip(names, dims.values(), strict=True))
            nbytes = sum(self.groups[i].nbytes for i in dims)
            out.setdefault(key, GroupLink(key, words, nbytes, reduced, stacked))
        # Links of several groups (pairs that must agree) first, the stacked layer dim after
        # them, then the most bytes.
        ranked = sorted(out.values(), key=lambda k: (len(k.dims) == 1, k.stacked, -k.nbytes))
        stage = next((k for k in ranked if k.stacked), None)
        ranked = ranked[:TOP_LINKS]
        if stage is not None and stage not in ranked:  # the stage dim is always a knob
            ranked.append(stage)
        taken: set[int] = set()
        pairs = []
        for k in sorted(out.values(), key=lambda k: -k.nbytes):
            groups = {i for i, _ in k.dims}
            if len(groups) > 1 and not k.reduced and not k.stacked and not groups & taken:
                pairs.append(k)
                taken |= groups
        if len(pairs) > 1:
            every = tuple(sorted(d for k in pairs for d in k.dims))
            words = " and ".join(k.words for k in pairs)
            ranked.insert(0, GroupLink(every, words, sum(k.nbytes for k in pairs), False))
        return ranked

    def link_seeds(self) -> list[tuple[Choice, str]]:
        """Choices that give each mesh axis to the batch or to one link (every dim of the
        link split over it; the first :data:`SEED_LINKS` links), at least one axis to a
        link: Megatron's column/row split with
        data parallelism on the other axes, and the like. Those giving an axis to the first
        link (Megatron's, or the largest) and one to the batch come first."""
        names = [a for a, n in self.axes.items() if n > 1]
        targets: list[GroupLink | None] = [None, *self.links[:SEED_LINKS]]
        out: dict[Choice, str] = {}
        first: dict[Choice, bool] = {}
        for assign in itertools.product(range(len(targets)), repeat=len(names)):
            if not any(assign):
                continue
            choice = self.replicated(())
            batch = tuple(a for a, t in zip(names, assign, strict=True) if t == 0)
            words = []
            for a, t in zip(names, assign, strict=True):
                link = targets[t]
                if link is None:
                    continue
                choice = self.link_move(choice, link, a)
                words.append(f"{a!r} on {link.words}")
            if len(self.batch_choices) == 1:
                batch = self.batch_choices[0]  # the data kept as placed
            choice = replace(choice, batch=batch)
            if batch not in self.batch_choices or not self.divides(choice):
                continue
            b = f"; batch over {_axes_words(batch)}" if batch else "; batch whole"
            out.setdefault(choice, "structure: " + "; ".join(words) + b)
            first.setdefault(choice, 1 in assign and 0 in assign)
        return sorted(out.items(), key=lambda item: not first[item[0]])

    def stage_seeds(self) -> list[tuple[Choice, str]]:
        """The stacked layer dim (the dim a ``scan`` runs over) split over each mesh axis in
        turn, the batch over the others: each layer's weights live on one group of devices
        and are fetched when the scan reaches them (the stage split of a pipeline, without
        its schedule)."""
        stacked = next((k for k in self.links if k.stacked), None)
        if stacked is None:
            return []
        out = []
        for axis, size in self.axes.items():
            if size == 1:
                continue
            batch = tuple(a for a, n in self.axes.items() if a != axis and n > 1)
            if len(self.batch_choices) == 1:
                batch = self.batch_choices[0]  # the data kept as placed
            choice = replace(self.link_move(self.replicated(()), stacked, axis), batch=batch)
            if choice.params == self.replicated(()).params or batch not in self.batch_choices:
                continue
            if self.divides(choice):
                b = f"; batch over {_axes_words(batch)}" if batch else "; batch whole"
                out.append((choice, f"structure: stacked layer dim (stage) over {axis!r}{b}"))
        return out

    def link_move(self, choice: Choice, link: GroupLink, axis: str) -> Choice:
        """``choice`` with ``axis`` on the link's dim of each of its groups (off their other
        dims; a dim it does not divide left as it was)."""
        params = list(choice.params)
        for i, d in link.dims:
            g = self.groups[i]
            moved = self._axis_on(g, params[i], axis, d)
            if all(
                n % math.prod(self.axes[a] for a in entry) == 0
                for spec in moved
                for n, entry in zip(g.shape, spec, strict=True)
            ):
                params[i] = moved
        return replace(choice, params=tuple(params))

    @staticmethod
    def _make_groups(params: Sequence[Leaf]) -> tuple[Group, ...]:
        keyed: dict[tuple[str, tuple[int, ...]], list[Leaf]] = {}
        for x in params:
            parent, _, _ = x.inner.rpartition("/")
            keyed.setdefault((_norm(parent), x.shape), []).append(x)
        groups = []
        for (parent, shape), members in keyed.items():
            names = sorted({m.inner.rpartition("/")[2] for m in members})
            groups.append(
                Group(
                    name=_group_name(parent, names),
                    members=tuple(m.inner for m in members),
                    shape=shape,
                    nbytes=sum(m.nbytes for m in members),
                )
            )
        return tuple(groups)

    # --- what a choice means ---------------------------------------------------------------

    def specs(self, choice: Choice) -> dict[str, Spec]:
        """Leaf path -> spec, for every array leaf (in argument order)."""
        by_inner: dict[str, tuple[Spec, Spec]] = {}
        for g, pair in zip(self.groups, choice.params, strict=True):
            for m in g.members:
                by_inner[m] = pair
        out: dict[str, Spec] = {}
        for x in self.leaves:
            whole: Spec = tuple(() for _ in x.shape)
            if x.role == "params":
                out[x.path] = by_inner[x.inner][0] if x.inner in by_inner else whole
            elif x.role == "optimizer":
                k = self._mirrors.get(x.path)
                mirrored = by_inner.get(k) if k is not None else None
                out[x.path] = mirrored[1] if mirrored is not None else whole
            elif x.shape and choice.batch:
                out[x.path] = (choice.batch, *whole[1:])
            else:
                out[x.path] = whole
        return out

    def optimizer_paths(self) -> tuple[str, ...]:
        """The optimizer state's leaves (what offloading moves to host memory)."""
        return tuple(x.path for x in self.leaves if x.role == "optimizer")

    def host_paths(self, choice: Choice) -> tuple[str, ...]:
        """The leaves ``choice`` keeps in pinned host memory."""
        return self.optimizer_paths() if choice.offload else ()

    def argument_bytes(self, choice: Choice) -> int:
        """Bytes of the arguments in device memory on one device under ``choice`` (a lower
        bound of its peak); leaves kept on host are left out (see :meth:`host_bytes`)."""
        specs, host = self.specs(choice), set(self.host_paths(choice))
        return sum(
            x.nbytes // spec_ways(specs[x.path], self.axes)
            for x in self.leaves
            if x.path not in host
        )

    def host_bytes(self, choice: Choice) -> int:
        """Bytes of the arguments ``choice`` keeps in host memory, per device."""
        specs, host = self.specs(choice), set(self.host_paths(choice))
        return sum(
            x.nbytes // spec_ways(specs[x.path], self.axes) for x in self.leaves if x.path in host
        )

    def idle_ways(self, choice: Choice) -> int:
        """The product of the sizes of mesh axes nothing is split over: at least that many
        devices do the same work."""
        if choice.pipeline is not None:  # stages on one axis, microbatch rows on the other
            return 1
        used = set(choice.batch) | {a for p, o in choice.params for e in (*p, *o) for a in e}
        return math.prod(n for a, n in self.axes.items() if a not in used)

    def pipeline_seeds(self) -> list[tuple[Choice, str]]:
        """A pipeline on each axis that can carry one, with twice as many microbatches as
        stages (GPipe's bubble is (stages - 1) / (microbatches + stages - 1) of the step),
        or the nearest count that fits."""
        out = []
        for axis, counts in self.pipelines.items():
            stages = self.axes[axis]
            m = min(counts, key=lambda c: (abs(c - 2 * stages), c))
            choice = replace(self.replicated(()), pipeline=(axis, m))
            out.append((choice, f"pipeline: {axis!r} as {stages} stages x {m} microbatches"))
        return out

    # --- starting points -------------------------------------------------------------------

    def replicated(self, batch: tuple[str, ...] = ()) -> Choice:
        """Every parameter whole on every device, the batch split over ``batch``."""
        return Choice(batch, tuple((_whole(g.shape), _whole(g.shape)) for g in self.groups))

    def from_rule_set(
        self, rule_set: RuleSet, mapping: dict[str, tuple[str, ...]], any_batch: bool = False
    ) -> Choice | None:
        """The choice ``rule_set`` makes when each of its axes stands for the mesh axes
        ``mapping`` gives it (``{"data": ("data", "model")}``: its data axis is both);
        ``None`` when a rule does not fit a leaf (or, unless ``any_batch``, the batch's split is
        not one of :attr:`batch_choices`). A group takes its first member's spec."""
        virtual = {r: math.prod(self.axes[a] for a in mapped) for r, mapped in mapping.items()}
        try:
            pairs = []
            for g in self.groups:
                lead = g.members[0]
                p, _ = spec_for_leaf(lead, g.shape, rule_set.rules_for("params"), virtual, "params")
                o, _ = spec_for_leaf(
                    lead, g.shape, rule_set.rules_for("optimizer"), virtual, "optimizer"
                )
                pairs.append((_mapped(p, g.shape, mapping), _mapped(o, g.shape, mapping)))
            batch: tuple[str, ...] = ()
            data = next((x for x in self.leaves if x.role == "batch" and x.shape), None)
            if data is not None:
                b, _ = spec_for_leaf(data.inner, data.shape, rule_set.batch, virtual, "batch")
                batch = _mapped(b, data.shape, mapping)[0]
        except (ShardvizError, KeyError):
            return None
        if batch not in self.batch_choices and not any_batch:
            return None
        choice = Choice(batch, tuple(pairs))
        return choice if self.divides(choice) else None

    def divides(self, choice: Choice) -> bool:
        """Whether every split of ``choice`` divides its dims evenly."""
        for g, (p, o) in zip(self.groups, choice.params, strict=True):
            for spec in (p, o):
                for n, entry in zip(g.shape, spec, strict=True):
                    if n % math.prod(self.axes[a] for a in entry):
                        return False
        return True

    # --- moves -----------------------------------------------------------------------------

    def moves(self, choice: Choice) -> Iterator[tuple[str, list[tuple[Choice, str]]]]:
        """The knobs, each with the choices one change of it gives and words for each change.

        Knobs come in this order: the batch; each mesh axis across all parameters (see
        :meth:`axis_moves`); each searched group (largest first); the optimizer state of all
        groups at once; each other remat policy of :attr:`remats` (``remat``: a published
        decoder's); where :attr:`offload_ok`, the optimizer state to pinned host memory or
        back (``offload``). A pipeline's only knob is its microbatch count (the next fewer and
        the next more that fit). A group's alternatives move one mesh axis (onto another dim, on, or
        off), the most split first, and split its optimizer state over the axes its
        parameters leave idle (ZeRO) or put it back like the parameters.
        """
        if choice.pipeline is not None:
            axis, m = choice.pipeline
            counts = self.pipelines.get(axis, ())
            nearest = [c for c in counts if c < m][-1:] + [c for c in counts if c > m][:1]
            yield (
                "microbatches",
                [(replace(choice, pipeline=(axis, c)), f"{c} microbatches") for c in nearest],
            )
            return
        yield (
            "batch",
            [
                (replace(choice, batch=b), f"batch split over {_axes_words(b)}")
                for b in self.batch_choices
                if b != choice.batch
            ],
        )
        for axis, size in self.axes.items():
            if size > 1:
                yield (
                    f"axis {axis}",
                    [(c, words) for c, words in self.axis_moves(choice, axis) if c != choice],
                )
        order = sorted(self.searched, key=lambda g: -g.nbytes)
        index = {g.name: i for i, g in enumerate(self.groups)}
        for g in order:
            i = index[g.name]
            p, o = choice.params[i]
            zero = o != p
            alts: list[tuple[Choice, str]] = []
            near = [s for s in self._options[g.name] if distance(s, p) == 1]
            near.sort(key=lambda s: -spec_ways(s, self.axes))
            for s in near:
                new_o = zero_split(s, g.shape, self.axes) if zero else s
                alts.append((self._with(choice, i, (s, new_o)), f"{g.name} -> {format_spec(s)}"))
            split = zero_split(p, g.shape, self.axes)
            if not zero and split != p:
                alts.append(
                    (
                        self._with(choice, i, (p, split)),
                        f"optimizer state of {g.name} -> {format_spec(split)} (ZeRO)",
                    )
                )
            elif zero:
                alts.append(
                    (self._with(choice, i, (p, p)), f"optimizer state of {g.name} like its params")
                )
            yield g.name, alts
        every = tuple((p, zero_split(p, g.shape, self.axes)) for g, (p, _) in self._pairs(choice))
        same = tuple((p, p) for _, (p, _) in self._pairs(choice))
        yield (
            "optimizer",
            [
                (c, words)
                for c, words in (
                    (
                        replace(choice, params=every),
                        "all optimizer state split over idle axes (ZeRO)",
                    ),
                    (replace(choice, params=same), "all optimizer state like its params"),
                )
                if c != choice
            ],
        )
        if self.remats:
            now = choice.remat or self.own_remat
            yield (
                "remat",
                [
                    (replace(choice, remat=None if r == self.own_remat else r), f"remat {r!r}")
                    for r in self.remats
                    if r != now
                ],
            )
        if self.offload_ok:
            yield (
                "offload",
                [
                    (
                        replace(choice, offload=not choice.offload),
                        OFFLOAD_WORDS if not choice.offload else "optimizer state back in HBM",
                    )
                ],
            )

    def axis_moves(self, choice: Choice, axis: str) -> list[tuple[Choice, str]]:
        """Moves of one mesh axis across every parameter at once, for splits that need
        several leaves to agree (Megatron's column-then-row, attention by heads, vocab).

        Dims of one size are taken to be one logical dim (the hidden dim of ``w1`` and
        ``w2``, the heads of ``wq`` and ``wo``): for each size, ``axis`` goes on the first
        dim of that size of every group that has one (off its other dims), once with the
        batch keeping its split and once with the batch giving ``axis`` up. The last move
        takes ``axis`` off every parameter and gives it to the batch. The sizes holding the
        most bytes come first.
        """
        weight: dict[int, int] = {}
        for g in self.groups:
            for n in set(g.shape):
                weight[n] = weight.get(n, 0) + g.nbytes
        out: list[tuple[Choice, str]] = []
        without = tuple(a for a in choice.batch if a != axis)
        for link in self.links:  # the program's own links first: several leaves at once
            moved_link = self.link_move(choice, link, axis)
            if moved_link.params == choice.params:
                continue
            for batch, more in ((without, " (off the batch)"), (choice.batch, "")):
                moved = replace(moved_link, batch=batch)
                if batch in self.batch_choices and self.divides(moved):
                    words = f"{axis!r} on {link.words}" + (more if batch != choice.batch else "")
                    out.append((moved, words))
        for n in sorted(weight, key=lambda n: -weight[n]):
            if n % self.axes[axis]:
                continue
            params = tuple(
                self._axis_on(g, pair, axis, g.shape.index(n) if n in g.shape else None)
                for g, pair in self._pairs(choice)
            )
            if params == choice.params:
                continue
            words = f"{axis!r} on every dim of size {n}"
            for batch, more in ((without, " (off the batch)"), (choice.batch, "")):
                moved = replace(choice, batch=batch, params=params)
                if batch in self.batch_choices and self.divides(moved):
                    out.append((moved, words + (more if batch != choice.batch else "")))
        gathered = tuple(self._axis_on(g, pair, axis, None) for g, pair in self._pairs(choice))
        batch = tuple(a for a in self.axes if a in choice.batch or a == axis)
        if batch in self.batch_choices:
            out.append(
                (
                    replace(choice, batch=batch, params=gathered),
                    f"{axis!r} off every parameter, onto the batch",
                )
            )
        first: dict[Choice, str] = {}
        for c, w in out:
            first.setdefault(c, w)
        return list(first.items())

    def _axis_on(
        self, g: Group, pair: tuple[Spec, Spec], axis: str, dim: int | None
    ) -> tuple[Spec, Spec]:
        """``pair`` with ``axis`` moved to ``dim`` of the parameters (off them for ``None``);
        the optimizer state follows (ZeRO-split again if it was)."""
        p, o = pair
        if dim is None and not any(axis in e for e in p):
            return pair
        moved = [tuple(a for a in e if a != axis) for e in p]
        if dim is not None:
            moved[dim] = tuple(a for a in self.axes if a in moved[dim] or a == axis)
        new_p = tuple(moved)
        new_o = zero_split(new_p, g.shape, self.axes) if o != p else new_p
        return new_p, new_o

    def _pairs(self, choice: Choice) -> Iterator[tuple[Group, tuple[Spec, Spec]]]:
        return zip(self.groups, choice.params, strict=True)

    @staticmethod
    def _with(choice: Choice, i: int, pair: tuple[Spec, Spec]) -> Choice:
        params = list(choice.params)
        params[i] = pair
        return replace(choice, params=tuple(params))


def _whole(shape: tuple[int, ...]) -> Spec:
    return tuple(() for _ in shape)


def _mapped(entries: tuple, shape: tuple[int, ...], mapping: dict[str, tuple[str, ...]]) -> Spec:
    """Spec entries on a rule set's axes (``None``, ``'data'``, ``('data', 'model')``) as a
    spec on the mesh's axes ``mapping`` gives each, padded to the leaf's rank."""
    out: list[tuple[str, ...]] = []
    for e in entries:
        names = () if e is None else (e,) if isinstance(e, str) else tuple(e)
        out.append(tuple(a for n in names for a in mapping[n]))
    out += [()] * (len(shape) - len(out))
    return tuple(out)


def _axes_words(axes: tuple[str, ...]) -> str:
    if not axes:
        return "nothing (the batch whole)"
    return "'" + "', '".join(axes) + "'"


def role_mappings(rule_set: RuleSet, mesh_axes: dict[str, int]) -> list[dict[str, tuple[str, ...]]]:
    """Ways to read ``rule_set``'s axes as the mesh's (axes of size 1 left out): a one-axis
    strategy over each axis and over all of them together; a k-axis one over each ordered
    choice of k axes. The reading that keeps the names comes first."""
    axes = [a for a, n in mesh_axes.items() if n > 1]
    roles = list(rule_set.axes)
    out: list[dict[str, tuple[str, ...]]] = []
    if len(roles) == 1:
        out = [{roles[0]: (a,)} for a in axes]
        if len(axes) > 1:
            out.append({roles[0]: tuple(axes)})
    else:
        for perm in itertools.permutations(axes, len(roles)):
            out.append({r: (a,) for r, a in zip(roles, perm, strict=True)})
    out.sort(key=lambda m: not all(m[r] == (r,) for r in roles))
    return out


def mapping_words(mapping: dict[str, tuple[str, ...]]) -> str:
    """``data='data', model='model'`` or ``data=('data', 'model')``."""
    parts = []
    for r, mapped in mapping.items():
        parts.append(f"{r}={mapped[0]!r}" if len(mapped) == 1 else f"{r}={mapped!r}")
    return ", ".join(parts)
