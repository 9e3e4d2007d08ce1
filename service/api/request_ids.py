"""Request ids: the client's `X-Request-ID` when it is short and plain, else one made here.

The id of the request being answered is `current()`, set by `service.api.access_log.AccessLog`
for the whole of the request (handlers, exception handlers, middleware inside it); it is echoed
in the `X-Request-ID` response header, written on the access line and carried as `request_id` by
every problem document (`service.api.problems`).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable
from contextvars import ContextVar, Token

HEADER = b"x-request-id"
MAX_CHARS = 128
_SAFE = re.compile(rb"[A-Za-z0-9._:/+=@-]{1,%d}" % MAX_CHARS)  # no spaces, quotes or controls
_CURRENT: ContextVar[str | None] = ContextVar("request_id", default=None)


def of(headers: Iterable[tuple[bytes, bytes]]) -> str:
    """The request's id: its `X-Request-ID` if 1 to 128 safe characters, else a new one."""
    for name, value in headers:
        if name == HEADER:
            if _SAFE.fullmatch(value):
                return value.decode("ascii")
            break
    return uuid.uuid4().hex


def current() -> str | None:
    """The id of the request this code runs for (None outside a request)."""
    return _CURRENT.get()


def enter(request_id: str) -> Token[str | None]:
    return _CURRENT.set(request_id)


def leave(token: Token[str | None]) -> None:
    _CURRENT.reset(token)
