"""Connection-bound streaming decode: NDJSON over one HTTP request, and a WebSocket.

`decode/stream` is a raw ASGI handler on purpose: it owns `receive` and `send`, so it reads the
request body line by line as the client sends it and writes (and flushes) one output line per
input line, before the body has ended. Litestar's `Stream` response would not do that: its
disconnect listener consumes `receive()` messages.

Errors before the first output byte are problem responses; after it, the stream ends with one line
`{"error": <problem>}`, since the status line has gone out already.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import parse_qs

import anyio
import msgspec
from litestar import WebSocket, asgi, websocket
from litestar.exceptions import WebSocketDisconnect
from litestar.params import FromPath
from litestar.types import Receive, Scope, Send

from service.api import metrics, problems
from service.api.routes import registry_of
from service.api.wire import StreamChunkRequest, StreamTextResponse
from service.bpe import StreamDecoder
from service.errors import LimitExceededError, ToksvcError, TooManyStreamsError
from service.settings import Settings

_chunk = msgspec.json.Decoder(StreamChunkRequest)
_encode = msgspec.json.encode
NDJSON = "application/x-ndjson"


class StreamSlots:
    """Per-worker cap on open streams: past it, a new stream gets 503 + Retry-After at once."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.open = 0

    @asynccontextmanager
    async def take(self, kind: str) -> AsyncIterator[None]:
        if self.open >= self.limit:
            raise TooManyStreamsError(self.limit)
        self.open += 1
        metrics.ACTIVE_STREAMS.labels(kind).inc()
        try:
            yield
        finally:
            self.open -= 1
            metrics.ACTIVE_STREAMS.labels(kind).dec()


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


def _errors_mode(scope: Scope) -> str:
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
    mode = query.get("errors", ["replace"])[-1]
    if mode not in ("strict", "replace"):
        raise ToksvcError(f"errors must be strict or replace, not {mode!r}")
    return mode


async def _send_problem(send: Send, doc: dict[str, Any]) -> None:
    headers = [(b"content-type", problems.PROBLEM_JSON.encode())]
    if doc["status"] in (429, 503):
        headers.append((b"retry-after", b"1"))
    await send({"type": "http.response.start", "status": doc["status"], "headers": headers})
    await send({"type": "http.response.body", "body": _encode(doc)})


@asgi("/v1/tokenizers/{ref:str}/decode/stream", opt={"operation": "decode_stream"}, copy_scope=True)
async def decode_stream(scope: Scope, receive: Receive, send: Send) -> None:
    """NDJSON in (`{"ids": [...]}` per line), NDJSON out (`{"text": ...}` per line, then
    `{"text": ..., "done": true}`). Query parameter `errors`: replace (default) or strict."""
    state = scope["litestar_app"].state
    if scope["method"] != "POST":
        doc = problems.problem(405, "method-not-allowed", "Method not allowed", "use POST")
        return await _send_problem(send, doc)
    try:
        loaded = registry_of(state).resolve(scope["path_params"]["ref"])
        errors = _errors_mode(scope)
        async with state.stream_slots.take("ndjson"):
            await _pump(loaded.ref, StreamDecoder(loaded.tokenizer.decode_bytes, errors),
                        state.settings, receive, send)  # fmt: skip
    except ToksvcError as exc:
        await _send_problem(send, problems.for_error(exc))


async def _pump(ref: str, decoder: StreamDecoder, settings: Settings, receive: Receive,
                send: Send) -> None:  # fmt: skip
    budget = StreamBudget(settings)
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", NDJSON.encode()), (b"cache-control", b"no-store")]})
    buffer = b""
    more = True
    try:
        while more:
            with anyio.fail_after(budget.seconds_left()):
                message = await receive()
            if message["type"] == "http.disconnect":
                return
            buffer += message.get("body", b"")
            more = message.get("more_body", False)
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
                    text = decoder.decode(chunk.ids)
                    metrics.record(ref, "decode_stream", len(chunk.ids), len(text))
                    out.append(_encode(StreamTextResponse(text=text)) + b"\n")
            if out:
                await send({"type": "http.response.body", "body": b"".join(out), "more_body": True})
        last = StreamTextResponse(text=decoder.flush(), done=True)
        await send({"type": "http.response.body", "body": _encode(last) + b"\n"})
    except (ToksvcError, msgspec.MsgspecError, TimeoutError) as exc:
        await send({"type": "http.response.body", "body": _error_line(exc)})


def _error_line(exc: Exception) -> bytes:
    if isinstance(exc, ToksvcError):
        doc = problems.for_error(exc)
    elif isinstance(exc, TimeoutError):
        doc = problems.for_error(LimitExceededError("stream duration in seconds", 0))
    else:
        doc = problems.problem(400, "invalid-body", "Malformed or invalid request", str(exc))
    return _encode({"error": doc}) + b"\n"


@websocket("/v1/tokenizers/{ref:str}/decode/ws", opt={"operation": "decode_stream"})
async def decode_ws(socket: WebSocket[Any, Any, Any], ref: FromPath[str]) -> None:
    """Messages `{"ids": [...]}` get `{"text": ...}`; `{"final": true}` flushes and closes.
    Query parameter `errors`: replace (default) or strict. Idle sockets are closed."""
    state = socket.app.state
    await socket.accept()
    try:
        loaded = registry_of(state).resolve(ref)
        decoder = StreamDecoder(loaded.tokenizer.decode_bytes, _errors_mode(socket.scope))
        async with state.stream_slots.take("websocket"):
            await _ws_loop(socket, loaded.ref, decoder, state.settings)
    except WebSocketDisconnect:
        return
    except ToksvcError as exc:
        await _ws_fail(socket, problems.for_error(exc), 1008)


async def _ws_loop(socket: WebSocket[Any, Any, Any], ref: str, decoder: StreamDecoder,
                   settings: Settings) -> None:  # fmt: skip
    budget = StreamBudget(settings)
    while True:
        try:
            with anyio.fail_after(min(settings.ws_idle_seconds, budget.seconds_left())):
                raw = await socket.receive_data("text")
        except TimeoutError:
            doc = problems.for_error(LimitExceededError("idle seconds", int(settings.ws_idle_seconds)))
            return await _ws_fail(socket, doc, 1008)
        try:
            chunk = _chunk.decode(raw)
        except msgspec.MsgspecError as exc:
            doc = problems.problem(400, "invalid-body", "Malformed or invalid request", str(exc))
            return await _ws_fail(socket, doc, 1007)
        budget.spend(len(chunk.ids))
        text = decoder.decode(chunk.ids)
        metrics.record(ref, "decode_stream", len(chunk.ids), len(text))
        if chunk.final:
            done = StreamTextResponse(text=text + decoder.flush(), done=True)
            await socket.send_data(_encode(done).decode())
            return await socket.close(1000)
        await socket.send_data(_encode(StreamTextResponse(text=text)).decode())


async def _ws_fail(socket: WebSocket[Any, Any, Any], doc: dict[str, Any], code: int) -> None:
    await socket.send_data(_encode({"error": doc}).decode())
    await socket.close(code, doc["type"].rsplit("/", 1)[-1][:100])
