"""A compiled program's host memory traffic: the transfers the compiler scheduled and the
offloads the program asked for (see :mod:`shardviz.capture.hlo.offload`)."""

from __future__ import annotations

from shardviz.capture.compile import Compiled
from shardviz.capture.hlo.loops import computation_runs, loops_of
from shardviz.capture.hlo.offload import host_scratch_bytes, host_transfers, offload_requests
from shardviz.capture.hlo.text import parse_hlo_module
from shardviz.capture.remat_offload import policy_misses
from shardviz.model.offload import HostTransfer, OffloadRequest

#: A layout in host memory, as the compiler prints it.
_HOST_SPACE = "S(5)"


def program_offload(
    comp: Compiled, platform: str = ""
) -> tuple[tuple[HostTransfer, ...], tuple[OffloadRequest, ...], int]:
    """(transfers, requests, host scratch bytes) of a compiled program; empty for one that
    uses no host memory (the common case costs two substring searches). The requests end with the remat
    policies' offloads that cannot happen (:func:`~.remat_offload.policy_misses`)."""
    transfers: tuple[HostTransfer, ...] = ()
    scratch = 0
    if _HOST_SPACE in comp.hlo_text:
        module = comp.module()
        loops = loops_of(module)
        unknown = frozenset(lp.body for lp in loops if not lp.known)
        transfers = host_transfers(module, computation_runs(module, loops), unknown)
        scratch = host_scratch_bytes(module)
    requests: tuple[OffloadRequest, ...] = ()
    if comp.before_optimizations:
        requests = offload_requests(parse_hlo_module(comp.before_optimizations))
    if comp.policies.offloads:
        requests += policy_misses(comp.policies, requests, platform)
    return transfers, requests, scratch
