"""Small programs whose findings the Explorer's "try this fix" can act on, one per route:
a spec box (a replicated weight), the mesh shape (an idle axis) and the fixed program
compiled (a constraint that moves a value there and back). Each returns ``(fn, args)``; they
are the planted mistakes of ``tests/explainer/diagnose/planted.py``."""

from __future__ import annotations

import json

from tests.explainer.diagnose.planted import (
    idle_axis_program,
    replicated_program,
    reshard_chain_program,
)

#: w3 left whole on every device while w1 and w2 are split over 'data': fixed in a box.
replicated_weight = replicated_program
#: A (2, 4) mesh whose 'data' axis splits nothing: fixed by the mesh shape.
idle_axis = idle_axis_program
#: A constraint moves a value to P(None, 'model') and the next one back: fixed by dropping the
#: constraint, which no control can express (the fixed program is compiled).
there_and_back = reshard_chain_program


def pane_said(text: str) -> dict:
    """The Findings pane's synced JSON as the pane reads it: ``count_text`` (the view's count,
    else the pane's words), ``notes`` and ``items`` (each finding's view with its links and
    ``index``), beside the state's own keys."""
    state = json.loads(text)
    view = state["view"]
    items = view["items"] if view else []
    return {
        **state,
        "count_text": view["count"] if view else state["words"],
        "notes": [n for n in (view["untried"],) if n] + view["notes"] if view else [],
        "items": [
            {**item, **link, "index": i}
            for i, (item, link) in enumerate(zip(items, state["links"], strict=True))
        ],
    }
