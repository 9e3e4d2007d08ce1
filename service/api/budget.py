"""What one request or one stream may cost: output bytes, ids, seconds, and time blocked writing.

- A decode request's output is measured (the byte length of its ids, ~25 ms per million ids)
  before any of it is built: past TOKSVC_MAX_OUTPUT_BYTES it is a 413 problem (a million
  128-space ids would make a 128 MB string and a larger JSON body).
- A stream's ids and duration are bounded, and so are its sends (`send_within`):
  a client that stops reading is cut off at the stream's deadline or when the worker stops,
  instead of holding its slot and buffers with `send()` blocked forever. The connection layer
  (`service.api.connection`) aborts any connection whose client reads nothing for
  TOKSVC_WRITE_SECONDS, which frees the buffered output.
- The worker's large-request slots are one budget for every route (`RequestBudget`), taken by a
  large body or a large answer (`check_output`), and work over `INLINE_WORK_BYTES` of estimated
  cost leaves the event loop with a deadline and a stop (`run_work`).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import Awaitable, Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TypeVar

import anyio.to_thread
from litestar.enums import ScopeType
from litestar.middleware import ASGIMiddleware
from litestar.types import ASGIApp, Receive, ReceiveMessage, Scope, Send

from service.api import problems, traits
from service.api.worker import Worker, worker_of
from service.bpe.deadline import Deadline, within
from service.errors import LimitExceededError, TooManyLargeRequestsError
from service.settings import Settings

STOP_GRACE_SECONDS = 1.0
DEFAULT_WORK_SECONDS = 30.0  # work outside a request's budget (a stream's message)
INLINE_WORK_BYTES = 16 * 1024  # smaller requests run on the event loop; larger ones in a thread
# A JSON body is decoded (and a rejected one scanned for lone surrogate escapes) on the event loop
# up to this size, in a thread beyond it: at 256 KiB a body of text decodes in about a thread
# hop's time (0.14 ms, the hop 0.12 ms), and the costliest shapes stay short inline (8,000 chat
# messages, 272 KB: 14 ms; the scan of surrogate escapes: 11 ms).
INLINE_DECODE_BYTES = 256 * 1024
T = TypeVar("T")


def check_items(settings: Settings, n_items: int, n_ids: int = 0) -> None:
    if n_items > settings.max_batch_items:
        raise LimitExceededError("items per batch", settings.max_batch_items, n_items)
    if n_ids > settings.max_ids_per_request:
        raise LimitExceededError("ids per request", settings.max_ids_per_request, n_ids)


async def run_work(
    size: int, fn: Callable[[Deadline], T], inline_bytes: int = INLINE_WORK_BYTES
) -> T:
    """Run small work inline and large work in a worker thread, so a megabyte of text never blocks
    the event loop and a 200-byte request never pays for a thread hop. `size` is the work's
    estimated cost (bytes of text, or what the route estimates from its whole body), inline up to
    `inline_bytes` (`INLINE_DECODE_BYTES` for decoding a body, cheaper per byte). `fn` gets the
    request's `Deadline` (TOKSVC_MAX_WORK_SECONDS) to check between its steps; work in a thread is
    also stopped when its client goes away or the worker stops (`WorkStoppedError`)."""
    work = _WORK.get()
    deadline = Deadline(work.worker.settings.max_work_seconds if work else DEFAULT_WORK_SECONDS)
    if size <= inline_bytes:
        return fn(deadline)

    def in_thread() -> T:  # loops inside an encoding check it too (`deadline.checkpoint`)
        with within(deadline):
            return fn(deadline)

    thread = asyncio.ensure_future(anyio.to_thread.run_sync(in_thread))
    if work is None:  # not within a request (a stream's message): its own deadline only
        return await thread
    watchers = {
        asyncio.ensure_future(work.worker.stopping.wait()),
        asyncio.ensure_future(_gone(work.receive)),
    }
    try:
        await asyncio.wait({thread, *watchers}, return_when=asyncio.FIRST_COMPLETED)
        if not thread.done():  # the client has gone or the worker stops: the work ends soon
            deadline.stop()
        return await thread
    finally:
        if not thread.done():  # cancelled ourselves
            deadline.stop()
        for watcher in watchers:
            watcher.cancel()


async def _gone(receive: Receive) -> None:
    """Returns when the client has gone (its body was read already, so `receive` has nothing else
    to give)."""
    while (await receive())["type"] != "http.disconnect":
        pass


def check_output(settings: Settings, n_bytes: int, what: str = "decoded bytes per request") -> None:
    """An answer of `n_bytes`, sized before it is built: past TOKSVC_MAX_OUTPUT_BYTES a 413; past
    TOKSVC_LARGE_REQUEST_BYTES it takes a large-request slot for the rest of its request, as a
    large body does (503 `too-many-large-requests` if none is free): small bodies with large
    answers (a 900 KB decode makes 16 MB) are bounded as large bodies are."""
    _within_limit(settings, n_bytes, what)
    work = _WORK.get()
    if work is not None and n_bytes > settings.large_request_bytes:
        work.hold_slot()


def _within_limit(settings: Settings, n_bytes: int, what: str) -> None:
    if n_bytes > settings.max_output_bytes:
        raise LimitExceededError(what, settings.max_output_bytes, n_bytes)


class StreamBudget:
    """Ids, output bytes and seconds one stream may use; `idle_seconds`, how long it may wait for
    its next message (TOKSVC_WS_IDLE_SECONDS, for NDJSON and WebSocket streams alike)."""

    def __init__(self, settings: Settings, idle_seconds: float = math.inf) -> None:
        self.settings = settings
        self.ids_left = settings.max_stream_ids
        self.max_ids = settings.max_stream_ids
        self.deadline = time.monotonic() + settings.max_stream_seconds
        self.max_seconds = settings.max_stream_seconds
        self.idle_seconds = idle_seconds

    def spend(self, n_ids: int) -> None:
        self.ids_left -= n_ids
        if self.ids_left < 0:
            raise LimitExceededError("ids per stream", self.max_ids)

    def check_output(self, n_bytes: int) -> None:
        """A message's limit (its slot is the session's, taken for the message only)."""
        _within_limit(self.settings, n_bytes, "decoded bytes per stream message")

    def seconds_left(self) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise self.expired()
        return left

    def wait_seconds(self) -> float:
        """How long the next receive may wait: the idle limit or the rest of the stream's time,
        whichever is shorter (LimitExceededError once the stream's time has run out)."""
        return min(self.idle_seconds, self.seconds_left())

    def timed_out(self, waited: float) -> LimitExceededError:
        """The error for a receive that waited `waited` seconds in vain: the stream's deadline if
        it came first, else the idle limit."""
        if waited < self.idle_seconds:
            return self.expired()
        return LimitExceededError("idle seconds", int(self.idle_seconds))

    def send_seconds(self) -> float:
        """How long a send may block: until the stream's deadline."""
        return max(self.deadline - time.monotonic(), 0.0)

    def expired(self) -> LimitExceededError:
        return LimitExceededError("stream duration in seconds", int(self.max_seconds))


async def send_within(
    send: Callable[[], Awaitable[object]], stopping: asyncio.Event, seconds: float
) -> bool:
    """Run one send; False (and the send cancelled) if `seconds` pass, or the worker stops and
    the send is still blocked a moment later: the client is not reading."""
    task = asyncio.ensure_future(send())
    if not stopping.is_set():
        stop = asyncio.ensure_future(stopping.wait())
        try:
            await asyncio.wait(
                {task, stop}, timeout=max(seconds, 0), return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            stop.cancel()
    if not task.done():  # stopping, or the deadline passed: a reading client needs no longer
        await asyncio.wait({task}, timeout=min(max(seconds, 0), STOP_GRACE_SECONDS))
    if task.done():
        task.result()
        return True
    task.cancel()
    return False


@dataclass(slots=True)
class _RequestWork:
    """What `run_work` needs to know of the request it works for: its worker (settings, stop)
    and the client's `receive`, which, once the body has been read, answers only when the client
    has gone (or the response is complete); and the large-request slot it holds, if any (taken
    for its body or for its answer, given back once the answer is sent)."""

    worker: Worker
    receive: Receive
    release: Callable[[], None] | None = None

    def hold_slot(self) -> None:
        """Take a large-request slot for this request, unless it holds one (or raise 503)."""
        if self.release is None:
            self.release = self.worker.large_requests.acquire()

    def give_back(self) -> None:
        if self.release is not None:
            self.release()
            self.release = None


_WORK: ContextVar[_RequestWork | None] = ContextVar("toksvc_request_work", default=None)


@contextlib.contextmanager
def working_for(worker: Worker, receive: Receive) -> Iterator[_RequestWork]:
    """Within it, `run_work` works for this request: its worker's deadline and stop, and its
    client's departure (`receive`) stop the work; the slot it takes is given back at its end."""
    work = _RequestWork(worker, receive)
    token = _WORK.set(work)
    try:
        yield work
    finally:
        work.give_back()
        _WORK.reset(token)


class RequestBudget(ASGIMiddleware):
    """The worker's request budget, on every route that declares `traits.LARGE_BODY`: at most
    TOKSVC_MAX_LARGE_REQUESTS requests with a body over TOKSVC_LARGE_REQUEST_BYTES are worked on at
    once per worker, whatever their routes (the slots are the `Worker`'s; this middleware keeps no
    state). One more gets 503 + Retry-After: at once, before its body is read, when its
    Content-Length says it is large (a Content-Length that is not a number is a 400); a chunked
    body (size unknown) is admitted, counted as it is read, and takes a slot when it passes the
    threshold, or is refused then (503, the rest of its body unread). So the memory of a worker
    is bounded by its idle size plus that many large requests' budgets and the small ones in
    flight (docs/reliability.md, "Memory budget")."""

    scopes = (ScopeType.HTTP,)

    async def handle(self, scope: Scope, receive: Receive, send: Send, next_app: ASGIApp) -> None:
        if not traits.has(scope.get("route_handler"), traits.LARGE_BODY):
            return await next_app(scope, receive, send)
        worker = worker_of(scope["litestar_app"])
        try:
            size = announced_size(scope)
        except ValueError as bad:
            return await problems.send_raw(send, problems.invalid_body(str(bad)))
        with working_for(worker, receive) as work:
            if size is None:  # chunked: counted as it is read
                return await next_app(scope, _CountedBody(receive, work), send)
            if size > worker.settings.large_request_bytes:
                try:
                    work.hold_slot()
                except TooManyLargeRequestsError as busy:
                    return await problems.send_raw(send, problems.for_error(busy))
            await next_app(scope, receive, send)


class _CountedBody:
    """A chunked body's `receive`: takes a large-request slot once the bytes read pass the
    threshold (TooManyLargeRequestsError from the read if none is free: the handler's problem)."""

    def __init__(self, receive: Receive, work: _RequestWork) -> None:
        self._receive = receive
        self._work = work
        self._read = 0

    async def __call__(self) -> ReceiveMessage:
        message = await self._receive()
        if message["type"] == "http.request" and self._work.release is None:
            self._read += len(message.get("body", b""))
            if self._read > self._work.worker.settings.large_request_bytes:
                self._work.hold_slot()
        return message


def announced_size(scope: Scope) -> int | None:
    """The body's Content-Length, read as the HTTP parser reads it: the value without the optional
    whitespace around it (RFC 9110, section 5.5); None for a chunked body, whose size is known
    only once read. ValueError if the value is not a decimal number."""
    for name, value in scope["headers"]:
        if name == b"content-length":
            digits = value.strip(b" \t")
            if not digits.isdigit():
                raise ValueError(f"Content-Length {value.decode('latin-1')!r} is not a number")
            return int(digits)
    return None
