"""Per-connection limits that only the HTTP protocol layer can enforce, as uvicorn protocol classes.

- **Parser refusals**: what uvicorn's parser refuses (a malformed request line or header) gets a
  400 problem document, as every other error does, where uvicorn writes plain text.
- **Header size**: the request line and headers of one request may take at most
  TOKSVC_MAX_HEADER_BYTES; past that the client gets 431 and the connection closes (uvicorn's
  httptools parser has no such limit: a 300 MB header was read whole).
- **Header deadline**: the request line and headers must arrive within TOKSVC_HEADER_SECONDS
  (a client that trickles its headers is disconnected; uvicorn has no such timeout).
- **Lingering close**: a response that ends before its request body (an early answer: a 413,
  or a stream ended by its ids limit while the client keeps sending) closes the connection the
  way nginx's `lingering_close` does: the server shuts its side (the answer is complete), reads
  and discards what the client still sends for at most LINGER_SECONDS or LINGER_BYTES, then
  closes. (uvicorn drops such bytes, keeps the connection alive and resets its keep-alive clock
  on every read: a client that never stops sending held the connection for ever.)
- **Write deadline**: when a client stops reading, the transport's buffer fills and asyncio pauses
  writing. If it stays paused for TOKSVC_WRITE_SECONDS, the connection is aborted (not closed:
  `close()` would wait for the unread buffer to drain), which drops the buffered output and
  unblocks the handler's `send()`. A slow reader that makes progress resets the clock.

`toksvc serve` passes these classes to uvicorn (`http=`, `ws=`); uvicorn imports them by name in
each worker, so each worker reads their limits once, from what `toksvc serve` handed it
(`service.api.process.handoff`).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from typing import Any

import httptools
import msgspec
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.frames import Frame

from service.api import problems, request_ids
from service.api.process.handoff import received
from service.api.wire.info import ProblemResponse
from service.settings import Settings

log = logging.getLogger("toksvc")
LINGER_SECONDS = 5.0  # after an early answer: how long the client's remaining body is read
LINGER_BYTES = 1 << 20  # and how much of it


class _HeadTooLargeError(httptools.HttpParserError):
    pass


@functools.cache
def _settings() -> Settings:
    return received().settings


class _WriteDeadline:
    """Abort the transport when writing stays paused for `write_seconds`."""

    transport: asyncio.Transport
    client: tuple[str, int] | None
    _write_timer: asyncio.TimerHandle | None = None

    def _start_write_clock(self) -> None:
        if self._write_timer is None:
            loop = asyncio.get_running_loop()
            self._write_timer = loop.call_later(_settings().write_seconds, self._write_timeout)

    def _stop_write_clock(self) -> None:
        if self._write_timer is not None:
            self._write_timer.cancel()
            self._write_timer = None

    def _write_timeout(self) -> None:
        self._write_timer = None
        log.warning(
            "client %s read nothing for %gs: connection aborted, its buffers freed",
            self.client,
            _settings().write_seconds,
        )
        self.transport.abort()

    # asyncio's flow control: the transport's buffer is full (the client is not reading) / drained
    def pause_writing(self) -> None:
        super().pause_writing()  # type: ignore[misc]
        self._start_write_clock()

    def resume_writing(self) -> None:
        self._stop_write_clock()
        super().resume_writing()  # type: ignore[misc]

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_write_clock()
        super().connection_lost(exc)  # type: ignore[misc]


class GuardedHttpProtocol(_WriteDeadline, HttpToolsProtocol):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_bytes = 0
        self._reading_head = True
        self._refused = False
        self._too_large = False
        self._parsed_head_bytes = 0
        self._head_timer: asyncio.TimerHandle | None = None
        self._linger_timer: asyncio.TimerHandle | None = None
        self._linger_left = -1  # bytes still read and dropped after an early answer; -1: not

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        if self._linger_left >= 0:
            self._linger_left -= len(data)
            if self._linger_left < 0:
                self._end_linger()
            return
        super().data_received(data)
        if self._reading_head and not self._refused:  # still no end of the headers
            self._head_bytes += len(data)
            if self._head_bytes > _settings().max_header_bytes:
                self._refuse_head()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)  # type: ignore[arg-type]
        self._start_head_clock()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._reading_head = True
        self._head_bytes = 0
        self._parsed_head_bytes = 0
        self._start_head_clock()

    def _start_head_clock(self) -> None:
        if self._head_timer is None:
            seconds = _settings().header_seconds
            self._head_timer = self.loop.call_later(seconds, self._head_timeout)

    def _stop_head_clock(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timeout(self) -> None:
        self._head_timer = None
        if self._reading_head and not self.transport.is_closing():
            log.info(
                "client %s sent no complete request head within %gs: disconnected",
                self.client,
                _settings().header_seconds,
            )
            self.transport.close()

    def on_url(self, url: bytes) -> None:
        self._count_head(len(url))
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._count_head(len(name) + len(value) + 4)
        super().on_header(name, value)

    def _count_head(self, n: int) -> None:
        """Headers parsed within one read (`data_received` counts only unfinished heads)."""
        self._parsed_head_bytes += n
        if self._parsed_head_bytes > _settings().max_header_bytes:
            self._too_large = True
            raise _HeadTooLargeError  # the parser stops; uvicorn calls send_400_response

    def send_400_response(self, msg: str) -> None:
        """uvicorn's answer to what its parser refuses (plain text there): a problem document."""
        if self._too_large:
            self._refuse_head()
        elif not self.transport.is_closing():
            detail = f"the request is not valid HTTP/1.1 ({msg.rstrip('.')})"
            self._refuse(b"400 Bad Request", problems.for_http(400, detail))

    def on_headers_complete(self) -> None:
        self._reading_head = False
        self._stop_head_clock()
        super().on_headers_complete()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        cycle = self.cycle
        if cycle is not None and cycle.more_body and not self.transport.is_closing():
            self._linger()  # answered before the request body ended

    def _linger(self) -> None:
        self._unset_keepalive_if_required()
        self._linger_left = LINGER_BYTES
        if self.transport.can_write_eof():
            self.transport.write_eof()  # the answer is complete: the client reads EOF after it
        self._linger_timer = self.loop.call_later(LINGER_SECONDS, self._end_linger)

    def _end_linger(self) -> None:
        if self._linger_timer is not None:
            self._linger_timer.cancel()
            self._linger_timer = None
        if not self.transport.is_closing():
            log.info("client %s kept sending after its answer: connection closed", self.client)
            self.transport.close()

    def _refuse_head(self) -> None:
        self._refused = True
        if self.transport.is_closing():  # the parser refused the request already
            return
        limit = _settings().max_header_bytes
        detail = f"the request line and headers exceed the limit of {limit} bytes"
        self._refuse(
            b"431 Request Header Fields Too Large", problems.for_http(431, detail, limit=limit)
        )

    def _refuse(self, status: bytes, problem: ProblemResponse) -> None:
        """Answer a request the parser could not take with `problem` (its own request id: no
        request was read to take one from), and close."""
        rid = request_ids.of(())
        body = problems.encode(msgspec.structs.replace(problem, request_id=rid))
        self.transport.write(
            b"HTTP/1.1 %s\r\ncontent-type: %s\r\ncontent-length: %d\r\n"
            b"x-request-id: %s\r\nconnection: close\r\n\r\n%s"
            % (status, problems.PROBLEM_JSON.encode(), len(body), rid.encode(), body)
        )
        self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_head_clock()
        if self._linger_timer is not None:
            self._linger_timer.cancel()
            self._linger_timer = None
        super().connection_lost(exc)


class GuardedWebSocketProtocol(_WriteDeadline, WebSocketsSansIOProtocol):
    """A WebSocket connection with the write deadline, within the memory budget: a message is at
    most TOKSVC_MAX_STREAM_MESSAGE_BYTES (uvicorn's `ws_max_size`; more closes with 1009) in at
    most MAX_FRAGMENTS frames (a message in 2-byte frames took the loop seconds to parse; more
    closes with 1009); data is parsed in slices, so one read parses a bounded number of frames
    before the check; a ping is answered only while the client reads its answers (a pong is
    dropped while PONG_BUFFER_BYTES wait to be sent: a client that sends pings and never reads
    once had 1.2 GB of pongs buffered; RFC 6455 5.5.3 lets a pong answer the latest ping only);
    and control frames (pings, pongs) are at most MAX_CONTROL_FRAMES per CONTROL_WINDOW_SECONDS,
    more close with 1008 (two connections sending pings flat out kept a worker's loop busy)."""

    MAX_FRAGMENTS = 64
    SLICE_BYTES = 16 * 1024
    PONG_BUFFER_BYTES = 64 * 1024
    MAX_CONTROL_FRAMES = 50
    CONTROL_WINDOW_SECONDS = 1.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._fragments = 0
        self._controls = 0
        self._window_ends = 0.0

    def _control_frame(self) -> bool:
        """Count one control frame; False (and the connection failed, 1008) past the limit."""
        now = asyncio.get_running_loop().time()
        if now >= self._window_ends:
            self._controls, self._window_ends = 0, now + self.CONTROL_WINDOW_SECONDS
        self._controls += 1
        if self._controls <= self.MAX_CONTROL_FRAMES:
            return True
        if not self.transport.is_closing() and not self.close_sent:
            # the close frame, then half-closed: what the client still sends is read and
            # discarded until it closes (closing at once would reset the connection, and the
            # close frame with it)
            self.conn.fail(1008, "too many control frames")
            self.queue.put_nowait({"type": "websocket.disconnect", "code": 1008, "reason": ""})
            for data in self.conn.data_to_send():
                if data:
                    self.transport.write(data)
                elif self.transport.can_write_eof():
                    self.transport.write_eof()
            self.close_sent = True
            asyncio.get_running_loop().call_later(LINGER_SECONDS, self.transport.close)
        return False

    def data_received(self, data: bytes) -> None:
        for start in range(0, len(data), self.SLICE_BYTES):
            if self.transport.is_closing():
                return
            super().data_received(data[start : start + self.SLICE_BYTES])

    def handle_text(self, event: Frame) -> None:
        self._fragments = 1
        super().handle_text(event)

    def handle_bytes(self, event: Frame) -> None:
        self._fragments = 1
        super().handle_bytes(event)

    def handle_cont(self, event: Frame) -> None:
        self._fragments += 1
        if self._fragments > self.MAX_FRAGMENTS:
            if not self.transport.is_closing():
                self.conn.fail(1009, f"a message in more than {self.MAX_FRAGMENTS} frames")
                self.handle_parser_exception()
            return
        super().handle_cont(event)

    def handle_ping(self) -> None:
        if not self._control_frame():
            return
        pong = b"".join(self.conn.data_to_send())
        if self.transport.get_write_buffer_size() <= self.PONG_BUFFER_BYTES:
            self.transport.write(pong)

    def handle_pong(self, event: Frame) -> None:
        if self._control_frame():
            super().handle_pong(event)
