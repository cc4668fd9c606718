"""A wall-clock deadline around a blocking call the caller cannot interrupt itself.

The openai client's timeout is per read: a server that sends one byte every two seconds never
trips it. The call runs in a daemon thread; the caller waits at most `seconds` and then gives
up on it (the thread is abandoned; `abandon` lets the caller drop its connection)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class DeadlinePassed(Exception):
    """The call did not finish within its deadline."""


def within(seconds: float, call: Callable[[], T], abandon: Callable[[], None]) -> T:
    """call() if it finishes within `seconds` (its exception if it raises); else abandon() and
    DeadlinePassed. Waiting stays interruptible (Ctrl-C, SIGTERM)."""
    outcome: dict[str, object] = {}
    finished = threading.Event()

    def work() -> None:
        try:
            outcome["value"] = call()
        except BaseException as exc:  # handed to the caller's thread
            outcome["error"] = exc
        finally:
            finished.set()

    threading.Thread(target=work, name="kgen-deadline", daemon=True).start()
    if not finished.wait(seconds):
        abandon()
        raise DeadlinePassed
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["value"]  # type: ignore[return-value]
