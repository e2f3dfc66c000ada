"""The coordinator port: a busy one is refused (given) or replaced (default)."""

from __future__ import annotations

import socket

import pytest

from shardviz.errors import ProcessError
from shardviz.launch import DEFAULT_PORT, choose_port, free_port, port_in_use

from .helpers import held


def test_a_listening_port_is_in_use_and_a_free_one_is_not():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        assert port_in_use(port)
        with pytest.raises(
            ProcessError, match=f"coordinator port {port} on 127.0.0.1 is already in use"
        ):
            choose_port(port)
    assert not port_in_use(port)
    assert choose_port(port) == (port, None)


def test_the_default_port_is_replaced_when_busy():
    with held(DEFAULT_PORT):
        port, note = choose_port(None)
    assert port != DEFAULT_PORT and not port_in_use(port)
    assert (
        note == f"the coordinator port {DEFAULT_PORT} is in use; using the free port {port} instead"
    )


@pytest.mark.parametrize("bad", [0, 70000, -1, "8476", True])
def test_bad_port_numbers(bad):
    with pytest.raises(ProcessError, match="is not a port number"):
        choose_port(bad)


def test_free_port_is_bindable():
    assert not port_in_use(free_port())
