"""Explorer prefetch without a browser: what a view's request makes Python send, in which order,
within which budget, and how a new report makes what is in flight stale.

The widget's ``send`` is replaced by a list (there is no kernel); the view's request is handed
to the widget as the comm would (``_handle_custom_msg``); the background thread is joined."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from shardviz.model import Report
from shardviz.widgets.explorer import widget as explorer
from shardviz.widgets.explorer.payload import (
    INTERMEDIATE,
    array_entries,
    array_json,
    prefetch_batches,
)
from shardviz.widgets.explorer.widget import PREFETCH, PREFETCHED, ExplorerWidget
from tests.live_reports import megatron_mlp_report
from tests.render.compare_fixtures import comparison
from tests.render.report_fixtures import dp_report, nasty_report, shard_map_report

WAIT = 30  # seconds: a ceiling against hangs, never a timing assertion


@pytest.fixture(scope="module")
def report() -> Report:
    """A real compile: the Megatron MLP step on a 2x4 ('data', 'model') mesh."""
    return megatron_mlp_report()


def capture(w: ExplorerWidget, on_send: Callable[[dict], None] | None = None) -> list[dict]:
    """Keep what ``w`` sends to the front end (calling ``on_send`` after each message)."""
    sent: list[dict] = []

    def send(content: dict) -> None:
        sent.append(json.loads(json.dumps(content)))  # as the front end would receive it
        if on_send is not None:
            on_send(content)

    w.send = send
    return sent


def ask(w: ExplorerWidget, generation: int | None = None, wait: bool = True) -> None:
    """What a view sends once it has drawn the payload; then wait for the background thread."""
    gen = w.generation if generation is None else generation
    w._handle_custom_msg({"type": PREFETCH, "generation": gen}, [])
    if wait:
        assert w._prefetcher.join(WAIT)


def pairs(messages: list[dict]) -> list[tuple[str, str]]:
    return [(ident, text) for m in messages for ident, text in m["arrays"]]


def order(report: Report, skip: str) -> list[str]:
    return [e.id for e in array_entries(report) if e.id != skip]


def nbytes(text: str) -> int:
    return len(text.encode())


# --------------------------------------------------------------------------------------------
# What is sent


def test_a_request_sends_every_other_array_as_the_array_trait_would(report):
    w = ExplorerWidget(report)
    sent = capture(w)
    ask(w)
    assert sent, "a request is answered"
    assert {m["type"] for m in sent} == {PREFETCHED}
    assert {m["generation"] for m in sent} == {w.generation}
    assert [m["done"] for m in sent] == [False] * (len(sent) - 1) + [True]
    assert sent[-1]["arrays"] == []
    got = pairs(sent)
    # Arguments and outputs first, then intermediates; the array already synced left out.
    assert [ident for ident, _ in got] == order(report, skip=w.selected_array)
    assert w.selected_array not in dict(got)
    roles = [e.role for e in array_entries(report) if e.id in dict(got)]
    assert INTERMEDIATE in roles and roles == sorted(roles, key=lambda r: r == INTERMEDIATE)
    for ident, text in got:
        assert text == array_json(report, ident)


def test_batches_stay_under_their_size_and_the_whole_under_the_budget(report, monkeypatch):
    w = ExplorerWidget(report)
    ids = order(report, skip=w.selected_array)
    size = {i: nbytes(array_json(report, i)) for i in ids}
    k = 7  # the budget ends in the middle: the 8th array would go over it
    budget = sum(size[i] for i in ids[:k]) + size[ids[k]] - 1
    batch_bytes = max(size[i] for i in ids[:k]) * 2
    monkeypatch.setattr(explorer, "PREFETCH_BUDGET", budget)
    monkeypatch.setattr(explorer, "PREFETCH_BATCH_BYTES", batch_bytes)
    sent = capture(w)
    ask(w)
    got = pairs(sent)
    assert [ident for ident, _ in got] == ids[:k]
    assert sum(nbytes(t) for _, t in got) <= budget
    batches = [m["arrays"] for m in sent if m["arrays"]]
    assert len(batches) > 1 and any(len(b) > 1 for b in batches)
    for b, following in zip(batches, [*batches[1:], None], strict=True):
        assert sum(nbytes(t) for _, t in b) <= batch_bytes or len(b) == 1
        if following:  # full: the next array would have taken it over
            assert sum(nbytes(t) for _, t in b) + nbytes(following[0][1]) > batch_bytes
    assert sent[-1]["done"]


def test_a_zero_budget_sends_only_done(report, monkeypatch):
    monkeypatch.setattr(explorer, "PREFETCH_BUDGET", 0)
    w = ExplorerWidget(report)
    sent = capture(w)
    ask(w)
    assert sent == [{"type": PREFETCHED, "generation": w.generation, "arrays": [], "done": True}]


def test_prefetched_json_is_escaped_like_the_array_trait():
    r = nasty_report()
    w = ExplorerWidget(r)
    sent = capture(w)
    ask(w)
    got = pairs(sent)
    assert got
    for ident, text in got:
        assert "<" not in text and ">" not in text and "&" not in text
        assert text == array_json(r, ident)


def test_prefetch_batches_is_lazy_and_exact(report):
    ids = order(report, skip="")
    batches = prefetch_batches(report, "", 10**9, 1)  # one array per batch
    first = next(batches)
    assert first == [(ids[0], array_json(report, ids[0]))]
    assert [b[0][0] for b in batches] == ids[1:]


def test_other_messages_are_ignored(report):
    w = ExplorerWidget(report)
    sent = capture(w)
    for content in ("prefetch", {"type": "nope"}, {"generation": w.generation}, [1]):
        w._handle_custom_msg(content, [])
    assert w._prefetcher.generation == 0 and sent == []


# --------------------------------------------------------------------------------------------
# A new report makes a prefetch stale


def test_a_new_report_changes_the_tag_and_old_requests_go_unanswered():
    first, second = dp_report(), shard_map_report()
    w = ExplorerWidget(first)
    before = w.generation
    w.show(second)
    assert w.generation != before and w.get_state()["generation"] == w.generation
    sent = capture(w)
    ask(w, generation=before)  # from a view that has not drawn the new report yet
    assert sent == []
    ask(w)
    assert {m["generation"] for m in sent} == {w.generation}
    for ident, text in pairs(sent):
        assert text == array_json(second, ident)

    again = w.generation
    w.show(second)  # a recompile with the same outcome is still a new report
    assert w.generation != again


def test_a_strategy_switch_changes_the_tag_and_sends_that_strategys_arrays():
    c = comparison()
    w = ExplorerWidget(c)
    before = w.generation
    w.selected_strategy = "tp"
    assert w.generation != before
    sent = capture(w)
    ask(w)
    tp = c.result("tp").report
    got = pairs(sent)
    assert [ident for ident, _ in got] == order(tp, skip=w.selected_array)
    for ident, text in got:
        assert text == array_json(tp, ident)


def test_a_prefetch_stops_once_the_report_is_replaced(report, monkeypatch):
    monkeypatch.setattr(explorer, "PREFETCH_BATCH_BYTES", 1)  # one array per batch
    w = ExplorerWidget(report)
    old = w.generation
    sent = capture(w, on_send=lambda msg: w.show(shard_map_report()) if len(sent) == 1 else None)
    ask(w)
    assert [m["generation"] for m in sent] == [old], "stops before its second batch, no done"
    assert w.generation != old


def test_a_newer_request_supersedes_the_one_in_flight(report, monkeypatch):
    monkeypatch.setattr(explorer, "PREFETCH_BATCH_BYTES", 1)
    w = ExplorerWidget(report)
    sent = capture(w, on_send=lambda msg: ask(w, wait=False) if len(sent) == 1 else None)
    ask(w)
    assert w._prefetcher.join(WAIT)
    n = len(order(report, skip=w.selected_array))
    assert sum(bool(m["done"]) for m in sent) == 1
    assert len(pairs(sent)) == 1 + n  # the first request's one batch, then all of the second's
