"""One decode stream, whichever form carries it (NDJSON over one HTTP request, or a WebSocket).

A `StreamSession` owns what a stream uses: the tokenizer, its UTF-8 `StreamDecoder`, the
`StreamBudget` (ids, output bytes, seconds, idle wait), the `Meter` and the worker's stream slot
and `stopping` event. It runs one sequence for both forms:

- receive the next message within the idle limit and the stream's deadline, or learn that the
  worker is stopping: then end cleanly with a `reason` and the stream's `state`, held bytes not
  flushed, from which another replica resumes exactly (the `state` of a new stream's first
  message, or `decode/step`);
- answer each chunk request `{"ids": [...]}` with `{"text": ...}` (ids spent from the budget,
  large messages decoded in a worker thread, metrics and metering counted); a `final` request or
  the end of the input flushes the held bytes into a last answer with `"done": true`;
- an error ends the stream with one line `{"error": <problem>}`, after the answers before it
  (metered: with `"usage"`, the ids decoded before the error).

Every send is bounded (`budget.send_within`): a client that stops reading is cut off at the
stream's deadline or when the worker stops, and its slot is given back. A form implements
`Transport`: how messages arrive and how lines, the end and an error are sent.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Protocol

import msgspec

from service.api import metrics, problems
from service.api.budget import STOP_GRACE_SECONDS, StreamBudget, run_work, send_within
from service.api.routes.streams.metering import meter_for
from service.api.wire.tokens import ErrorsMode, StreamChunkRequest, StreamUsage
from service.api.worker import Worker
from service.bpe.stream.options import AssemblyLimits, AssemblyOptions, assembler_for
from service.errors import StreamOptionError, ToksvcError
from service.settings import Settings
from service.store.registry import LoadedTokenizer

STOPPING = "the server is shutting down; resume on another replica with `state`"
log = logging.getLogger("toksvc")
_chunk = msgspec.json.Decoder(StreamChunkRequest)
_encode = msgspec.json.encode


@dataclass(frozen=True, slots=True)
class Received:
    """What one receive brought: chunk requests (JSON, not yet decoded), whether the input has
    ended with them (NDJSON: the body is complete), or that the client has gone."""

    messages: Sequence[bytes | str] = ()
    ended: bool = False
    gone: bool = False


GONE = Received(gone=True)


@dataclass(frozen=True, slots=True)
class Failure:
    """An error that ends a stream: the exception, the line `{"error": <problem>}` and the
    problem's kind (`limit-exceeded`)."""

    error: Exception
    line: bytes
    kind: str

    @classmethod
    def of(
        cls, exc: ToksvcError | msgspec.MsgspecError, usage: StreamUsage | None = None
    ) -> Failure:
        """A domain error's problem, or 400 `invalid-body` for a message that is not a chunk;
        with the stream's usage so far when it is metered."""
        if isinstance(exc, ToksvcError):
            doc = problems.for_error(exc)
        else:
            doc = problems.invalid_body(str(exc))
        line = {"error": doc} if usage is None else {"error": doc, "usage": usage}
        return cls(exc, _encode(line), problems.kind_of(doc))


class Transport(Protocol):
    """A stream form. Lines are JSON documents (without a newline); the session bounds each
    call but `receive` in time."""

    async def open(self) -> None:
        """Start the response, before the first receive."""

    async def receive(self) -> Received:
        """The next message(s); `GONE` when the client has left."""

    async def send(self, lines: list[bytes]) -> None:
        """Answers; more follow."""

    async def close(self, lines: list[bytes], *, stopping: bool) -> None:
        """The last answers and the end: done, or cut short because the worker is stopping."""

    async def fail(self, lines: list[bytes], failure: Failure) -> None:
        """The last answers, then the error line, and the end."""


class StreamSession:
    """One stream. Creating it may fail before anything is sent (unknown model: 404; no stream
    slot free: 503); once created, `run` always gives its slot back."""

    def __init__(
        self,
        worker: Worker,
        loaded: LoadedTokenizer,
        kind: str,
        *,
        errors: ErrorsMode,
        usage: bool,
        model: str | None,
        idle_seconds: float = math.inf,
    ) -> None:
        self.worker, self.ref, self.tokenizer = worker, loaded.ref, loaded.tokenizer
        self.errors, self.started = errors, False  # options are taken from the first message
        self.assembler = assembler_for(self.tokenizer, AssemblyOptions(), AssemblyLimits(), errors)
        self.meter = meter_for(worker.serving(), usage, model)
        self.budget = StreamBudget(worker.settings, idle_seconds)
        self._release = worker.stream_slots.acquire(kind)  # last: nothing after it can fail

    async def run(self, transport: Transport) -> None:
        try:
            await transport.open()
            await self._loop(transport)
        finally:
            self._release()

    async def _loop(self, transport: Transport) -> None:
        lines: list[bytes] = []  # answers not sent yet
        try:
            while True:
                lines = []
                received = await self._next(transport)
                if received is None:  # the worker is stopping: hand back the state and end
                    last = _encode(self.meter.last("", STOPPING, state=self.assembler.state()))
                    await self._send(partial(transport.close, [last], stopping=True), last=True)
                    return
                if received.gone:
                    return
                if await self._answer(received, lines):
                    await self._send(partial(transport.close, lines, stopping=False), last=True)
                    return
                if lines and not await self._send(partial(transport.send, lines)):
                    return
        except (ToksvcError, msgspec.MsgspecError) as exc:
            failure = Failure.of(exc, self.meter.usage())
            await self._send(partial(transport.fail, lines, failure), last=True)

    async def _next(self, transport: Transport) -> Received | None:
        """The next message, or None when the worker is stopping; LimitExceededError when the
        idle limit or the stream's deadline passes first."""
        seconds = self.budget.wait_seconds()
        stopping = self.worker.stopping
        if stopping.is_set():
            return None
        message = asyncio.ensure_future(transport.receive())
        stop = asyncio.ensure_future(stopping.wait())
        try:
            done, _ = await asyncio.wait(
                {message, stop}, timeout=seconds, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            stop.cancel()
        if message in done:
            return message.result()
        message.cancel()
        if stopping.is_set():
            return None
        raise self.budget.timed_out(seconds)

    async def _answer(self, received: Received, lines: list[bytes]) -> bool:
        """Append the answer to each message to `lines`; True if the stream is done: at a `final`
        request (what follows it is ignored) or at the end of the input."""
        for message in received.messages:
            chunk = _chunk.decode(message)
            self._options(chunk)
            text = await self._text(chunk.ids)
            if chunk.final or self.assembler.stopped is not None:
                lines.append(self._last(text))
                return True
            lines.append(_encode(self.meter.line(text)))
        if received.ended:
            lines.append(self._last(""))
        return received.ended

    def _options(self, chunk: StreamChunkRequest) -> None:
        """The first message may carry the stream's options; a later one may not."""
        sent = chunk.sent()
        if self.started and sent is not None:
            raise StreamOptionError(sent, "options go on the stream's first message only")
        if not self.started and sent is not None:
            limits = assembly_limits(self.worker.settings)
            self.assembler = assembler_for(
                self.tokenizer, chunk.assembly(), limits, self.errors, chunk.state
            )
        self.started = True

    async def _text(self, ids: list[int]) -> str:
        self.budget.spend(len(ids))
        size = self.tokenizer.decoded_size(ids)  # C speed, ~25 ms per million ids
        self.budget.check_output(size)
        # a message with a large output counts against the worker's large-request slots, as a
        # large request does (one budget for every route and stream)
        large = size > self.worker.settings.large_request_bytes
        release = self.worker.large_requests.acquire() if large else None
        decoder = self.assembler
        try:
            text = await run_work(len(ids) * 4, lambda _: decoder.decode(ids))
        finally:
            if release is not None:
                release()
        self.meter.add(len(ids))  # decoded: an error line's usage counts only these
        metrics.record(self.ref, "decode_stream", len(ids), [text])
        return text

    def _last(self, text: str) -> bytes:
        """The last answer: `text` and the held bytes, flushed, with `"done": true` (and the stop
        string when one ended the stream)."""
        text += self.assembler.flush()
        return _encode(self.meter.last(text, stop=self.assembler.stopped))

    async def _send(self, fn: Callable[[], Awaitable[object]], *, last: bool = False) -> bool:
        """Send within the stream's deadline (the last send, which may say that the deadline has
        passed, gets a grace period); False (logged) if the client is not reading."""
        stopping, seconds = self.worker.stopping, self.budget.send_seconds()
        if await send_within(fn, stopping, max(seconds, STOP_GRACE_SECONDS) if last else seconds):
            return True
        log.warning(
            "stream on %s cut off: the client is not reading (%s)",
            self.ref,
            "the worker is stopping" if stopping.is_set() else "stream deadline passed",
        )
        return False


def assembly_limits(settings: Settings) -> AssemblyLimits:
    return AssemblyLimits(
        settings.max_stop_strings, settings.max_stop_chars, settings.max_prompt_ids
    )
