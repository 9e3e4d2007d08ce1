"""The worker's state, typed: what a request may need beyond its own path and body.

One `Worker` per process, kept on the Litestar app (`app.state.worker`, the only key) and handed
to routes through typed dependencies (`service.api.dependencies`), never read from an untyped bag.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from litestar import Litestar

from service.api import metrics
from service.api.handoff import WorkerProcess
from service.errors import NotReadyError, TooManyStreamsError
from service.settings import Settings
from service.store.registry import Registry

KEY = "worker"


class StreamSlots:
    """Per-worker cap on open streams: past it, a new stream gets 503 + Retry-After at once."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.open = 0

    def acquire(self, kind: str) -> Callable[[], None]:
        """Take a slot now (or raise); the returned function gives it back, once."""
        if self.open >= self.limit:
            raise TooManyStreamsError(self.limit)
        self.open += 1
        metrics.ACTIVE_STREAMS.labels(kind).inc()
        released = False

        def release() -> None:
            nonlocal released
            if not released:
                released = True
                self.open -= 1
                metrics.ACTIVE_STREAMS.labels(kind).dec()

        return release


@dataclass(eq=False)
class Worker:
    """`registry` is None until the store has loaded; a reload replaces it in one assignment, so
    a request sees the old registry or the new one, never a mix. `stopping` is set when the worker
    gets SIGTERM or SIGINT, before uvicorn waits for connections to end. `process` is where the
    worker runs (`toksvc serve`'s state directory and supervisor, or a lone worker)."""

    settings: Settings
    registry: Registry | None = None
    stream_slots: StreamSlots = field(init=False)
    stopping: asyncio.Event = field(default_factory=asyncio.Event)
    reload_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    process: WorkerProcess = field(default_factory=WorkerProcess)

    def __post_init__(self) -> None:
        self.stream_slots = StreamSlots(self.settings.max_streams_per_worker)

    def serving(self) -> Registry:
        """The registry requests are served from; NotReadyError (503) before it has loaded."""
        registry = self.registry
        if registry is None or not len(registry):
            raise NotReadyError()
        return registry


def worker_of(app: Litestar) -> Worker:
    worker: Worker = app.state[KEY]
    return worker
