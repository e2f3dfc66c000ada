"""Small programs whose findings the Explorer's "try this fix" can act on, one per route:
a spec box (a replicated weight), the mesh shape (an idle axis) and the fixed program
compiled (a constraint that moves a value there and back). Each returns ``(fn, args)``; they
are the planted mistakes of ``tests/explainer/diagnose/planted.py``."""

from __future__ import annotations

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
