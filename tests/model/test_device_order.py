"""A device order (``sv.reordered_mesh(mesh, order)``, ``sv.physical(report, order=...)``) is a
list of device ids: strings, bytes, sets, floats and booleans are refused, naming ``order``
and what to pass; an endless iterator is read no further than the mesh's size plus one; and
a huge order of repeated ids is refused in linear time."""

from __future__ import annotations

import itertools

import jax
import numpy as np
import pytest

import shardviz as sv
from shardviz.errors import ArgumentError, MeshError
from shardviz.model.device_order import device_order
from tests.render.report_fixtures import REPORTS

IDS = tuple(range(8))
REVERSED = [7, 6, 5, 4, 3, 2, 1, 0]

REFUSED = {
    "a string of digits": ("76543210", "is a string, not a list of device ids"),
    "bytes": (bytes(REVERSED), "is bytes, not a list of device ids"),
    "a set": (set(IDS), "is a set: it has no order of devices"),
    "a mapping": (dict.fromkeys(IDS), "is a mapping"),
    "floats": ([7.9, 6.1, 5, 4, 3, 2, 1, 0.5], "order[0]=7.9 is a float: ids are never rounded"),
    "whole floats": ([float(i) for i in REVERSED], "order[0]=7.0 is a float"),
    "booleans": ([True, False, 2, 3, 4, 5, 6, 7], "order[0]=True is a boolean"),
    "numpy booleans": (np.array([1, 0, 2, 3, 4, 5, 6, 7]) > 0, "array of bool"),
    "numpy floats": (np.array(REVERSED, dtype=float), "array of float64"),
    "a number": (7, "order=7 is not a list of device ids"),
    "a 0-d array": (np.array(7), "is a single number"),
    "None inside": ([None, *REVERSED[1:]], "order[0]=None is a NoneType, not a device id"),
    "a nested list": ([[7, 6, 5, 4], [3, 2, 1, 0]], "order[0]=[7, 6, 5, 4] is a list"),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_what_is_not_a_list_of_ids_is_refused_naming_order_and_the_fix(case):
    order, words = REFUSED[case]
    with pytest.raises(MeshError) as err:
        device_order(order, IDS, "reordered_mesh")
    message = str(err.value)
    assert message.startswith("reordered_mesh: order") and words in message, message
    assert "Fix: pass the mesh's 8 device ids as a list" in message
    assert "order=[7, 6, 5, 4, 3, 2, 1, 0]" in message


ACCEPTED = {
    "a list": REVERSED,
    "a tuple": tuple(REVERSED),
    "a range": range(7, -1, -1),
    "an iterator": iter(REVERSED),
    "numpy integers": [np.int64(i) for i in REVERSED],
    "an int array": np.array(REVERSED, dtype=np.int32),
    "a 2-d int array": np.array(REVERSED).reshape(2, 4),
    "an unsigned array": np.array(REVERSED, dtype=np.uint8),
    "0-d int arrays": [np.array(i) for i in REVERSED],
}


@pytest.mark.parametrize("case", list(ACCEPTED))
def test_lists_of_ids_in_any_integer_form_are_taken(case):
    got = device_order(ACCEPTED[case], IDS)
    assert got == tuple(REVERSED) and all(type(i) is int for i in got)


def test_jax_devices_are_taken_by_their_ids():
    devices = jax.devices()[:8][::-1]
    assert device_order(devices, IDS) == tuple(REVERSED)
    assert device_order(np.array(devices, dtype=object), IDS) == tuple(REVERSED)


def test_an_endless_iterator_is_refused_after_one_id_too_many():
    read = []

    def counting():
        for i in itertools.count():
            read.append(i)
            yield 0

    with pytest.raises(MeshError, match="more than 8 ids for a mesh of 8 devices"):
        device_order(counting(), IDS)
    assert len(read) == 9
    with pytest.raises(MeshError, match="not a permutation"):
        device_order(itertools.repeat(0), IDS)
    with pytest.raises(MeshError, match="more than 8 ids"):
        device_order(np.zeros(10**7, dtype=np.int64), IDS)


def test_a_huge_order_of_repeated_ids_is_refused_promptly():
    """200,000 devices, every id the same: linear checks, not one count per id."""
    ids = tuple(range(200_000))
    with pytest.raises(MeshError) as err:
        device_order([0] * 200_000, ids)
    message = str(err.value)
    assert "missing 1, 2, 3" in message and "given twice: 0" in message
    assert len(message) < 1000
    assert device_order(ids[::-1], ids) == ids[::-1]


def test_a_permutation_problem_says_what_is_missing_extra_or_repeated():
    with pytest.raises(MeshError, match="not a permutation") as err:
        device_order([0, 1, 2, 3, 4, 5, 6, 6], IDS)
    assert "missing 7; given twice: 6" in str(err.value)
    with pytest.raises(MeshError, match="7 ids for a mesh of 8 devices; missing 7"):
        device_order(range(7), IDS)
    with pytest.raises(MeshError, match="not in the mesh: 99"):
        device_order([*range(7), 99], IDS)
    huge = 10**400
    with pytest.raises(MeshError, match="not in the mesh: 1000") as err:
        device_order([*range(7), huge], IDS)
    assert len(str(err.value)) < 1000


# -- the two public calls that take an order ----------------------------------------------------


def test_reordered_mesh_refuses_what_is_not_an_order():
    mesh = sv.Mesh(range(8), (2, 4), ("data", "model"))
    for order in ("76543210", b"\x07\x06\x05\x04\x03\x02\x01\x00", set(range(8)),
                  [7.9, 6.1, 5, 4, 3, 2, 1, 0.5], [True, False, 2, 3, 4, 5, 6, 7]):  # fmt: skip
        with pytest.raises(MeshError, match=r"^reordered_mesh: order"):
            sv.reordered_mesh(mesh, order)
    with pytest.raises(MeshError, match="more than 8 ids"):
        sv.reordered_mesh(mesh, itertools.repeat(0))
    flipped = sv.reordered_mesh(mesh, np.array(REVERSED))
    assert [d.id for d in flipped.devices.flat] == REVERSED


def test_physical_refuses_what_is_not_a_report_or_an_order():
    for report in (None, "report", 3):
        with pytest.raises(ArgumentError, match="^physical: report=") as err:
            sv.physical(report)  # type: ignore[arg-type]
        assert "Fix: pass what sv.explain returns" in str(err.value)
    report = REPORTS["dp_v5e"]()
    with pytest.raises(MeshError, match="^physical: order='76543210' is a string"):
        sv.physical(report, order="76543210")
    with pytest.raises(MeshError, match="^physical: order"):
        sv.physical(report, order=itertools.repeat(0))
    p = sv.physical(report, order=np.array(REVERSED))
    assert p.mesh.device_ids == tuple(REVERSED)
