"""Connection-bound streaming decode: NDJSON over one HTTP request, and a WebSocket.

`decode/stream` hands the connection to a raw ASGI app: it reads the request body line by line as
the client sends it and writes (and flushes) one output line per input line, before the body has
ended. (Litestar's `Stream` response would not: its disconnect listener consumes `receive()`; and
an `@asgi` handler cannot take a path parameter for HTTP in Litestar 2.25, routing fails with
KeyError 'POST'.)

Errors before the first output byte are problem responses; after it, the stream ends with one line
`{"error": <problem>}`, since the status line has gone out already.
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
from litestar import WebSocket, post, websocket
from litestar.datastructures import State
from litestar.exceptions import WebSocketDisconnect
from litestar.params import FromPath, FromQuery
from litestar.types import (
    ASGIApp,
    HTTPResponseBodyEvent,
    HTTPResponseStartEvent,
    Receive,
    Scope,
    Send,
)

from service.api import metrics, problems
from service.api.metering import Meter, meter_for
from service.api.routes import resolve
from service.api.wire import ErrorsMode, StreamChunkRequest
from service.bpe import StreamDecoder
from service.errors import LimitExceededError, ToksvcError, TooManyStreamsError
from service.settings import Settings

_chunk = msgspec.json.Decoder(StreamChunkRequest)
STOPPING = "the server is shutting down; send the rest to another replica"
_encode = msgspec.json.encode
NDJSON = "application/x-ndjson"


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


class StreamBudget:
    """Ids and seconds one stream may use."""

    def __init__(self, settings: Settings) -> None:
        self.ids_left = settings.max_stream_ids
        self.max_ids = settings.max_stream_ids
        self.deadline = time.monotonic() + settings.max_stream_seconds
        self.max_seconds = settings.max_stream_seconds

    def spend(self, n_ids: int) -> None:
        self.ids_left -= n_ids
        if self.ids_left < 0:
            raise LimitExceededError("ids per stream", self.max_ids)

    def seconds_left(self) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise LimitExceededError("stream duration in seconds", int(self.max_seconds))
        return left


@post(
    "/v1/tokenizers/{ref:str}/decode/stream",
    status_code=200,
    media_type=NDJSON,
    opt={"operation": "decode_stream"},
    responses=problems.documented(400, 404, 503),
)
async def decode_stream(
    state: State, ref: FromPath[str], errors: FromQuery[ErrorsMode] = "replace",
    usage: FromQuery[bool] = False, model: FromQuery[str | None] = None,
) -> ASGIApp:  # fmt: skip
    """NDJSON in (`{"ids": [...]}` per line), NDJSON out (`{"text": ...}` per line, then
    `{"text": ..., "done": true}`), each line answered as soon as it arrives.

    The handler returns a raw ASGI app, which owns `receive` and `send` for the rest of the
    request: Litestar's `Stream` response would consume `receive()` in its disconnect listener.
    """
    loaded = resolve(state, ref)
    decoder = StreamDecoder(loaded.tokenizer.decode_bytes, errors)
    meter = meter_for(state, usage, model)
    release = state.stream_slots.acquire("ndjson")

    async def stream(scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await _pump(loaded.ref, decoder, state, receive, send, meter=meter)
        finally:
            release()

    return stream


def watch_stop(state: State) -> None:
    """Set `state.stopping` as soon as the worker gets SIGTERM or SIGINT (before uvicorn waits for
    connections to end), so open streams flush what they hold and end cleanly."""
    state.stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        previous = signal.getsignal(sig)

        def handler(signum: int, frame: Any, previous: Any = previous) -> None:
            loop.call_soon_threadsafe(state.stopping.set)
            if callable(previous):
                previous(signum, frame)

        try:
            signal.signal(sig, handler)
        except ValueError:  # not the main thread (an in-process test client)
            return


async def _next(
    receive: Callable[[], Awaitable[Any]], stopping: asyncio.Event, seconds: float
) -> Any | None:
    """The next message, or None when the worker is stopping; TimeoutError after `seconds`."""
    if stopping.is_set():
        return None
    message = asyncio.ensure_future(receive())
    stop = asyncio.ensure_future(stopping.wait())
    try:
        done, _ = await asyncio.wait({message, stop}, timeout=seconds,
                                     return_when=asyncio.FIRST_COMPLETED)  # fmt: skip
    finally:
        stop.cancel()
    if message in done:
        return message.result()
    message.cancel()
    if stopping.is_set():
        return None
    raise TimeoutError


async def _pump(
    ref: str, decoder: StreamDecoder, state: State, receive: Receive, send: Send, *, meter: Meter
) -> None:
    settings: Settings = state.settings
    budget = StreamBudget(settings)
    start: HTTPResponseStartEvent = {
        "type": "http.response.start",
        "status": 200,
        "headers": [(b"content-type", NDJSON.encode()), (b"cache-control", b"no-store")],
    }
    await send(start)
    buffer = b""
    more = True
    try:
        while more:
            message = await _next(receive, state.stopping, budget.seconds_left())
            if message is None:  # the worker is stopping: flush and end the stream cleanly
                last = meter.last(decoder.flush(), reason=STOPPING)
                return await send(_body(_encode(last) + b"\n", more=False))
            if message["type"] != "http.request":
                return  # the client went away
            buffer += message["body"]
            more = message["more_body"]
            *lines, buffer = buffer.split(b"\n")
            if not more:
                lines.append(buffer)
            elif len(buffer) > settings.max_body_bytes:
                raise LimitExceededError("bytes per NDJSON line", settings.max_body_bytes)
            out = []
            for line in lines:
                if line.strip():
                    chunk = _chunk.decode(line)
                    budget.spend(len(chunk.ids))
                    meter.add(len(chunk.ids))
                    text = decoder.decode(chunk.ids)
                    metrics.record(ref, "decode_stream", len(chunk.ids), [text])
                    out.append(_encode(meter.line(text)) + b"\n")
            if out:
                await send(_body(b"".join(out), more=True))
        last = meter.last(decoder.flush())
        await send(_body(_encode(last) + b"\n", more=False))
    except (ToksvcError, msgspec.MsgspecError, TimeoutError) as exc:
        await send(_body(_error_line(exc), more=False))


def _body(data: bytes, *, more: bool) -> HTTPResponseBodyEvent:
    return {"type": "http.response.body", "body": data, "more_body": more}


def _error_line(exc: Exception) -> bytes:
    if isinstance(exc, ToksvcError):
        doc = problems.for_error(exc)
    elif isinstance(exc, TimeoutError):
        doc = problems.for_error(LimitExceededError("stream duration in seconds", 0))
    else:
        doc = problems.problem(400, "invalid-body", "Malformed or invalid request", str(exc))
    return _encode({"error": doc}) + b"\n"


@websocket("/v1/tokenizers/{ref:str}/decode/ws", opt={"operation": "decode_stream"})
async def decode_ws(
    socket: WebSocket[Any, Any, Any], ref: FromPath[str], errors: FromQuery[ErrorsMode] = "replace",
    usage: FromQuery[bool] = False, model: FromQuery[str | None] = None,
) -> None:  # fmt: skip
    """Messages `{"ids": [...]}` get `{"text": ...}`; `{"final": true}` flushes and closes.
    Query parameter `errors`: replace (default) or strict. Idle sockets are closed."""
    state = socket.app.state
    await socket.accept()
    try:
        loaded = resolve(state, ref)
        decoder = StreamDecoder(loaded.tokenizer.decode_bytes, errors)
        meter = meter_for(state, usage, model)
        release = state.stream_slots.acquire("websocket")
        try:
            await _ws_loop(socket, loaded.ref, decoder, state, meter)
        finally:
            release()
    except WebSocketDisconnect:
        return
    except TooManyStreamsError as exc:
        await _ws_fail(socket, problems.for_error(exc), 1013)  # try again later
    except ToksvcError as exc:
        await _ws_fail(socket, problems.for_error(exc), 1008)


async def _ws_loop(socket: WebSocket[Any, Any, Any], ref: str, decoder: StreamDecoder,
                   state: State, meter: Meter) -> None:  # fmt: skip
    settings: Settings = state.settings
    budget = StreamBudget(settings)
    while True:
        try:
            seconds = min(settings.ws_idle_seconds, budget.seconds_left())
            raw = await _next(lambda: socket.receive_data("text"), state.stopping, seconds)
        except TimeoutError:
            doc = problems.for_error(
                LimitExceededError("idle seconds", int(settings.ws_idle_seconds))
            )
            return await _ws_fail(socket, doc, 1008)
        if raw is None:  # the worker is stopping: flush and close as "going away"
            last = meter.last(decoder.flush(), reason=STOPPING)
            await socket.send_data(_encode(last).decode())
            return await socket.close(1001, "server shutting down")
        try:
            chunk = _chunk.decode(raw)
        except msgspec.MsgspecError as exc:
            doc = problems.problem(400, "invalid-body", "Malformed or invalid request", str(exc))
            return await _ws_fail(socket, doc, 1007)
        budget.spend(len(chunk.ids))
        meter.add(len(chunk.ids))
        text = decoder.decode(chunk.ids)
        metrics.record(ref, "decode_stream", len(chunk.ids), [text])
        if chunk.final:
            done = meter.last(text + decoder.flush())
            await socket.send_data(_encode(done).decode())
            return await socket.close(1000)
        await socket.send_data(_encode(meter.line(text)).decode())


async def _ws_fail(socket: WebSocket[Any, Any, Any], doc: dict[str, Any], code: int) -> None:
    await socket.send_data(_encode({"error": doc}).decode())
    await socket.close(code, doc["type"].rsplit("/", 1)[-1][:100])
