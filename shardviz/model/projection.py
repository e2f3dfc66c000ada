"""ZeRO's memory accounting projected to sizes this machine cannot hold, as plain data."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class ProjectionRow:
    """One cell of a projection: a model size on a device count at one ZeRO stage.

    ``fits`` is ``total <= hbm_bytes``, or ``None`` when no capacity was given.
    """

    num_params: int
    devices: int
    data_parallel: int
    tensor_parallel: int
    zero_stage: int
    params: int
    grads: int
    optimizer: int
    total: int
    hbm_bytes: int | None
    fits: bool | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
