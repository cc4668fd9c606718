"""SIGTERM and SIGHUP handled like Ctrl-C while a run works: raised as Signalled (a
KeyboardInterrupt) in the main thread, so the same path closes the run: children killed through
run_limited, temp folders removed by their context managers, the run directory marked and
reported. While it closes, a further SIGTERM or SIGHUP is ignored: kgen is already stopping."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kgen.errors import Signalled

_HANDLED = (signal.SIGTERM, signal.SIGHUP)


@contextmanager
def signals_as_interrupts() -> Iterator[None]:
    """SIGTERM and SIGHUP raise Signalled (a KeyboardInterrupt) in the main thread, so a run
    that is told to stop closes as after Ctrl-C: children killed, temp folders removed, the
    run directory marked and reported."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: Any) -> None:
        raise Signalled(signum)

    kept = {sig: signal.signal(sig, stop) for sig in _HANDLED}
    try:
        yield
    finally:
        for sig, handler in kept.items():
            signal.signal(sig, handler)


@contextmanager
def signals_held() -> Iterator[None]:
    """While the run directory is being closed, a further SIGTERM/SIGHUP is ignored."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    kept = {sig: signal.signal(sig, signal.SIG_IGN) for sig in _HANDLED}
    try:
        yield
    finally:
        for sig, handler in kept.items():
            signal.signal(sig, handler)


def interrupt_reason(exc: KeyboardInterrupt) -> str:
    if isinstance(exc, Signalled):
        return f"interrupted by {signal.Signals(exc.signum).name}"
    return "interrupted (Ctrl-C)"
