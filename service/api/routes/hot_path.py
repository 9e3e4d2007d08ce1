"""The hot path of encode and count: a plain success served in one typed step.

Litestar routes the request and runs the app's middlewares (request metrics, API keys, large
request slots) as for any route; then `HotPath`, a route-level middleware on these two routes
only, reads the body (within the body size limit, and within TOKSVC_BODY_SECONDS, kept by one
timer for all requests), decodes it with the decoder of the route's `StrictBody` DTO and its
checks (`bodies.decode_large`: in a thread past 256 KiB), resolves the tokenizer and answers
with what the handler answers (`encoding.encoded` / `encoding.counted`), encoded by msgspec as
Litestar would. The handler's DTO, signature model and dependency chain cost more than the rest
of the request outside the engine (docs/performance.md).

Anything but plain success before the work goes to the full path, with the body already read
replayed: a body that does not decode or breaks a rule, an unknown tokenizer, a store not loaded.
The handler then produces the answer, so every error (its status, its problem document) is the one
the documented operation gives. Two answers are made here, by `service.api.problems` as the
handler's would be: the timeout of a body that trickles in (the time is spent), and a typed error
of the work itself (a special-token refusal, an output limit), which the full path would only
meet again after doing the same work.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import msgspec
from litestar import Router
from litestar.handlers import HTTPRouteHandler
from litestar.types import ASGIApp, Receive, ReceiveMessage, Scope, Send

from service.api import problems
from service.api.bodies import decode_large, decoder_of, json_media_type
from service.api.budget import announced_size
from service.api.dependencies import ready
from service.api.routes import encoding
from service.api.wire.tokens import CountRequest, EncodeRequest, ResponseBody
from service.api.worker import worker_of
from service.errors import RequestTimeoutError, ToksvcError
from service.settings import Settings
from service.store.registry import LoadedTokenizer

Answer = Callable[[LoadedTokenizer, Any, Settings], Awaitable[ResponseBody]]
ANSWERS: dict[Any, Answer] = {EncodeRequest: encoding.encoded, CountRequest: encoding.counted}
_JSON = (b"content-type", b"application/json")
_encode = msgspec.json.Encoder().encode


@dataclass(frozen=True, slots=True)
class _Plan:
    """What serving one route takes, worked out on its first request."""

    decoder: msgspec.json.Decoder[Any]
    answer: Answer
    limit: float  # the body size limit, as Litestar reads it (None or 0: no limit)

    @classmethod
    def of(cls, handler: HTTPRouteHandler) -> _Plan | None:
        """None for a route without a hot answer (Litestar's OPTIONS handler of these paths)."""
        decoder = decoder_of(handler)
        answer = None if decoder is None else ANSWERS.get(decoder.type)
        if decoder is None or answer is None:
            return None
        return cls(decoder, answer, handler.resolve_request_max_body_size() or math.inf)


class _BodyClock:
    """The body deadline of every request reading its body, with one timer: each reading task is
    listed with the time its body must be in by, and the timer, set for the earliest, cancels
    the late ones. (asyncio.timeout schedules and cancels a timer per request: 6 us of the 31 us
    a 200-byte count took in-process, engine included.)"""

    def __init__(self) -> None:
        self.reading: dict[asyncio.Task[Any], float] = {}
        self.late: set[asyncio.Task[Any]] = set()
        self._timer: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def read(
        self, seconds: float, receive: Receive, received: list[ReceiveMessage], limit: float
    ) -> bytes | None:
        """`_read` within `seconds`: TimeoutError past them, as asyncio.timeout would raise."""
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None
        cancelling = task.cancelling()
        self.reading[task] = when = loop.time() + seconds
        if self._timer is None or self._loop is not loop or when < self._timer.when():
            self._set(loop, when)
        try:
            return await _read(receive, received, limit)
        except asyncio.CancelledError:
            if task in self.late and task.uncancel() <= cancelling:
                raise TimeoutError from None
            raise  # cancelled by someone else (too)
        finally:
            del self.reading[task]
            self.late.discard(task)

    def _set(self, loop: asyncio.AbstractEventLoop, when: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._loop, self._timer = loop, loop.call_at(when, self._expire, loop)

    def _expire(self, loop: asyncio.AbstractEventLoop) -> None:
        if loop is not self._loop:  # a timer of a loop that no longer serves
            return
        self._timer = None
        now = loop.time()
        for task, when in self.reading.items():
            if when <= now and task not in self.late:
                self.late.add(task)
                task.cancel()
        waiting = [when for task, when in self.reading.items() if task not in self.late]
        if waiting:
            self._set(loop, min(waiting))


class HotPath:
    """ASGI middleware of the encode and count routes (see the module docstring)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self._plans: dict[int, _Plan | None] = {}  # by id of the route handler
        self._clock = _BodyClock()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        plan = self._plan(scope["route_handler"])
        if plan is None or not _announced_within(scope, plan.limit) or not _json(scope):
            return await self.app(scope, receive, send)  # (Litestar refuses these unread)
        worker = worker_of(scope["litestar_app"])
        seconds = worker.settings.body_seconds
        received: list[ReceiveMessage] = []
        try:
            body = await self._clock.read(seconds, receive, received, plan.limit)
        except TimeoutError:
            return await problems.send_raw(send, problems.for_error(RequestTimeoutError(seconds)))
        if body is not None:
            try:
                data = await decode_large(plan.decoder, body, worker.settings, name_surrogate=False)
                tokenizer = await ready(worker.serving().tokenizer_for(scope["path_params"]["ref"]))
            except Exception:  # whatever it is, the full path answers it
                pass
            else:
                try:
                    answer = await plan.answer(tokenizer, data, worker.settings)
                except ToksvcError as error:  # the work is done: not again, the same problem
                    return await problems.send_raw(send, problems.for_error(error))
                except Exception:  # not ours: the full path answers it
                    pass
                else:
                    return await _send_json(send, _encode(answer))
        await self.app(scope, _replay(received, receive), send)

    def _plan(self, handler: Any) -> _Plan | None:
        key = id(handler)
        if key not in self._plans:
            self._plans[key] = _Plan.of(handler)
        return self._plans[key]


def served_fast(handlers: list[HTTPRouteHandler]) -> Router:
    """`handlers` (encode, count) with the hot path in front of each; nothing else changes."""
    return Router("/", route_handlers=handlers, middleware=[HotPath])


def _json(scope: Scope) -> bool:
    for name, value in scope["headers"]:
        if name == b"content-type":
            return json_media_type(value.decode("latin-1"))
    return True


def _announced_within(scope: Scope, limit: float) -> bool:
    try:
        size = announced_size(scope)
    except ValueError:  # the full path refuses it
        return False
    return size is None or size <= limit


async def _read(receive: Receive, received: list[ReceiveMessage], limit: float) -> bytes | None:
    """The whole body; None if the client left or the body is over `limit` (the full path then
    answers as it would). Every message received is kept in `received`, to replay."""
    chunks = []
    size = 0
    while True:
        message = await receive()
        received.append(message)
        if message["type"] != "http.request":
            return None
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replay(received: list[ReceiveMessage], receive: Receive) -> Receive:
    """A `receive` that gives the messages already received, then the client's."""
    pending = iter(received)

    async def replay() -> ReceiveMessage:
        return next(pending, None) or await receive()

    return replay


async def _send_json(send: Send, body: bytes) -> None:
    """A 200 with the headers Litestar sends for a JSON answer."""
    head = [_JSON, (b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": 200, "headers": head})
    await send({"type": "http.response.body", "body": body, "more_body": False})
