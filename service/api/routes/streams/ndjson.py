"""Streaming decode over NDJSON: one chunked HTTP request in, one line out per line in.

`decode/stream` hands the connection to a raw ASGI app: it reads the request body line by line as
the client sends it and writes (and flushes) one output line per input line, before the body has
ended. (Litestar's `Stream` response would not: its disconnect listener consumes `receive()`; and
an `@asgi` handler cannot take a path parameter for HTTP in Litestar 2.25, routing fails with
KeyError 'POST'.)

Errors before the first output byte are problem responses (the session is created, and its
stream slot taken, before the handler returns); after it, the stream ends with one line
`{"error": <problem>}`, since the status line has gone out already; a body with no line for
TOKSVC_WS_IDLE_SECONDS (as a WebSocket) ends with a `limit-exceeded` line. The sequence itself
is the `StreamSession`'s; this module only frames lines. A client that keeps sending after its
stream has ended is disconnected by the protocol layer's lingering close (`service.api.connection`).
"""

from __future__ import annotations

from litestar import post
from litestar.params import FromQuery
from litestar.types import (
    ASGIApp,
    HTTPResponseBodyEvent,
    HTTPResponseStartEvent,
    Receive,
    Scope,
    Send,
)

from service.api import problems
from service.api.dependencies import TokenizerDep, WorkerDep
from service.api.openapi import DocumentedOperation
from service.api.routes.streams.session import GONE, Failure, Received, StreamSession
from service.api.traits import STREAMING
from service.api.wire.lines import LineDecoder
from service.api.wire.tokens import ErrorsMode

NDJSON = "application/x-ndjson"
_START: HTTPResponseStartEvent = {
    "type": "http.response.start",
    "status": 200,
    "headers": [(b"content-type", NDJSON.encode()), (b"cache-control", b"no-store")],
}


@post(
    "/v1/tokenizers/{ref:str}/decode/stream",
    status_code=200,
    media_type=NDJSON,
    opt={"operation": "decode_stream", STREAMING: True},
    responses=problems.documented(400, 404, 413, 422, 503),
    tags=["streaming"],
    summary="Streaming decode over NDJSON",
    description="Send the body with chunked transfer encoding, one JSON line per batch of ids "
    '(`{"ids": [9468]}`); each line is answered with a line `{"text": ...}` as soon as it '
    "arrives, holding back the bytes of an unfinished character. The end of the body flushes "
    'them into a last line with `"done": true`. An error before the first output line is a '
    'problem response; after it, the stream ends with a line `{"error": <problem>}`. '
    "(The WebSocket form, `/v1/tokenizers/{ref}/decode/ws`, is described in docs/api.md.)",
    response_description="NDJSON lines of decoded text",
    operation_class=DocumentedOperation,
)
async def decode_stream(
    tokenizer: TokenizerDep,
    worker: WorkerDep,
    errors: FromQuery[ErrorsMode] = "replace",
    usage: FromQuery[bool] = False,
    model: FromQuery[str | None] = None,
) -> ASGIApp:
    """NDJSON in (`{"ids": [...]}` per line), NDJSON out (`{"text": ...}` per line, then
    `{"text": ..., "done": true}`), each line answered as soon as it arrives.

    The handler returns a raw ASGI app, which owns `receive` and `send` for the rest of the
    request: Litestar's `Stream` response would consume `receive()` in its disconnect listener.
    """
    session = StreamSession(
        worker,
        tokenizer,
        "ndjson",
        errors=errors,
        usage=usage,
        model=model,
        idle_seconds=worker.settings.ws_idle_seconds,
    )

    async def stream(scope: Scope, receive: Receive, send: Send) -> None:
        max_line = worker.settings.stream_message_bytes()
        await session.run(NdjsonTransport(receive, send, max_line))

    return stream


class NdjsonTransport:
    """The request body, split into lines (blank ones skipped); answers as chunks of the response
    body, one newline-terminated line each."""

    def __init__(self, receive: Receive, send: Send, max_line_bytes: int) -> None:
        self._receive, self._send = receive, send
        self.lines = LineDecoder(max_line_bytes)

    async def open(self) -> None:
        await self._send(_START)

    async def receive(self) -> Received:
        message = await self._receive()
        if message["type"] != "http.request":
            return GONE  # the client went away
        more = message.get("more_body", False)
        lines = self.lines.decode(message.get("body", b"")) + ([] if more else self.lines.flush())
        return Received([line for line in lines if line.strip()], ended=not more)

    async def send(self, lines: list[bytes]) -> None:
        await self._send(_body(lines, more=True))

    async def close(self, lines: list[bytes], *, stopping: bool) -> None:
        await self._send(_body(lines, more=False))

    async def fail(self, lines: list[bytes], failure: Failure) -> None:
        await self._send(_body([*lines, failure.line], more=False))


def _body(lines: list[bytes], *, more: bool) -> HTTPResponseBodyEvent:
    data = b"".join(line + b"\n" for line in lines)
    return {"type": "http.response.body", "body": data, "more_body": more}
