"""What a call is, independent of how it is sent, and the rules both clients send it by.

A `Call` is a method, a path, a JSON body and the parser of a successful answer; `Client` sends
it with httpx's blocking client, `AsyncClient` with its async one, by the same rules: retries
with exponential back-off (and jitter) on 503 and 429, honouring `Retry-After`, and on a
connection that could not be made (nothing was sent); a bounded number of attempts; never a
retry after a timeout (a hung server would only hang the caller longer). A problem document
becomes its typed error; any other answer is a `BadResponseError`.
"""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import httpx
import msgspec

from toksvc_client.errors import (
    BadResponseError,
    ConnectFailedError,
    ProblemError,
    TransportError,
    TransportTimeoutError,
    problem_error,
)

T = TypeVar("T")
RETRY_STATUSES = frozenset({429, 503})
_JSON = {"content-type": "application/json", "accept": "application/json"}
_encode = msgspec.json.encode


@dataclass(frozen=True, slots=True)
class Call(Generic[T]):
    """One request: `parse` turns a 2xx body into the result."""

    method: str
    path: str
    body: bytes | None
    parse: Callable[[bytes], T]


def post(path: str, body: dict[str, Any], result: type[T]) -> Call[T]:
    """A POST of a JSON body whose answer decodes as `result` (None members are left out)."""
    content = _encode({k: v for k, v in body.items() if v is not None})
    return Call("POST", path, content, _decoder(result).decode)


def get(path: str, result: type[T]) -> Call[T]:
    return Call("GET", path, None, _decoder(result).decode)


_decoders: dict[type[Any], msgspec.json.Decoder[Any]] = {}


def _decoder(result: type[T]) -> msgspec.json.Decoder[T]:
    found = _decoders.get(result)
    if found is None:
        found = _decoders[result] = msgspec.json.Decoder(result)
    return found


def segment(name: str) -> str:
    """A tokenizer or model reference as one path segment."""
    return quote(name, safe="@")


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """`attempts` in all (1: no retry); waits grow from `backoff` seconds, doubling, up to
    `max_backoff`; a `Retry-After` longer than `max_retry_after` is not waited for (the error is
    raised at once, with its `retry_after`)."""

    attempts: int = 3
    backoff: float = 0.1
    max_backoff: float = 2.0
    max_retry_after: float = 10.0

    def delay(self, attempt: int, retry_after: float | None) -> float | None:
        """Seconds to wait before attempt `attempt + 1` (attempts count from 1), or None: stop."""
        if attempt >= self.attempts:
            return None
        if retry_after is not None:
            return retry_after if retry_after <= self.max_retry_after else None
        wait = min(self.max_backoff, self.backoff * 2.0 ** (attempt - 1))
        return wait * (0.5 + random.random() / 2)  # jitter: replicas retried by many clients


def retry_after_seconds(value: str | None) -> float | None:
    """`Retry-After` as seconds: delta-seconds or an HTTP date; None if absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def headers(api_key: str | None) -> dict[str, str]:
    return {**_JSON, **({"authorization": f"Bearer {api_key}"} if api_key else {})}


def timeout_of(timeout: float | httpx.Timeout) -> httpx.Timeout:
    return timeout if isinstance(timeout, httpx.Timeout) else httpx.Timeout(timeout)


@dataclass(frozen=True, slots=True)
class Answer:
    """A whole answer: its status, the headers used here, its body."""

    status: int
    content_type: str
    retry_after: float | None
    body: bytes

    @classmethod
    def of(cls, response: httpx.Response, body: bytes) -> Answer:
        found = response.headers
        return cls(
            response.status_code,
            found.get("content-type", ""),
            retry_after_seconds(found.get("retry-after")),
            body,
        )

    @property
    def retryable(self) -> bool:
        return self.status in RETRY_STATUSES

    def bad(self, reason: str) -> BadResponseError:
        return BadResponseError(reason, self.status, self.content_type, self.body)


def result(call: Call[T], answer: Answer) -> T:
    """The call's result from a 2xx answer; else raise the answer's typed error."""
    if answer.status < 300:
        try:
            return call.parse(answer.body)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise answer.bad(f"the answer is not the expected JSON ({exc})") from None
    raise failure(answer)


def failure(answer: Answer) -> ProblemError | BadResponseError:
    """The typed error of a non-2xx answer: its problem document's, else a BadResponseError."""
    try:
        problem = msgspec.json.decode(answer.body)
    except msgspec.DecodeError:
        return answer.bad("the answer is not JSON")
    if not isinstance(problem, dict) or not isinstance(problem.get("type"), str):
        return answer.bad("the answer is not a problem document")
    return problem_error(problem, answer.retry_after)


def transport_error(exc: httpx.RequestError, url: str) -> TransportError:
    """httpx's failure as this client's: a timeout, or a server that could not be reached."""
    if isinstance(exc, httpx.TimeoutException):
        return TransportTimeoutError(f"{url}: no answer in time ({type(exc).__name__})")
    if isinstance(exc, httpx.ConnectError):
        return ConnectFailedError(f"{url}: cannot connect ({exc})")
    return TransportError(f"{url}: {type(exc).__name__}: {exc}")


def late(url: str) -> TransportTimeoutError:
    return TransportTimeoutError(f"{url}: the answer did not arrive whole in time")
