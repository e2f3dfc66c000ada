"""Ctrl-C between compiles, never inside one.

A ``KeyboardInterrupt`` raised while XLA compiles leaves the compile running on without the
Python frames that started it: it goes on writing its dump folder after that folder was
removed, and the interpreter, exiting, crashes under it ("Fatal Python error: Segmentation
fault", measured on jax 0.10.2 with ``sv.compare`` and with a plain ``jax.jit(...).compile()``
loop). :func:`interrupts_deferred` holds a Ctrl-C that comes during the block and raises it
as the block ends: the user still gets the ``KeyboardInterrupt`` they asked for, after the
compile returns, and the process stays usable. A second Ctrl-C during the same block is not
held (a compile that never returns can still be stopped).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

__all__ = ["interrupts_deferred"]

#: Blocks entered on the main thread and not yet left: only the outermost installs a handler.
_depth = [0]


@contextmanager
def interrupts_deferred() -> Iterator[None]:
    """Hold SIGINT during the block and deliver it once the block ends.

    On the main thread only (Python runs signal handlers there and nowhere else): off it, or
    where the handler cannot be set (an embedded interpreter), or inside another such block,
    it does nothing. The previous handler is put back as the block ends; a held Ctrl-C is
    then given to it, so the default one raises ``KeyboardInterrupt`` (one the user set is
    called, ``SIG_IGN`` ignores it, ``SIG_DFL`` ends the process as it would have).
    """
    if threading.current_thread() is not threading.main_thread() or _depth[0]:
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    held: list[FrameType | None] = []  # the frame of the Ctrl-C held, if one came

    def hold(signum: int, frame: FrameType | None) -> None:
        if held:  # a second Ctrl-C: the user means now, whatever is running
            held.clear()
            signal.signal(signal.SIGINT, _settable(previous))
            _deliver(previous, signum, frame)
            return
        held.append(frame)

    if previous is None:  # set from outside Python: leave it alone
        yield
        return
    try:
        signal.signal(signal.SIGINT, hold)
    except ValueError:  # not the main interpreter's main thread after all
        yield
        return
    _depth[0] += 1
    try:
        yield
    finally:
        _depth[0] -= 1
        if signal.getsignal(signal.SIGINT) is hold:
            signal.signal(signal.SIGINT, _settable(previous))
        if held:
            _deliver(previous, signal.SIGINT, held[0])


def _settable(handler: Any) -> Any:
    return handler if handler is not None else signal.SIG_DFL


def _deliver(handler: Any, signum: int, frame: FrameType | None) -> None:
    """What ``handler`` would have done with the signal."""
    if handler is signal.SIG_IGN:
        return
    if handler is signal.SIG_DFL or handler is None:
        signal.raise_signal(signum)  # the handler is back: the default action happens
        return
    handler(signum, frame)
