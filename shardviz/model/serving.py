"""Serving a decoder: per device memory, collectives and time of one decode or prefill step.

Plain data, no jax. :class:`ServingResult` is one strategy on one target (weights, KV cache
and working memory per device; the collectives per generated token; the step estimated from
bytes read, flops and collectives; tokens/s per chip and the largest batch that fits).
:class:`ServingComparison` holds several side by side, with the findings about them
(:class:`~shardviz.model.Finding`, as a program's are), and
:class:`SliceChoice` the smallest slice of a chip that holds a model and its cache.
Views are registered by :mod:`shardviz.render` (``print(x)``, ``x._repr_html_()``).
"""

from __future__ import annotations

from dataclasses import dataclass

from shardviz.errors import ArgumentError, problem
from shardviz.model import display
from shardviz.model._codec import JsonMixin
from shardviz.model.arguments import dtype_name, shown
from shardviz.model.findings import Finding

__all__ = [
    "DTYPE_BYTES",
    "SERVING_MODES",
    "ExpertReads",
    "ServingCollective",
    "ServingComparison",
    "ServingResult",
    "SliceChoice",
    "SliceTried",
    "bytes_per_element",
    "largest_batch",
    "serving_bytes",
    "serving_dtype",
]

#: Bytes per element of the weight and cache dtypes serving supports (int4 packs two).
DTYPE_BYTES: dict[str, float] = {"bfloat16": 2.0, "int8": 1.0, "int4": 0.5}

_ALIASES = {"bf16": "bfloat16", "bfloat16": "bfloat16", "int8": "int8", "int4": "int4"}


def serving_dtype(dtype: object, where: str = "serving") -> str:
    """The canonical name of a serving dtype, given as a name (``"bf16"`` -> ``"bfloat16"``)
    or a dtype object (``jnp.bfloat16``, ``np.dtype("int8")``, ``jnp.int4``).

    Raises:
      ArgumentError: not one of bfloat16, int8, int4.
    """
    name = _ALIASES.get(dtype_name(dtype))
    if name is None:
        raise ArgumentError(
            problem(
                where,
                f"dtype {shown(dtype)} is not a serving dtype",
                f"use one of {', '.join(map(repr, DTYPE_BYTES))} (or 'bf16')",
            )
        )
    return name


def bytes_per_element(dtype: object, where: str = "serving") -> float:
    """Bytes one element of ``dtype`` takes: bfloat16 2, int8 1, int4 0.5."""
    return DTYPE_BYTES[serving_dtype(dtype, where)]


def serving_bytes(weight_bytes: int, working_bytes: int | None, kv_bytes: float) -> int:
    """Bytes per device while serving: the weights, the compiled step's working memory and
    the KV cache. One count for the largest batch, the sweeps and their charts: the working
    memory stays as compiled when the batch or context changes (measured on a reduced Llama
    decode for a v5e 2x4: within 10% at batch 8, 16 and 32 and at contexts 128, 1,024 and
    4,096; it holds a layer's activations, not the cache)."""
    return int(weight_bytes + (working_bytes or 0) + kv_bytes)


def largest_batch(
    hbm_bytes: int, weight_bytes: int, working_bytes: int | None, kv_per_sequence: float, data: int
) -> int | None:
    """The largest batch, a multiple of ``data`` (the data axis), whose
    :func:`serving_bytes` fit ``hbm_bytes`` (``None`` when a sequence costs no cache)."""
    if not kv_per_sequence:
        return None
    room = hbm_bytes - weight_bytes - (working_bytes or 0)
    return max(0, int(room // kv_per_sequence) // data * data)


#: The steps a serving comparison is made of: one generated token, or the whole prompt.
SERVING_MODES: tuple[str, ...] = ("decode", "prefill")


@dataclass(frozen=True)
class ServingCollective:
    """Collectives of one kind over some mesh axes, per step, per device.

    ``count`` counts loop trips (a collective in the layer scan runs once per layer);
    ``moved_bytes`` is what each device sends per step; ``seconds`` the estimate on the
    target (``None`` without one).
    """

    kind: str
    axes: tuple[str, ...]
    count: int
    moved_bytes: int
    seconds: float | None = None


@dataclass(frozen=True)
class ExpertReads:
    """A mixture of experts' expert weights in one step: the experts a batch touches and the
    bytes read, per layer, with routing taken as uniform and independent across tokens.

    ``touched`` is the whole model's distinct experts per layer, ``E x (1 - (1 - k/E)^T)``
    for ``T = tokens`` (each expert is missed by a token with probability ``1 - k/E``); each
    holds ``bytes_per_expert`` in a layer (gate, up and down), so a step reads
    :attr:`read_bytes_total` of them over its ``layers``.
    Per device: ``experts_per_device`` experts each see ``tokens_per_expert`` tokens (the
    batch's, or one data shard's where the experts are copied over ``data``), so
    ``touched_per_device = experts_per_device x (1 - (1 - k/E)^tokens_per_expert)``;
    ``read_bytes`` is that share of the ``held_bytes`` of expert weights on the device (all
    layers): what a kernel that skips idle experts reads (the step's estimate uses it).
    """

    experts: int
    experts_per_token: int
    tokens: int
    touched: float
    layers: int
    bytes_per_expert: int
    experts_per_device: int
    tokens_per_expert: int
    touched_per_device: float
    held_bytes: int
    read_bytes: int

    @property
    def read_bytes_total(self) -> float:
        """The expert weights the whole model reads per step: touched x layers x bytes each
        (each data shard's copy reads its own where the experts are copied over ``data``)."""
        return self.touched * self.layers * self.bytes_per_expert


@dataclass(frozen=True)
class ServingResult(JsonMixin):
    """One strategy serving one model on one target, per device (bytes) and per step.

    Attributes:
      strategy: the strategy's name (``"tp"``, ``"dp"``, ``"dp+tp"``, ``"tp-heads"``).
      mode: ``"decode"`` (one token per sequence) or ``"prefill"`` (``context`` tokens).
      target: the topology or hardware the figures are for (``"v5e:4x2"``).
      chips: devices the model is served on.
      mesh: the mesh's axes and sizes, ``(("data", 1), ("sequence", 1), ("tensor", 8))``.
      batch, context: sequences served at once and the cache's positions per sequence.
      weight_dtype, cache_dtype: ``"bfloat16"``, ``"int8"`` or ``"int4"``.
      weight_bytes, kv_bytes: per device, from the arrays' shard shapes.
      working_bytes: per device scratch the compiler assigned (``None``: not compiled).
      argument_bytes: per device argument bytes the compiler reported (weights + cache +
        tokens), to check the shard-shape figures against.
      hbm_bytes: one device's HBM (0 when unknown, e.g. CPU).
      kv_copies: how many devices hold each byte of the cache beyond the data split (1: no
        replication; the tensor group size: every device of the group holds all of it).
      weight_copies: how many devices hold each byte of the weights.
      collectives: per step, by kind and axes (from the compiled program).
      flops: per device per step (counted from the dims; XLA counts a loop body once).
      memory_seconds, compute_seconds, collective_seconds: the three terms of the estimate.
      step_seconds: the estimated step; ``bound`` which term sets it.
      tokens_per_second_per_chip: generated (decode) or prompt (prefill) tokens per second
        per chip; ``latency_seconds``: per generated token (decode) or for the prompt.
      max_batch: the largest batch (a multiple of the data axis) whose weights, cache and
        working memory fit every device's HBM (``None`` without an HBM size).
      compiled: whether the figures come with a compiled program. When not (the compiler
        refused the program, or its arrays alone are past the HBM of the chip it is
        compiled for), only the shard-shape bytes are known: working memory, collectives,
        the step, tokens/s and the largest batch are ``None`` or empty, never 0, and
        ``why_not_compiled`` says why.
      sweep: ``(batch, bytes per device, tokens/s per chip)`` at other batches, the cache
        and flops scaled from the compiled batch, the working memory and the collectives'
        time kept, as ``max_batch`` counts them (what the chart of memory and throughput
        against batch draws).
      context_sweep: the same at the compiled batch against the context.
      notes: what was chosen and why (an axis left out because a dim does not divide...).
      why_not_compiled: why there is no compiled program (``""`` when ``compiled``).
      refused_bytes: when the compiler refused the step for memory, the per device bytes it
        said the step needs (``None``: compiled, or the compiler gave no figure).
      experts: a mixture of experts' expert weights touched and read per step (``None``:
        a dense model).
    """

    strategy: str
    mode: str
    target: str
    chips: int
    mesh: tuple[tuple[str, int], ...]
    batch: int
    context: int
    weight_dtype: str
    cache_dtype: str
    weight_bytes: int
    kv_bytes: int
    working_bytes: int | None
    argument_bytes: int | None
    hbm_bytes: int
    kv_copies: int
    weight_copies: int
    collectives: tuple[ServingCollective, ...]
    flops: float
    memory_seconds: float | None
    compute_seconds: float | None
    collective_seconds: float | None
    step_seconds: float | None
    bound: str
    tokens_per_second_per_chip: float | None
    latency_seconds: float | None
    max_batch: int | None
    compiled: bool = True
    sweep: tuple[tuple[int, int, float], ...] = ()
    context_sweep: tuple[tuple[int, int, float], ...] = ()
    notes: tuple[str, ...] = ()
    why_not_compiled: str = ""
    refused_bytes: int | None = None
    experts: ExpertReads | None = None

    @property
    def total_bytes(self) -> int:
        """Per device: weights + KV cache + working memory (when not compiled, weights and
        cache only: a lower bound)."""
        return serving_bytes(self.weight_bytes, self.working_bytes, self.kv_bytes)

    def bytes_at(self, batch: int) -> int:
        """Bytes per device at ``batch`` sequences, as :attr:`max_batch` and :attr:`sweep`
        count them: the cache scaled from the compiled batch (:func:`serving_bytes`)."""
        per_sequence = self.kv_bytes / max(1, self.batch)
        return serving_bytes(self.weight_bytes, self.working_bytes, per_sequence * batch)

    @property
    def fits(self) -> bool | None:
        """Whether the total fits one device's HBM (``None`` when the HBM is unknown). A
        program that was not compiled does not fit: it is left uncompiled only when the
        compiler refused it for memory, or its arrays alone are over the HBM."""
        if not self.hbm_bytes:
            return None
        return self.compiled and self.total_bytes <= self.hbm_bytes

    @property
    def axis_sizes(self) -> dict[str, int]:
        return dict(self.mesh)


@dataclass(frozen=True)
class ServingComparison(JsonMixin, display.Shown):
    """Strategies serving one model side by side, with the findings about them.

    ``findings`` are :class:`~shardviz.model.Finding` objects of the serving kinds
    (``kv-replicated``, ``weights-replicated``, ``collective-bound``) and ``over-hbm`` (a
    strategy whose batch does not fit, or the compiler refused), each naming its
    strategy in ``where.strategy`` and the change to make in ``unfixed``.

    ``kv_bytes_per_token`` is the whole model's cache per token in the cache dtype
    (2 x layers x KV heads x head dim x bytes); ``weight_bytes_total`` the weights in theirs.
    """

    #: What a document read back may hold (see :mod:`shardviz.model._codec`; a class
    #: attribute, not a field: it has no annotation).
    DOCUMENT_LIMITS = {"results": 1024, "findings": 4096}

    model: str
    num_params: int
    kv_bytes_per_token: float
    weight_bytes_total: int
    results: tuple[ServingResult, ...]
    findings: tuple[Finding, ...] = ()

    def result(self, strategy: str) -> ServingResult:
        """The first result of ``strategy``.

        Raises:
          KeyError: no result has that strategy.
        """
        for r in self.results:
            if r.strategy == strategy:
                return r
        raise KeyError(
            f"no result for strategy {strategy!r}; have {[r.strategy for r in self.results]}"
        )

    def figure(self):
        """An interactive plotly figure: bytes per device and tokens/s per chip against the
        batch and the context, one line per strategy, the HBM line and the largest batch."""
        return display.render(self, "plotly")

    def matplotlib_figure(self):
        """The same as a static matplotlib figure, for slides."""
        return display.render(self, "matplotlib")


@dataclass(frozen=True)
class SliceTried:
    """One slice :func:`smallest_slice` looked at: its name, chips and whether it holds all."""

    name: str
    chips: int
    needed_bytes: int
    hbm_bytes: int

    @property
    def fits(self) -> bool:
        return self.needed_bytes <= self.hbm_bytes


@dataclass(frozen=True)
class SliceChoice(JsonMixin, display.Shown):
    """The smallest slice of ``chip`` whose HBM holds the weights and the KV cache.

    ``weight_bytes`` and ``kv_bytes`` are the whole model's (all devices together);
    ``room_sequences`` how many sequences of ``context`` the HBM left after the weights
    holds; ``checked`` what the deviceless compile of the decode step on the slice said
    (``""``: not compiled).
    """

    #: What a document read back may hold (a class attribute, not a field).
    DOCUMENT_LIMITS = {"tried": 1024}

    model: str
    chip: str
    slice: str
    chips: int
    weight_dtype: str
    cache_dtype: str
    batch: int
    context: int
    weight_bytes: int
    kv_bytes: int
    hbm_bytes_per_chip: int
    room_sequences: int
    tried: tuple[SliceTried, ...] = ()
    checked: str = ""
