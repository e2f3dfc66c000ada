"""[offload-missed] An offload the program asked for that the compiled program does not do.

The program asks for host memory with ``jax.device_put(x, jax.memory.Space.Host)`` or a
remat policy that offloads (``save_and_offload_only_these_names``,
``offload_dot_with_no_batch_dims``): the module before the compiler's passes then holds a
request (``annotate_device_placement`` to ``pinned_host``) on that value. The compiled
program moves an offloaded value with a transfer to host memory inside the step; when it
has none of that value's type, the compiler kept the value in HBM. On CPU nothing can
move (host and device memory are one): the finding says so instead.

A request is matched to the step's offload transfers by element type: the request's value
is global (before partitioning) and a scan stacks its steps, so shapes do not compare.
Model in, findings out (no jax).
"""

from __future__ import annotations

from shardviz.analysis.detect.candidate import Candidate
from shardviz.model import Report
from shardviz.model.findings import Finding, FindingCost, Where
from shardviz.model.offload import OffloadRequest


def _dtype(value: str) -> str:
    """``f32`` of ``f32[256,512]``."""
    return value.split("[", 1)[0]


def missed_requests(report: Report) -> list[tuple[OffloadRequest, str]]:
    """The offload requests (not host outputs) the compiled program does not carry out, each
    with the reason; a request capture already knows missed (``happened`` false: a remat
    policy that names nothing the program saves) with its own."""
    known = [(r, r.reason) for r in report.offload_requests if not r.happened]
    asked = [r for r in report.offload_requests if not r.output and r.happened]
    if not asked:
        return known
    if report.platform == "cpu":
        why = (
            "the CPU backend keeps host and device memory as one, so nothing is moved; "
            "compile for a TPU or GPU topology (sv.topology('v5e:2x2')) to see the offload"
        )
        return known + [(r, why) for r in asked]
    moved = {
        _dtype(t.value)
        for t in report.host_transfers
        if t.role == "offload" and t.direction == "to host"
    }
    why = (
        "the compiled program sends no value of this type to host memory: the compiler kept "
        "it in HBM (it may have found the value cheaper to keep, or it is not saved for the "
        "backward pass)"
    )
    return known + [(r, why) for r in asked if _dtype(r.value) not in moved]


def offload_missed(report: Report) -> list[Candidate]:
    """[offload-missed] One finding per value asked to be offloaded that stays in HBM."""
    out = []
    for request, why in missed_requests(report):
        nbytes = _value_bytes(request.value)
        finding = Finding(
            kind="offload-missed",
            severity="info" if report.platform == "cpu" else "warning",
            title=(
                f"{request.value} {_at(request)} was asked to live in {request.kind} "
                "memory but stays in HBM"
            ),
            why=(
                f"The program asks for {request.value} ({request.op_name or request.name}) "
                f"to be kept in {request.kind} memory, but {why}. Its bytes count against "
                "HBM, not host memory."
            ),
            cost=FindingCost(kind="memory", bytes=nbytes),
            where=Where(line=_line(request), values=(request.name,), place=_place(request)),
        )
        out.append(Candidate(finding))
    return out


def _at(request: OffloadRequest) -> str:
    """``at train.py:41`` for a value the program made, ``(remat policy)`` for a policy's."""
    return f"at {request.where}" if request.source is not None else f"({request.where})"


def _place(request: OffloadRequest) -> str:
    f = request.source.innermost if request.source is not None else None
    return f.place if f is not None else ""


def _line(request: OffloadRequest) -> str:
    f = request.source.innermost if request.source is not None else None
    return f"{f.file}:{f.line}" if f is not None else ""


def _value_bytes(value: str) -> int:
    """Bytes of an HLO array shape such as ``f32[256,512]`` (0 when unreadable)."""
    sizes = {"f64": 8, "f32": 4, "s32": 4, "u32": 4, "bf16": 2, "f16": 2, "s16": 2,
             "s8": 1, "u8": 1, "pred": 1, "s64": 8, "u64": 8}  # fmt: skip
    dtype, _, rest = value.partition("[")
    dims = rest.rstrip("]").split(",") if rest.rstrip("]") else []
    if dtype not in sizes or not all(d.strip().isdigit() for d in dims):
        return 0
    n = 1
    for d in dims:
        n *= int(d)
    return n * sizes[dtype]
