"""One collective's traffic on the mesh: what :meth:`Report.traffic` returns.

A report's ledger lists the collectives; the traffic of one of them is who sends what to whom
inside each device group (a ring for all-reduce, all-gather and reduce-scatter; all pairs for
all-to-all; the listed pairs for collective-permute). This module picks the collective out of
a report and keeps it with the mesh it runs on; :mod:`shardviz.analysis.traffic` computes the
links and :mod:`shardviz.render.traffic` draws them (``print(t)``, ``t`` in a notebook,
``t.save_html(path)``). No jax here.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

from shardviz.errors import ShardvizError, problem
from shardviz.model import display
from shardviz.model._codec import JsonMixin
from shardviz.model.collective import COLLECTIVE_KINDS, Collective, collective_kind_named
from shardviz.model.mesh import MeshLayout

if TYPE_CHECKING:
    from shardviz.model.program import Report


@dataclass(frozen=True)
class CollectiveTraffic(JsonMixin, display.Shown):
    """One collective of a report and the mesh to draw its traffic on.

    Attributes:
        collective: the ledger entry.
        mesh: the report's mesh (``None``: the views say the traffic in words only).
        index: the collective's position in ``report.collectives`` (0 first).
        function: the name of the report's function, for titles.
    """

    collective: Collective
    mesh: MeshLayout | None
    index: int
    function: str = ""

    @property
    def kind(self) -> str:
        return self.collective.kind

    @property
    def group_size(self) -> int:
        return self.collective.group_size


def _ledger_words(collectives: tuple[Collective, ...]) -> str:
    """``all-reduce ×3 over ('data',), all-to-all ×2 over ('expert',)``: what the ledger has."""
    counts = Counter((c.kind, c.axes) for c in collectives)
    return ", ".join(
        f"{kind} ×{n} over {axes!r}" if axes else f"{kind} ×{n} over no mesh axis"
        for (kind, axes), n in counts.items()
    )


def collective_traffic(
    report: Report, which: str | int, axes: str | tuple[str, ...] | None = None
) -> CollectiveTraffic:
    """The traffic of one collective of ``report``: see :meth:`Report.traffic`.

    Raises:
        ShardvizError: no collective of the ledger is ``which`` (over ``axes``); the message
            lists what the ledger has and says what to pass instead.
    """
    if isinstance(axes, str):
        axes = (axes,)
    where = f"report.traffic({which!r}" + (f", axes={axes!r})" if axes is not None else ")")
    found = report.collectives
    fix = "pass a kind the ledger lists, or a position in report.collectives (0 first)"
    if not found:
        raise ShardvizError(
            problem(
                where,
                f"{report.function} has no collectives: nothing moves between devices",
                "compile a program whose arrays are split across devices (its ledger then "
                "lists the collectives to draw)",
            )
        )
    if isinstance(which, bool) or not isinstance(which, int | str):
        raise ShardvizError(
            problem(where, f"{which!r} names no collective", fix + ", e.g. 'all-reduce' or 0")
        )
    if isinstance(which, int):
        if not -len(found) <= which < len(found):
            raise ShardvizError(
                problem(
                    where,
                    f"{report.function} has {len(found)} collective{'s' * (len(found) != 1)} "
                    f"(positions 0 to {len(found) - 1})",
                    fix,
                )
            )
        index = which % len(found)
        return CollectiveTraffic(found[index], report.mesh, index, report.function)
    kind = collective_kind_named(which)
    named = [i for i, c in enumerate(found) if c.name == which]
    if kind is None and not named:
        raise ShardvizError(
            problem(
                where,
                f"{which!r} is neither a collective kind ({', '.join(COLLECTIVE_KINDS)}) nor "
                f"the name of one in the ledger (it has: {_ledger_words(found)})",
                fix,
            )
        )
    hits = [i for i, c in enumerate(found) if c.kind == kind] if kind else named
    if not hits:
        raise ShardvizError(
            problem(
                where,
                f"{report.function} has no {kind} (its ledger has: {_ledger_words(found)})",
                fix,
            )
        )
    over = [i for i in hits if axes is None or found[i].axes == tuple(axes)]
    if not over:
        have = sorted({found[i].axes for i in hits})
        raise ShardvizError(
            problem(
                where,
                f"no {found[hits[0]].kind} of {report.function} runs over {tuple(axes or ())!r} "
                f"(they run over {', '.join(repr(a) for a in have)})",
                f"pass axes={have[0]!r}, or leave axes out for the first one",
            )
        )
    index = over[0]
    return CollectiveTraffic(found[index], report.mesh, index, report.function)
