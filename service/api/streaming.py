"""Connection-bound streaming decode: NDJSON over one HTTP request, and a WebSocket.

`decode/stream` hands the connection to a raw ASGI app: it reads the request body line by line as
the client sends it and writes (and flushes) one output line per input line, before the body has
ended. (Litestar's `Stream` response would not: its disconnect listener consumes `receive()`; and
an `@asgi` handler cannot take a path parameter for HTTP in Litestar 2.25, routing fails with
KeyError 'POST'.)

Errors before the first output byte are problem responses; after it, the stream ends with one line
`{"error": <problem>}`, since the status line has gone out already.

Every send is bounded (`budget.send_within`): a client that stops reading is cut off at the
stream's deadline or when the worker stops, its slot given back; the connection layer aborts it
after TOKSVC_WRITE_SECONDS without progress. Large messages are decoded in a worker thread.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import time
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

import msgspec
from litestar import WebSocket, post, websocket
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
from service.api.budget import StreamBudget, run_work, send_within
from service.api.dependencies import TokenizerDep, WorkerDep
from service.api.lines import LineDecoder
from service.api.metering import Meter, meter_for
from service.api.openapi import DocumentedOperation
from service.api.wire import ErrorsMode, ProblemResponse, StreamChunkRequest
from service.api.worker import Worker, worker_of
from service.bpe import StreamDecoder, Tokenizer
from service.errors import LimitExceededError, ToksvcError, TooManyStreamsError

_chunk = msgspec.json.Decoder(StreamChunkRequest)
STOPPING = "the server is shutting down; send the rest to another replica"
log = logging.getLogger("toksvc")
_encode = msgspec.json.encode
NDJSON = "application/x-ndjson"


@post(
    "/v1/tokenizers/{ref:str}/decode/stream",
    status_code=200,
    media_type=NDJSON,
    opt={"operation": "decode_stream"},
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
    tokenizer: TokenizerDep, worker: WorkerDep, errors: FromQuery[ErrorsMode] = "replace",
    usage: FromQuery[bool] = False, model: FromQuery[str | None] = None,
) -> ASGIApp:  # fmt: skip
    """NDJSON in (`{"ids": [...]}` per line), NDJSON out (`{"text": ...}` per line, then
    `{"text": ..., "done": true}`), each line answered as soon as it arrives.

    The handler returns a raw ASGI app, which owns `receive` and `send` for the rest of the
    request: Litestar's `Stream` response would consume `receive()` in its disconnect listener.
    """
    loaded = tokenizer
    decoder = StreamDecoder(loaded.tokenizer.decode_bytes, errors)
    meter = meter_for(worker.serving(), usage, model)
    release = worker.stream_slots.acquire("ndjson")

    async def stream(scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await _pump(_Step(loaded.ref, loaded.tokenizer, decoder, worker, meter), receive, send)
        finally:
            release()

    return stream


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


class _Step:
    """One stream's decoding: budgets checked before work, large messages in a thread."""

    def __init__(self, ref: str, tokenizer: Tokenizer, decoder: StreamDecoder,
                 worker: Worker, meter: Meter) -> None:  # fmt: skip
        self.ref, self.tokenizer, self.decoder, self.worker = ref, tokenizer, decoder, worker
        self.meter = meter
        self.budget = StreamBudget(worker.settings)

    async def text(self, ids: list[int]) -> str:
        self.budget.spend(len(ids))
        self.meter.add(len(ids))
        decoder, tokenizer = self.decoder, self.tokenizer

        def work() -> str:
            self.budget.check_output(tokenizer.decoded_size(ids))
            return decoder.decode(ids)

        text = await run_work(len(ids) * 4, work)
        metrics.record(self.ref, "decode_stream", len(ids), [text])
        return text

    async def send(self, fn: Callable[[], Awaitable[object]]) -> bool:
        """Send within the stream's deadline; False (logged) if the client is not reading."""
        left = self.budget.deadline - time.monotonic()
        if await send_within(fn, self.worker.stopping, max(left, 0.0)):
            return True
        log.warning("stream on %s cut off: the client is not reading (%s)", self.ref,
                    "the worker is stopping" if self.worker.stopping.is_set()
                    else "stream deadline passed")  # fmt: skip
        return False


async def _pump(step: _Step, receive: Receive, send: Send) -> None:
    settings = step.worker.settings
    budget, decoder = step.budget, step.decoder
    start: HTTPResponseStartEvent = {
        "type": "http.response.start",
        "status": 200,
        "headers": [(b"content-type", NDJSON.encode()), (b"cache-control", b"no-store")],
    }
    await send(start)
    lines = LineDecoder(settings.max_body_bytes)
    more = True
    try:
        while more:
            message = await _next(receive, step.worker.stopping, budget.seconds_left())
            if message is None:  # the worker is stopping: flush and end the stream cleanly
                last = step.meter.last(decoder.flush(), reason=STOPPING)
                await step.send(partial(send, _body(_encode(last) + b"\n", more=False)))
                return
            if message["type"] != "http.request":
                return  # the client went away
            more = message["more_body"]
            batch = lines.decode(message["body"]) + ([] if more else lines.flush())
            out = []
            for line in batch:
                if line.strip():
                    chunk = _chunk.decode(line)
                    text = await step.text(chunk.ids)
                    if chunk.final:  # as on the WebSocket: flush and end, ignore the rest
                        out.append(_encode(step.meter.last(text + decoder.flush())) + b"\n")
                        await step.send(partial(send, _body(b"".join(out), more=False)))
                        return
                    out.append(_encode(step.meter.line(text)) + b"\n")
            if out and not await step.send(partial(send, _body(b"".join(out), more=True))):
                return
        last = step.meter.last(decoder.flush())
        await step.send(partial(send, _body(_encode(last) + b"\n", more=False)))
    except (ToksvcError, msgspec.MsgspecError, TimeoutError) as exc:
        error = budget.expired() if isinstance(exc, TimeoutError) else exc
        await step.send(partial(send, _body(_error_line(error), more=False)))


def _body(data: bytes, *, more: bool) -> HTTPResponseBodyEvent:
    return {"type": "http.response.body", "body": data, "more_body": more}


def _error_line(exc: Exception) -> bytes:
    if isinstance(exc, ToksvcError):
        doc = problems.for_error(exc)
    else:
        doc = problems.invalid_body(str(exc))
    return _encode({"error": doc}) + b"\n"


@websocket("/v1/tokenizers/{ref:str}/decode/ws", opt={"operation": "decode_stream"})
async def decode_ws(
    socket: WebSocket[Any, Any, Any], ref: FromPath[str], errors: FromQuery[ErrorsMode] = "replace",
    usage: FromQuery[bool] = False, model: FromQuery[str | None] = None,
) -> None:  # fmt: skip
    """Messages `{"ids": [...]}` get `{"text": ...}`; `{"final": true}` flushes and closes.
    Query parameter `errors`: replace (default) or strict. Idle sockets are closed."""
    worker = worker_of(socket.app)
    await socket.accept()
    try:
        loaded = worker.serving().resolve(ref)
        decoder = StreamDecoder(loaded.tokenizer.decode_bytes, errors)
        meter = meter_for(worker.serving(), usage, model)
        release = worker.stream_slots.acquire("websocket")
        try:
            await _ws_loop(socket, _Step(loaded.ref, loaded.tokenizer, decoder, worker, meter))
        finally:
            release()
    except (WebSocketDisconnect, OSError):  # gone, or cut off by the write deadline
        return
    except TooManyStreamsError as exc:
        await _ws_fail(socket, problems.for_error(exc), 1013)  # try again later
    except ToksvcError as exc:
        await _ws_fail(socket, problems.for_error(exc), 1008)


async def _ws_loop(socket: WebSocket[Any, Any, Any], step: _Step) -> None:
    settings = step.worker.settings
    budget, decoder = step.budget, step.decoder
    while True:
        try:
            seconds = min(settings.ws_idle_seconds, budget.seconds_left())
            raw = await _next(lambda: socket.receive_data("text"), step.worker.stopping, seconds)
        except TimeoutError:
            if seconds < settings.ws_idle_seconds:  # the stream's deadline came first
                return await _ws_fail(socket, problems.for_error(budget.expired()), 1008)
            doc = problems.for_error(
                LimitExceededError("idle seconds", int(settings.ws_idle_seconds))
            )
            return await _ws_fail(socket, doc, 1008)
        except LimitExceededError as exc:  # the stream's deadline
            return await _ws_fail(socket, problems.for_error(exc), 1008)
        if raw is None:  # the worker is stopping: flush and close as "going away"
            last = step.meter.last(decoder.flush(), reason=STOPPING)
            if await step.send(partial(socket.send_data, _encode(last).decode())):
                await socket.close(1001, "server shutting down")
            return
        try:
            chunk = _chunk.decode(raw)
        except msgspec.MsgspecError as exc:
            return await _ws_fail(socket, problems.invalid_body(str(exc)), 1007)
        text = await step.text(chunk.ids)
        if chunk.final:
            done = step.meter.last(text + decoder.flush())
            if await step.send(partial(socket.send_data, _encode(done).decode())):
                await socket.close(1000)
            return
        message = _encode(step.meter.line(text)).decode()
        if not await step.send(partial(socket.send_data, message)):
            return


async def _ws_fail(socket: WebSocket[Any, Any, Any], doc: ProblemResponse, code: int) -> None:
    await socket.send_data(_encode({"error": doc}).decode())
    await socket.close(code, problems.kind_of(doc)[:100])
