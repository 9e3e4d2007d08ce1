"""The worker's state, typed: what a request may need beyond its own path and body.

One `Worker` per process, kept on the Litestar app (`app.state.worker`, the only key) and handed
to routes through typed dependencies (`service.api.dependencies`), never read from an untyped bag.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from litestar import Litestar

from service.api import metrics
from service.api.process.handoff import WorkerProcess
from service.errors import (
    NotReadyError,
    TooManyLargeRequestsError,
    TooManyStreamsError,
    TooManyTrainingsError,
)
from service.settings import Settings
from service.store.registry import Registry

KEY = "worker"
MAX_TRAININGS = 1  # playground trainings at once per worker (each is seconds of CPU)


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


class Slots:
    """A per-worker cap on some work at once: `acquire` takes a slot or raises `refused()`."""

    def __init__(self, limit: int, refused: Callable[[], Exception]) -> None:
        self.limit = limit
        self.busy = 0
        self._refused = refused
        self._lock = threading.Lock()  # a request's work in a thread may take one (its answer's)

    def acquire(self) -> Callable[[], None]:
        """Take a slot now (or raise); the returned function gives it back, once."""
        with self._lock:
            if self.busy >= self.limit:
                raise self._refused()
            self.busy += 1
        released = False

        def release() -> None:
            nonlocal released
            with self._lock:
                if not released:
                    released = True
                    self.busy -= 1

        return release


@dataclass(eq=False)
class Worker:
    """`registry` is None until the store has loaded; a reload replaces it in one assignment, so
    a request sees the old registry or the new one, never a mix. `stopping` is set when the worker
    gets SIGTERM or SIGINT, before uvicorn waits for connections to end. `process` is where the
    worker runs (`toksvc serve`'s state directory and supervisor, or a lone worker).

    The worker's budget lives here, one for every route and stream: `stream_slots` (open
    streams), `large_requests` (bodies over TOKSVC_LARGE_REQUEST_BYTES being worked on, taken by
    `service.api.budget.RequestBudget`) and `trainings` (playground trainings)."""

    settings: Settings
    registry: Registry | None = None
    stream_slots: StreamSlots = field(init=False)
    large_requests: Slots = field(init=False)
    trainings: Slots = field(init=False)
    stopping: asyncio.Event = field(default_factory=asyncio.Event)
    reload_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    process: WorkerProcess = field(default_factory=WorkerProcess)

    def __post_init__(self) -> None:
        s = self.settings
        self.stream_slots = StreamSlots(s.max_streams_per_worker)
        self.large_requests = Slots(
            s.max_large_requests,
            lambda: TooManyLargeRequestsError(s.max_large_requests, s.large_request_bytes),
        )
        self.trainings = Slots(MAX_TRAININGS, lambda: TooManyTrainingsError(MAX_TRAININGS))

    def serving(self) -> Registry:
        """The registry requests are served from; NotReadyError (503) before it has loaded."""
        registry = self.registry
        if registry is None or not len(registry):
            raise NotReadyError()
        return registry


def worker_of(app: Litestar) -> Worker:
    worker: Worker = app.state[KEY]
    return worker
