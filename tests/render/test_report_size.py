"""A big ledger draws each distinct device-group picture once: the 8B plan's shape, small.

The 8B plan (Llama 3.1 8B, FSDP over a 256-chip v6e slice, ``benchmarks/fidelity.py``) has a
few dozen collectives, nearly all over one group of every device. Drawn per row, the same map
and ring picture were most of its report's bytes. Here a hand-built report of the same shape
(one 256-device axis, rows from distinct lines so nothing folds) grows by layers: the pictures
stay at one per distinct figure, each other row links to its picture and says its own traffic
in words, and the page grows by a row's text only.
"""

from __future__ import annotations

import dataclasses

import pytest

from shardviz.analysis.traffic import traffic_of
from shardviz.model import Report
from shardviz.render.report.html import report_html
from shardviz.render.report.view import FOLD_COLLECTIVES

from .fixtures import make_mesh
from .report_fixtures import coll, large_report, src
from .test_html import Doc

DEVICES = 256
#: Per layer: three ring collectives and an all-to-all, all over every device.
KINDS = ("all-gather", "all-reduce", "reduce-scatter", "all-to-all")


def fsdp_report(layers: int) -> Report:
    """``layers`` unrolled layers of FSDP collectives over one 256-device axis."""
    everyone = (tuple(range(DEVICES)),)
    f = "/home/ada/model/layers.py"
    collectives = tuple(
        coll(f"{kind}.{k}", kind, (DEVICES, 64), (DEVICES, 64), everyone, ("fsdp",),
             src(f, (10, "train_step"), (100 + k, f"layer_{k // len(KINDS)}")))
        for k, kind in enumerate(KINDS * layers)
    )  # fmt: skip
    base = large_report(1)
    return dataclasses.replace(
        base,
        mesh=make_mesh(("fsdp",), (DEVICES,)),
        collectives=collectives,
        intermediates=(),
    )


@pytest.mark.parametrize("layers", [8, 16, 32])
def test_pictures_are_drawn_once_per_distinct_figure(layers: int) -> None:
    report = fsdp_report(layers)
    assert len(report.collectives) > FOLD_COLLECTIVES
    doc = Doc(report_html(report))
    rows = doc.with_class("sv-collective")
    assert len(rows) == len(report.collectives)  # nothing folded: every line differs
    assert len(doc.with_class("sv-gmap")) == 2  # the ring groups, and all pairs over them
    assert len(doc.with_class("sv-traffic")) == 2
    same = len(report.collectives) - 2
    links = [a["href"] for t, a in doc.elements if t == "a" and "-m" in (a.get("href") or "")]
    assert len(links) == same  # each other row links to the first ring (#1) or all-to-all (#4)
    assert {h.rsplit("-", 1)[1] for h in links} == {"m1", "m4"}
    assert doc.all_text.count("same device groups and arrows as #") == same
    assert len(doc.with_class("sv-maps-note")) == 1
    assert f"device groups drawn for 2 rows · {same} rows with the same groups" in doc.all_text


def test_every_row_keeps_its_own_traffic_figures() -> None:
    report = fsdp_report(8)
    html = report_html(report)
    for c in report.collectives:
        assert traffic_of(c, report.mesh).words in html, c.name
    ids = {a.get("id") for _, a in Doc(html).elements if a.get("id")}
    hrefs = [a["href"] for t, a in Doc(html).elements if t == "a" and a.get("href")]
    assert hrefs and all(h[1:] in ids for h in hrefs)  # every "same as #k" lands on a picture


def test_the_page_grows_by_a_rows_text_as_layers_grow() -> None:
    small, big = (report_html(fsdp_report(n)) for n in (8, 32))
    added = len(fsdp_report(32).collectives) - len(fsdp_report(8).collectives)
    per_row = (len(big.encode()) - len(small.encode())) / added
    nodes = (len(Doc(big).elements) - len(Doc(small).elements)) / added
    assert per_row < 2_500  # a row's summary, facts and words; a picture is ~9 kB more
    assert nodes < 60  # a picture is ~140 elements more


def test_a_small_ledger_still_draws_every_row() -> None:
    report = fsdp_report(2)
    assert len(report.collectives) <= FOLD_COLLECTIVES
    doc = Doc(report_html(report))
    assert len(doc.with_class("sv-traffic")) == len(report.collectives)
    assert not doc.with_class("sv-maps-note")
