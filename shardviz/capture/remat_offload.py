"""What a program's remat policies ask to offload, read from its jaxpr, and the names the
program tags: an offload that names nothing the program tags, or a tagged value the backward
pass never saves, offloads nothing (jax-ml/jax#23869: an offload in a scan that silently did
nothing).

``jax.checkpoint_policies.save_and_offload_only_these_names`` keeps its names in its
closure; shardviz reads them there (jax 0.10.2). Other policies (``offload_dot_with_no_
batch_dims``) name no values and are not checked here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import jax

from shardviz.errors import ShardvizError, problem
from shardviz.model.offload import OffloadRequest

__all__ = [
    "PolicyNames",
    "offload_policy",
    "policy_names",
    "policy_misses",
    "sub_jaxprs",
    "tagged_names",
]


@dataclass(frozen=True)
class PolicyNames:
    """The remat policies' offload names (with where they send them) and the names the
    program tags with ``checkpoint_name``."""

    offloads: tuple[tuple[frozenset[str], str], ...] = ()
    tags: frozenset[str] = frozenset()


def sub_jaxprs(value: Any) -> Iterator[Any]:
    """The jaxprs a parameter value holds (a jaxpr, a closed jaxpr, or a tuple of them)."""
    for v in value if isinstance(value, tuple | list) else (value,):
        if hasattr(v, "eqns"):
            yield v
        elif hasattr(getattr(v, "jaxpr", None), "eqns"):
            yield v.jaxpr


def _eqns(jaxpr: Any) -> Iterator[Any]:
    """Every equation of ``jaxpr`` and of the jaxprs inside it (scan, cond, remat bodies)."""
    todo = [jaxpr]
    while todo:
        for eqn in todo.pop().eqns:
            yield eqn
            for value in eqn.params.values():
                todo.extend(sub_jaxprs(value))


def tagged_names(jaxpr: Any) -> frozenset[str]:
    """The names ``jax.ad_checkpoint.checkpoint_name`` gives values anywhere in ``jaxpr``."""
    return frozenset(
        str(e.params["name"]) for e in _eqns(jaxpr) if e.primitive.name == "name"
    )  # fmt: skip


def policy_offload_names(policy: Any) -> tuple[frozenset[str], str] | None:
    """(names, destination) of a ``save_and_offload_only_these_names`` policy; ``None`` for
    any other policy. # jax 0.10.2: read from the policy's closure."""
    code = getattr(policy, "__code__", None)
    cells = getattr(policy, "__closure__", None)
    if code is None or not cells:
        return None
    free = dict(zip(code.co_freevars, (c.cell_contents for c in cells), strict=False))
    names = free.get("names_which_can_be_offloaded")
    if not isinstance(names, set | frozenset):
        return None
    return frozenset(str(n) for n in names), str(free.get("offload_dst", "pinned_host"))


def policy_names(jaxpr: Any) -> PolicyNames:
    """The offloading remat policies of ``jaxpr`` (each once) and its tagged names."""
    seen: dict[int, tuple[frozenset[str], str]] = {}
    for e in _eqns(jaxpr):
        policy = e.params.get("policy") if e.primitive.name in ("remat2", "checkpoint") else None
        found = policy_offload_names(policy) if policy is not None else None
        if found is not None and found[0]:
            seen.setdefault(id(policy), found)
    return PolicyNames(tuple(seen.values()), tagged_names(jaxpr) if seen else frozenset())


def _quoted(names: frozenset[str] | set[str]) -> str:
    return ", ".join(repr(n) for n in sorted(names)) or "nothing"


def policy_misses(
    policies: PolicyNames, requests: tuple[OffloadRequest, ...], platform: str
) -> tuple[OffloadRequest, ...]:
    """The policies' offloads that cannot happen, as missed requests with the reason:
    names the program never tags; tagged values the lowering did not ask to offload (not
    saved for the backward pass; on CPU, jax asks for no offload at all)."""
    asked = [r for r in requests if not r.output]
    out = []
    for names, dst in policies.offloads:
        tagged = names & policies.tags
        if not tagged:
            reason = (
                f"the remat policy offloads {_quoted(names)}, which the program never tags "
                f"with checkpoint_name (it tags {_quoted(policies.tags)})"
            )
        elif asked:
            continue
        elif platform == "cpu":
            reason = (
                f"the program tags {_quoted(tagged)}, but on CPU jax lowers no offload "
                "(host and device memory are one); compile for a TPU or GPU topology"
            )
        else:
            reason = (
                f"the program tags {_quoted(tagged)} only on values the backward pass does "
                "not save (a checkpointed function's output, or values it recomputes): "
                "nothing is left to offload; tag a value computed inside the checkpointed "
                "function that its backward pass needs"
            )
        out.append(
            OffloadRequest(
                name=_quoted(names), value=_quoted(names), kind=dst, op_name="remat policy",
                happened=False, reason=reason,
            )
        )  # fmt: skip
    return tuple(out)


def offload_policy(
    fn: Callable[..., Any],
    *args: Any,
    names: tuple[str, ...] | list[str],
    dst: str = "pinned_host",
) -> Any:
    """``save_and_offload_only_these_names`` offloading ``names`` to ``dst``, once every name
    is one ``fn`` tags (traced on ``args``: shapes are enough).

    Raises:
        ShardvizError: a name ``fn`` never tags; the message lists those it does.
    """
    tags = tagged_names(jax.make_jaxpr(fn)(*args).jaxpr)
    missing = [n for n in names if n not in tags]
    if missing:
        name = getattr(fn, "__name__", "the function")
        raise ShardvizError(
            problem(
                "offload names",
                f"{_quoted(set(missing))} {'is' if len(missing) == 1 else 'are'} never tagged "
                f"in {name} (it tags {_quoted(tags)}), so nothing would be offloaded",
                "tag the value inside the checkpointed function with "
                "jax.ad_checkpoint.checkpoint_name(x, 'name'), or offload one of the tagged "
                "names",
            )
        )
    return jax.checkpoint_policies.save_and_offload_only_these_names(
        names_which_can_be_saved=[],
        names_which_can_be_offloaded=list(names),
        offload_src="device",
        offload_dst=dst,
    )
