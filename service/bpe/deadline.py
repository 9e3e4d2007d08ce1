"""A piece of CPU work's deadline and stop flag, checked by the work's own loop between steps.

Work that runs in a thread cannot be interrupted from outside: the loop that does it (truncate,
chunk, a chat's breakdown, training) calls `check()` between steps, and stops with a typed error
once the time is up (`LimitExceededError`) or someone has called `stop()` from another thread
(`WorkStoppedError`: the client went away, or the worker is stopping).

Loops deep inside an encoding (format v2's pre-tokenization in Python, ~6 us a piece, so seconds
for a few megabytes) are not handed the deadline through every call: the work runs `within` its
deadline, and such a loop calls `checkpoint()` now and then, which checks the deadline of the
work this thread is doing, if any.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Iterator

from service.errors import LimitExceededError, WorkStoppedError

CHECK_EVERY = 4096  # pieces (or segments) a loop handles between two checkpoint() calls


class Deadline:
    def __init__(self, seconds: float = math.inf) -> None:
        self.seconds = seconds
        self.at = time.monotonic() + seconds
        self._stopped = threading.Event()

    def stop(self) -> None:
        """Ask the work to stop at its next check (safe from any thread)."""
        self._stopped.set()

    @property
    def stopped(self) -> bool:
        return self._stopped.is_set()

    def check(self) -> None:
        if self._stopped.is_set():
            raise WorkStoppedError()
        if time.monotonic() > self.at:
            raise LimitExceededError("seconds of work per request", int(self.seconds))


_current = threading.local()


@contextlib.contextmanager
def within(deadline: Deadline) -> Iterator[None]:
    """Within it, `checkpoint()` in this thread checks `deadline`."""
    held = getattr(_current, "deadline", None)
    _current.deadline = deadline
    try:
        yield
    finally:
        _current.deadline = held


def checkpoint() -> None:
    """Check the deadline of the work this thread is doing (`within`); nothing outside work."""
    deadline: Deadline | None = getattr(_current, "deadline", None)
    if deadline is not None:
        deadline.check()


def seconds_left(default: float) -> float:
    """The time left to the work this thread is doing (`within`), or `default` outside work."""
    deadline: Deadline | None = getattr(_current, "deadline", None)
    return default if deadline is None else max(deadline.at - time.monotonic(), 0.001)
