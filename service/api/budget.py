"""What one request or one stream may cost: output bytes, ids, seconds, and time blocked writing.

- A decode request's output is measured (the byte length of its ids, ~25 ms per million ids)
  before any of it is built: past TOKSVC_MAX_OUTPUT_BYTES it is a 413 problem. One `/decode` of a
  million 128-space ids used to build a 128 MB string and a larger JSON body (1 GB RSS).
- A stream's ids and duration are bounded as before; its sends are bounded too (`send_within`):
  a client that stops reading is cut off at the stream's deadline or when the worker stops,
  instead of holding its slot and buffers with `send()` blocked forever. The connection layer
  (`service.api.connection`) aborts any connection whose client reads nothing for
  TOKSVC_WRITE_SECONDS, which frees the buffered output.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio.to_thread
from litestar.enums import ScopeType
from litestar.types import ASGIApp, Receive, Scope, Send

from service.api import problems
from service.errors import LimitExceededError, TooManyLargeRequestsError
from service.settings import Settings

STOP_GRACE_SECONDS = 1.0
INLINE_WORK_BYTES = 16 * 1024  # smaller requests run on the event loop; larger ones in a thread
T = TypeVar("T")


def check_items(settings: Settings, n_items: int, n_ids: int = 0) -> None:
    if n_items > settings.max_batch_items:
        raise LimitExceededError("items per batch", settings.max_batch_items, n_items)
    if n_ids > settings.max_ids_per_request:
        raise LimitExceededError("ids per request", settings.max_ids_per_request, n_ids)


async def run_work(size: int, fn: Callable[[], T]) -> T:
    """Run small work inline and large work in a worker thread, so a megabyte of text never blocks
    the event loop and a 200-byte request never pays for a thread hop."""
    if size <= INLINE_WORK_BYTES:
        return fn()
    return await anyio.to_thread.run_sync(fn)


def check_output(settings: Settings, n_bytes: int, what: str = "decoded bytes per request") -> None:
    if n_bytes > settings.max_output_bytes:
        raise LimitExceededError(what, settings.max_output_bytes, n_bytes)


class StreamBudget:
    """Ids, output bytes and seconds one stream may use."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.ids_left = settings.max_stream_ids
        self.max_ids = settings.max_stream_ids
        self.deadline = time.monotonic() + settings.max_stream_seconds
        self.max_seconds = settings.max_stream_seconds

    def spend(self, n_ids: int) -> None:
        self.ids_left -= n_ids
        if self.ids_left < 0:
            raise LimitExceededError("ids per stream", self.max_ids)

    def check_output(self, n_bytes: int) -> None:
        check_output(self.settings, n_bytes, "decoded bytes per stream message")

    def seconds_left(self) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise self.expired()
        return left

    def expired(self) -> LimitExceededError:
        return LimitExceededError("stream duration in seconds", int(self.max_seconds))


async def send_within(send: Callable[[], Awaitable[object]], stopping: asyncio.Event,
                      seconds: float) -> bool:  # fmt: skip
    """Run one send; False (and the send cancelled) if `seconds` pass, or the worker stops and
    the send is still blocked a moment later: the client is not reading."""
    task = asyncio.ensure_future(send())
    if not stopping.is_set():
        stop = asyncio.ensure_future(stopping.wait())
        try:
            await asyncio.wait({task, stop}, timeout=max(seconds, 0),
                               return_when=asyncio.FIRST_COMPLETED)  # fmt: skip
        finally:
            stop.cancel()
    if not task.done():  # stopping, or the deadline passed: a reading client needs no longer
        await asyncio.wait({task}, timeout=min(max(seconds, 0), STOP_GRACE_SECONDS))
    if task.done():
        task.result()
        return True
    task.cancel()
    return False


class LargeRequestSlots:
    """ASGI middleware: at most TOKSVC_MAX_LARGE_REQUESTS requests with a body over
    TOKSVC_LARGE_REQUEST_BYTES are worked on at once per worker; one more gets 503 + Retry-After
    at once (before its body is read), so the memory of a worker is bounded by its idle size plus
    that many per-request budgets (docs/reliability.md, "Memory budget"). Streams have their own
    slots and are not counted here."""

    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app = app
        self.limit = settings.max_large_requests
        self.threshold = settings.large_request_bytes
        self.busy = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self._large(scope):
            return await self.app(scope, receive, send)
        if self.busy >= self.limit:
            busy = TooManyLargeRequestsError(self.limit, self.threshold)
            return await problems.send_raw(send, problems.for_error(busy))
        self.busy += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.busy -= 1

    def _large(self, scope: Scope) -> bool:
        if scope["type"] != ScopeType.HTTP or scope["path"].endswith("/decode/stream"):
            return False
        for name, value in scope["headers"]:
            if name == b"content-length":
                return value.isdigit() and int(value) > self.threshold
        return bool(scope.get("method") == "POST")  # a chunked body: its size is unknown
