"""The worker's process lifecycle: stop signals (moved here from streaming.py as it was; the
lifecycle work of issue 13 fills this module)."""

from __future__ import annotations

import asyncio
import signal
from typing import Any

from service.api.worker import Worker


def watch_stop(worker: Worker) -> None:
    """Set `worker.stopping` as soon as the worker gets SIGTERM or SIGINT (before uvicorn waits for
    connections to end), so open streams flush what they hold and end cleanly."""
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        previous = signal.getsignal(sig)

        def handler(signum: int, frame: Any, previous: Any = previous) -> None:
            loop.call_soon_threadsafe(worker.stopping.set)
            if callable(previous):
                previous(signum, frame)

        try:
            signal.signal(sig, handler)
        except ValueError:  # not the main thread (an in-process test client)
            return
