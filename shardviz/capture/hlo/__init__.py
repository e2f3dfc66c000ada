"""Compiled HLO text -> the model: collectives, completed shardings and reshard points.

Pure text in, model out: nothing here imports jax (standard library, numpy and
``shardviz.model`` only), so the saved fixtures test it without compiling anything. The
capture code that compiles passes in:

- ``compiled.as_text()`` -> :func:`collectives_of_hlo`;
- the ``*after_shardy-xla.before_spmd-partitioning.txt`` dump (compile with
  ``compiler_options={"xla_dump_to": tmp, "xla_dump_hlo_pass_re": "^spmd-partitioning$"}``) ->
  :func:`intermediates_of_hlo`;
- both results -> :func:`link_reshards`;
- the user's :class:`~shardviz.model.MeshLayout`, and the executable's device assignment as
  ``device_ids`` (``device_ids[p]`` is the jax ``device.id`` of HLO logical id ``p``). The
  default is the identity. For a program jitted on one mesh the assignment is the mesh's
  devices in row-major order, i.e. ``MeshLayout.device_ids`` (``[d.id for d in
  mesh.devices.flat]``; checked on a 2x4 mesh whose rows hold devices 0,2,4,6 / 1,3,5,7).

While loops: each collective is listed once, where it is written (a collective in a while
body is one ledger entry); :func:`collective_trip_counts` gives how many times each one runs
when the loops' ``known_trip_count`` is in the text.

The pieces live in one module per concept: :mod:`.text` (module text, shapes, stack
frames), :mod:`.groups` (replica-group encodings, mesh axes of groups),
:mod:`.sharding` (HLO shardings -> specs, intermediates, the reshard rule) and
:mod:`.collectives` (the collective ledger, ring-model bytes, user-written detection,
reshard linking). This module re-exports the public API.

Example::

    collectives = collectives_of_hlo(compiled.as_text(), mesh, device_ids)
    intermediates = intermediates_of_hlo(before_spmd_text, mesh, device_ids)
    collectives = link_reshards(collectives, intermediates)
"""

from __future__ import annotations

from shardviz.capture.hlo.collectives import (
    USER_COLLECTIVE_PRIMITIVES,
    collective_trip_counts,
    collectives_of_hlo,
    is_user_written,
    link_reshards,
    moved_bytes,
    with_partitioned,
)
from shardviz.capture.hlo.groups import (
    axes_of_groups,
    axes_of_pairs,
    expand_replica_groups,
    to_device_ids,
)
from shardviz.capture.hlo.sharding import (
    HloSharding,
    hlo_sharding_to_spec,
    intermediates_of_hlo,
    parse_hlo_sharding,
)
from shardviz.capture.hlo.text import (
    ArrayShape,
    HloComputation,
    HloInstruction,
    HloModule,
    HloParseError,
    parse_hlo_module,
    parse_shape,
)

#: Short names, as ``explain()`` calls them.
collectives = collectives_of_hlo
intermediates = intermediates_of_hlo

__all__ = [
    "USER_COLLECTIVE_PRIMITIVES",
    "ArrayShape",
    "HloComputation",
    "HloInstruction",
    "HloModule",
    "HloParseError",
    "HloSharding",
    "axes_of_groups",
    "axes_of_pairs",
    "collective_trip_counts",
    "collectives",
    "collectives_of_hlo",
    "expand_replica_groups",
    "hlo_sharding_to_spec",
    "intermediates",
    "intermediates_of_hlo",
    "is_user_written",
    "link_reshards",
    "moved_bytes",
    "parse_hlo_module",
    "parse_hlo_sharding",
    "parse_shape",
    "to_device_ids",
    "with_partitioned",
]
