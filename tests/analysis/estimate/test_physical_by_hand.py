"""The physical layout from hand-built model objects (no jax, no topology): the rule that
link loads are the ledger's bytes times the hops each byte travels."""

from __future__ import annotations

from dataclasses import replace

from shardviz.analysis.estimate.physical import layout_on_chips, transfers
from shardviz.model.targets import target_for
from tests.render.report_fixtures import MODEL, coll, dp_report


def _report(groups, kind="all-reduce"):
    base = dp_report()
    c = coll("ar", kind, (1024,), (1024,), groups, ("model",), None)
    return replace(base, collectives=(replace(c, trips=3),))


def test_a_line_of_four_carries_the_ledger_times_its_hops():
    # v5e 4x2 placed in id order (x fastest): the 'model' groups are rows of 4 chips.
    target = target_for("v5e:4x2")
    report = _report(MODEL)
    p = layout_on_chips(report, target)
    c = report.collectives[0]
    ledger = c.moved_bytes * 8 * 3
    assert p.ledger_bytes == ledger
    assert p.axis("model").shape == "line"
    assert p.link_bytes == ledger * (1 + 1 + 1 + 3) // 4
    # every link of a row is crossed twice: once going out, once on the way back
    assert {x.bytes for x in p.links if x.bytes} == {2 * c.moved_bytes * 3}
    assert p.notes  # CPU devices: placed by assumption, and it says so


def test_every_ring_transfer_sends_the_moved_bytes_to_the_next_member():
    c = _report(MODEL).collectives[0]
    sent = transfers(c)
    assert len(sent) == 8 and all(b == c.moved_bytes for _, _, b in sent)
    assert (3, 0, c.moved_bytes) in sent  # the last member back to the first
    a2a = _report(MODEL, "all-to-all").collectives[0]
    assert len(transfers(a2a)) == 2 * 4 * 3
