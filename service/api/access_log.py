"""The access log: one line per HTTP request on stdout, in text or JSON (TOKSVC_LOG_FORMAT).

`AccessLog` wraps the whole application (`Litestar.asgi_handler`), so every answer is logged,
refusals by middleware and unknown routes included. It gives each request its id
(`service.api.request_ids`), echoes it in `X-Request-ID`, and writes, once the response has
ended: the time, level, method, route template (never the raw path: a path carries names and
the template bounds the cardinality), status, duration, bytes of the body received and sent, the
tokenizer or model the path names, the worker's pid and the request id. Bodies and query strings
are never logged. TOKSVC_ACCESS_LOG=0 turns the lines off (the ids stay);
TOKSVC_LOG_LEVEL=warning or above hides them too (they are `info`).
"""

from __future__ import annotations

import logging
import os
import sys
import time
from datetime import UTC, datetime
from typing import Any

import msgspec
from litestar.enums import ScopeType
from litestar.types import ASGIApp, Message, Receive, ReceiveMessage, Scope, Send

from service.api import request_ids
from service.settings import Settings

LOGGER = "toksvc.access"
log = logging.getLogger(LOGGER)
UNMATCHED = "-"  # the route of a request no route matched (its path is not logged)
NAME_CHARS = 100  # a tokenizer or model name from the path, cut


class AccessLog:
    """ASGI wrapper: the request id and the access line of each HTTP request."""

    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app = app
        self.enabled = settings.access_log

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP:
            if scope["type"] != ScopeType.WEBSOCKET:
                return await self.app(scope, receive, send)
            token = request_ids.enter(request_ids.of(scope["headers"]))  # for its problems
            try:
                return await self.app(scope, receive, send)
            finally:
                request_ids.leave(token)
        request_id = request_ids.of(scope["headers"])
        echo = (request_ids.HEADER, request_id.encode("ascii"))
        start = time.perf_counter()
        status, received, sent = 500, 0, 0

        async def counted(message: Message) -> None:
            nonlocal status, sent
            if message["type"] == "http.response.start":
                status = message["status"]
                message = {**message, "headers": [*message.get("headers", ()), echo]}
            elif message["type"] == "http.response.body":
                sent += len(message.get("body", b""))
            await send(message)

        async def counting() -> ReceiveMessage:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
            return message

        token = request_ids.enter(request_id)
        try:
            await self.app(scope, counting, counted)
        finally:
            request_ids.leave(token)
            if self.enabled and log.isEnabledFor(logging.INFO):
                seconds = time.perf_counter() - start
                line = _line(scope, status, seconds, received, sent)
                log.info("", extra={"access": {**line, "request_id": request_id}})


def _line(scope: Scope, status: int, seconds: float, received: int, sent: int) -> dict[str, Any]:
    params = scope.get("path_params") or {}
    line: dict[str, Any] = {
        "method": scope.get("method", ""),
        "route": scope.get("path_template") or UNMATCHED,
        "status": status,
        "duration_ms": round(seconds * 1000, 3),
        "bytes_in": received,
        "bytes_out": sent,
    }
    if "ref" in params:
        line["tokenizer"] = str(params["ref"])[:NAME_CHARS]
    elif "model" in params:
        line["model"] = str(params["model"])[:NAME_CHARS]
    line["pid"] = os.getpid()
    return line


class JsonLines(logging.Formatter):
    """One JSON object a line: `time` (UTC, ISO 8601, milliseconds), `level`, then the fields."""

    def format(self, record: logging.LogRecord) -> str:
        head = {"time": _time(record), "level": record.levelname.lower()}
        fields = getattr(record, "access", None) or {"message": record.getMessage()}
        return msgspec.json.encode({**head, **fields}).decode()


class TextLines(logging.Formatter):
    """`time level METHOD route status duration in= out= tokenizer= pid= id=`."""

    def format(self, record: logging.LogRecord) -> str:
        a = getattr(record, "access", None)
        if a is None:
            return f"{_time(record)} {record.levelname} {record.getMessage()}"
        named = a.get("tokenizer") or a.get("model")
        what = f" {'tokenizer' if 'tokenizer' in a else 'model'}={named}" if named else ""
        return (
            f"{_time(record)} {record.levelname} {a['method']} {a['route']} {a['status']} "
            f"{a['duration_ms']:.3f}ms in={a['bytes_in']} out={a['bytes_out']}{what} "
            f"pid={a['pid']} id={a['request_id']}"
        )


def _time(record: logging.LogRecord) -> str:
    at = datetime.fromtimestamp(record.created, UTC)
    return at.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class _Stdout(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever `sys.stdout` is when a line is written (a test may replace it)."""

    def emit(self, record: logging.LogRecord) -> None:
        self.stream = sys.stdout
        super().emit(record)


def configure(settings: Settings) -> None:
    """The access logger on stdout in the chosen format, and the service's log level; done again
    by each app built in one process, never adding a second handler."""
    level = getattr(logging, settings.log_level.upper())
    logging.getLogger("toksvc").setLevel(level)
    log.setLevel(level)
    log.propagate = False
    handler = _Stdout(sys.stdout)
    handler.setFormatter(JsonLines() if settings.log_format == "json" else TextLines())
    for old in log.handlers[:]:
        log.removeHandler(old)
    log.addHandler(handler)
