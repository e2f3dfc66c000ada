"""The words and figures every serving view shows, computed once from the model objects."""

from __future__ import annotations

from dataclasses import dataclass

from shardviz.model.findings import Findings
from shardviz.model.serving import ServingComparison, ServingResult, SliceChoice
from shardviz.model.units import format_bytes, format_count, format_seconds, sig3
from shardviz.render.findings.view import count_str

__all__ = [
    "COLUMNS",
    "NOT_COMPILED",
    "columns",
    "expert_lines",
    "findings_head",
    "PALETTE",
    "PANELS",
    "MaxBatchMark",
    "ResultRow",
    "ServingChart",
    "SweepLine",
    "max_batch_bytes",
    "not_compiled_note",
    "result_row",
    "serving_chart",
    "shared_hbm",
    "slice_lines",
    "summary_line",
    "x_ticks",
]

#: The columns of a serving comparison's table, in order.
COLUMNS: tuple[str, ...] = (
    "strategy",
    "mesh (data x sequence x tensor)",
    "weights",
    "KV cache",
    "working",
    "total / HBM",
    "collectives / step",
    "step",
    "bound",
    "tokens/s/chip",
    "largest batch",
)


@dataclass(frozen=True)
class ResultRow:
    """One strategy's cells (strings), and whether it fits (``None``: HBM unknown)."""

    cells: tuple[str, ...]
    fits: bool | None
    notes: tuple[str, ...]


def _opt(x: float | None, fmt: str = "{:,.0f}") -> str:
    return "—" if x is None else fmt.format(x)


#: What every view shows in place of a figure only a compiled program gives.
NOT_COMPILED = "not compiled"


def not_compiled_note(r: ServingResult) -> str:
    """``not compiled: the compiler ran out of HBM: ...``: why a result has no compiled
    figures (``""`` when it has them)."""
    if r.compiled:
        return ""
    return f"{NOT_COMPILED}: {r.why_not_compiled or 'no reason was recorded'}"


def shared_hbm(c: ServingComparison) -> int:
    """The HBM per chip every result has, or 0 when they differ or it is unknown: then each
    row's total names its own."""
    sizes = {r.hbm_bytes for r in c.results}
    return sizes.pop() if len(sizes) == 1 else 0


def columns(c: ServingComparison) -> tuple[str, ...]:
    """:data:`COLUMNS`, the total's header naming the HBM when every result shares it
    (``total of HBM 16 GiB``), so each total cell is one figure, never wrapped."""
    hbm = shared_hbm(c)
    if not hbm:
        return COLUMNS
    size = format_bytes(hbm).replace(" ", "\u00a0")  # the header wraps, never inside 16 GiB
    return tuple(f"total of HBM {size}" if h == "total / HBM" else h for h in COLUMNS)


def result_row(r: ServingResult, hbm_in_header: bool = False) -> ResultRow:
    """A result's cells in :data:`COLUMNS` order (:func:`columns` with ``hbm_in_header``:
    the total without its ``/ 16 GiB``). A result that was not compiled shows
    :data:`NOT_COMPILED` where the compiled figures go (working memory, collectives, the
    step and tokens/s), its total as at least its weights and cache, and no largest batch;
    the note says why."""
    mesh = " x ".join(str(n) for _, n in r.mesh)
    hbm = f" / {format_bytes(r.hbm_bytes)}" if r.hbm_bytes and not hbm_in_header else ""
    kv = format_bytes(r.kv_bytes) + (f" (x{r.kv_copies} copies)" if r.kv_copies > 1 else "")
    if not r.compiled:
        cells: tuple[str, ...] = (
            r.strategy, mesh, format_bytes(r.weight_bytes), kv, NOT_COMPILED,
            f">= {format_bytes(r.weight_bytes + r.kv_bytes)}{hbm}", NOT_COMPILED,
            NOT_COMPILED, "—", NOT_COMPILED, "—",
        )  # fmt: skip
        return ResultRow(cells, r.fits, (not_compiled_note(r), *r.notes))
    count = sum(c.count for c in r.collectives)
    moved = sum(c.moved_bytes for c in r.collectives)
    colls = f"{count} ({format_bytes(moved)})" if count else "none"
    cells = (
        r.strategy,
        mesh,
        format_bytes(r.weight_bytes),
        kv,
        "—" if r.working_bytes is None else format_bytes(r.working_bytes),
        format_bytes(r.total_bytes) + hbm,
        colls,
        "—" if r.step_seconds is None else format_seconds(r.step_seconds),
        r.bound or "—",
        _opt(r.tokens_per_second_per_chip),
        _opt(r.max_batch),
    )
    return ResultRow(cells, r.fits, r.notes)


def summary_line(c: ServingComparison) -> str:
    """What is served, and its cache per token."""
    first = c.results[0] if c.results else None
    what = (
        f"{first.mode}, batch {first.batch}, context {first.context:,}, weights "
        f"{first.weight_dtype}, cache {first.cache_dtype}, on {first.target}"
        if first
        else "no results"
    )
    return (
        f"Serving {c.model} ({format_count(c.num_params)} parameters, weights "
        f"{format_bytes(c.weight_bytes_total)}): {what}. KV cache "
        f"{c.kv_bytes_per_token:,.0f} B per token."
    )


def expert_lines(c: ServingComparison) -> list[str]:
    """A mixture of experts' expert weights per step, one paragraph each (``[]`` for a dense
    model): the experts the step's tokens touch per layer, ``E x (1 - (1 - k/E)^T)``; then
    per strategy (``"tp: ..."``) the experts on a device, the tokens each sees, those touched,
    the expert bytes read of those held, and the all-to-alls of the compiled step."""
    moe = [r for r in c.results if r.experts is not None]
    if not moe:
        return []
    x = moe[0].experts
    assert x is not None
    e, k = x.experts, x.experts_per_token
    head = (
        f"Experts: top-{k} of {e} per token. A step's {x.tokens:,} tokens touch {e} x (1 - "
        f"(1 - {k}/{e})^{x.tokens:,}) = {sig3(x.touched)} of the {e} experts of each layer "
        f"(routing taken as uniform), each {format_bytes(x.bytes_per_expert)} of weights: "
        f"{format_bytes(x.read_bytes_total)} read per step over {x.layers} layers, of "
        f"{format_bytes(e * x.layers * x.bytes_per_expert)}. A kernel that skips idle experts "
        "reads only theirs, and the step's estimate counts that. Per device:"
    )
    lines = [head]
    for r in moe:
        x = r.experts
        assert x is not None
        alltoall = [col for col in r.collectives if col.kind == "all-to-all"]
        if alltoall:
            moved = "; ".join(
                f"{col.count} all-to-all over {'x'.join(col.axes) or 'no mesh axis'} "
                f"({format_bytes(col.moved_bytes)})"
                for col in alltoall
            )
            said = f"the compiled step moves the tokens to and from them: {moved} per step"
        elif r.compiled:
            said = "the compiled step has no all-to-all: the tokens stay on their chips"
        else:
            said = not_compiled_note(r)
        one = "" if x.experts_per_device == 1 else "s"
        seen = "" if x.tokens_per_expert == 1 else "s"
        text = (
            f"{r.strategy}: {x.experts_per_device} expert{one} per layer, each seeing "
            f"{x.tokens_per_expert:,} token{seen}: {sig3(x.touched_per_device)} touched, "
            f"{format_bytes(x.read_bytes)} of the {format_bytes(x.held_bytes)} of expert "
            f"weights read per step; {said}"
        )
        lines.append(text)
    return lines


def findings_head(c: ServingComparison) -> str:
    """``Findings · serving llama3.1-8b · 2 findings: 2 warnings``: the findings' header."""
    return f"Findings · serving {c.model} · {count_str(Findings(c.model, c.findings))}"


def slice_lines(s: SliceChoice) -> list[str]:
    """A slice choice in sentences: the slice, the bytes, the room left, what was tried."""
    lines = [
        f"Smallest {s.chip} slice for {s.model} (weights {s.weight_dtype}, cache "
        f"{s.cache_dtype}, {s.batch} x {s.context:,} tokens): {s.slice} ({s.chips} "
        f"chip{'s' * (s.chips != 1)})",
        f"  weights {format_bytes(s.weight_bytes)} + cache {format_bytes(s.kv_bytes)} over "
        f"{s.chips} x {format_bytes(s.hbm_bytes_per_chip)} HBM; room for "
        f"{s.room_sequences} sequences of {s.context:,} beside the weights",
    ]
    for t in s.tried:
        verdict = "holds it by the byte count" if t.fits else "too small"
        lines.append(
            f"  tried {t.name}: {format_bytes(t.needed_bytes)} per chip of "
            f"{format_bytes(t.hbm_bytes)}: {verdict}"
        )
    if s.checked:
        lines.append(f"  {s.checked}")
    return lines


# --------------------------------------------------------------------------------------------
# The chart of memory and throughput against batch and context: the lines every figure (SVG,
# plotly, matplotlib) draws, computed once.

#: One colour per strategy, in result order.
PALETTE: tuple[str, ...] = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")

#: The four panels, in order: (key, the sweep it reads, what it shows, its title).
PANELS: tuple[tuple[str, str, str, str], ...] = (
    ("batch-bytes", "sweep", "bytes", "bytes per device against batch"),
    ("batch-tokens", "sweep", "tokens", "tokens/s per chip against batch"),
    ("context-bytes", "context_sweep", "bytes", "bytes per device against context"),
    ("context-tokens", "context_sweep", "tokens", "tokens/s per chip against context"),
)


@dataclass(frozen=True)
class SweepLine:
    """One strategy's points along a sweep: ``xs`` (batch or context), ``bytes`` per device
    (weights + KV cache + working) and ``tokens`` per second per chip at each."""

    strategy: str
    colour: str
    xs: tuple[int, ...]
    bytes: tuple[int, ...]
    tokens: tuple[float, ...]


@dataclass(frozen=True)
class MaxBatchMark:
    """The largest batch that fits one strategy's HBM and its bytes per device there (as
    :func:`max_batch_bytes` counts them, the count that chose the batch)."""

    strategy: str
    colour: str
    batch: int
    bytes: int


@dataclass(frozen=True)
class ServingChart:
    """What the serving charts draw: per strategy a line against batch and one against
    context, the HBM per device (0: unknown), the largest batch that fits, and for each
    strategy that was not compiled (no line: no figures) a line of words saying why."""

    model: str
    title: str
    hbm_bytes: int
    batch: tuple[SweepLine, ...]
    context: tuple[SweepLine, ...]
    max_batch: tuple[MaxBatchMark, ...]
    not_compiled: tuple[tuple[str, str], ...] = ()

    @property
    def not_compiled_words(self) -> str:
        """``tp: not compiled: the compiler ran out of HBM: ...`` for each strategy that was
        not compiled, joined by ``; `` (``""`` when all were)."""
        return "; ".join(f"{strategy}: {note}" for strategy, note in self.not_compiled)

    @property
    def empty_words(self) -> str:
        """What a panel with no line says: which strategies were not compiled (and why),
        or that no target was named."""
        if self.not_compiled:
            return self.not_compiled_words
        return "no sweep: name a target (target='v5e:2x4') to estimate one"

    def lines(self, along: str) -> tuple[SweepLine, ...]:
        """The lines of ``along``: ``"sweep"`` (against batch) or ``"context_sweep"``."""
        return self.batch if along == "sweep" else self.context


def _line(r: ServingResult, colour: str, points: tuple[tuple[int, int, float], ...]) -> SweepLine:
    return SweepLine(
        r.strategy,
        colour,
        tuple(p[0] for p in points),
        tuple(int(p[1]) for p in points),
        tuple(float(p[2]) for p in points),
    )


def x_ticks(xs: list[int] | tuple[int, ...], most: int = 8) -> list[int]:
    """The swept xs to label on a log axis: all of them, or every second, fourth... so that
    at most ``most`` are, the last always among them."""
    ticks = sorted(set(xs))
    step = 1
    while len(ticks[::step]) > most:
        step *= 2
    return ticks[::-1][::step][::-1]


def max_batch_bytes(r: ServingResult, batch: int) -> int:
    """Bytes per device at ``batch`` as the largest batch and the sweeps count them
    (:meth:`~shardviz.model.serving.ServingResult.bytes_at`: the mark sits on its line)."""
    return r.bytes_at(batch)


def serving_chart(c: ServingComparison) -> ServingChart:
    """The lines of every result with a sweep (results without a target have none)."""
    swept = [r for r in c.results if r.sweep or r.context_sweep]
    colours = [PALETTE[i % len(PALETTE)] for i in range(len(swept))]
    batch = tuple(_line(r, k, r.sweep) for r, k in zip(swept, colours, strict=True) if r.sweep)
    context = tuple(
        _line(r, k, r.context_sweep) for r, k in zip(swept, colours, strict=True) if r.context_sweep
    )
    marks = tuple(
        MaxBatchMark(r.strategy, k, r.max_batch, max_batch_bytes(r, r.max_batch))
        for r, k in zip(swept, colours, strict=True)
        if r.max_batch and r.sweep
    )
    first = c.results[0] if c.results else None
    what = f" · {first.mode} on {first.target}" if first else ""
    skipped = tuple((r.strategy, not_compiled_note(r)) for r in c.results if not r.compiled)
    return ServingChart(
        model=c.model,
        title=f"Serving {c.model}{what}: memory and throughput against batch and context",
        hbm_bytes=max((r.hbm_bytes for r in swept), default=0),
        batch=batch,
        context=context,
        max_batch=marks,
        not_compiled=skipped,
    )
