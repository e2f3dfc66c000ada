"""A training state's leaf shapes as the Explorer names them, for the spec controls' tests."""

from __future__ import annotations

#: The leaves of one layer: a norm and two matrices.
LAYER = ("attn_norm", "wq", "wo")


def llama_shapes(layers: int = 3) -> dict[str, tuple[int, ...]]:
    """Params, Adam's mu and nu and count (jax's order: ``opt`` after ``params``), then the
    batch: ``state/params/layers/0/wq``, ``state/opt/0/mu/layers/0/wq``, ``batch/tokens``."""
    params = {"embed": (64, 32)}
    for i in range(layers):
        params |= {f"layers/{i}/{n}": (32,) if "norm" in n else (32, 32) for n in LAYER}
    state = {f"state/params/{p}": s for p, s in params.items()}
    for moment in ("mu", "nu"):
        state |= {f"state/opt/0/{moment}/{p}": s for p, s in params.items()}
    state["state/opt/0/count"] = ()
    return {**state, "batch/tokens": (8, 16)}
