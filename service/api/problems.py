"""RFC 9457 problem details: the one table from error class to HTTP status and problem `type`."""

from __future__ import annotations

import logging
from typing import Any

import msgspec
from litestar import Request, Response
from litestar.exceptions import HTTPException, ValidationException
from litestar.openapi.datastructures import ResponseSpec
from litestar.types import ExceptionHandlersMap

from service import errors as e
from service.api.wire import ProblemResponse

PROBLEM_JSON = "application/problem+json"
TYPE_BASE = "/problems/"  # a relative URI reference; every type is listed in docs/api.md

# error class -> (status, type, title); the first matching class (in MRO order) wins
TABLE: dict[type[Exception], tuple[int, str, str]] = {
    e.DisallowedSpecialError: (422, "disallowed-special-token", "Disallowed special token"),
    e.UnknownSpecialError: (422, "unknown-special-token", "Unknown special token"),
    e.UnknownIdError: (422, "unknown-token-id", "Unknown token id"),
    e.UndecodableBytesError: (422, "undecodable-bytes", "Bytes are not valid UTF-8"),
    e.SurrogateError: (422, "lone-surrogate", "Lone surrogate in text"),
    e.StreamStateError: (422, "invalid-stream-state", "Invalid stream state"),
    e.ChatInputError: (422, "invalid-message", "Invalid message"),
    e.TemplateError: (422, "template-error", "The chat template raised"),
    e.PriceMissingError: (422, "price-missing", "Price missing"),
    e.ContextOverflowError: (422, "context-overflow", "Context window exceeded"),
    e.InputError: (422, "invalid-input", "Invalid input"),
    e.ModelNotFoundError: (404, "unknown-model", "Unknown model"),
    e.TokenizerNotFoundError: (404, "unknown-tokenizer", "Unknown tokenizer"),
    e.LimitExceededError: (413, "limit-exceeded", "Limit exceeded"),
    e.NotReadyError: (503, "not-ready", "Not ready"),
    e.TooManyStreamsError: (503, "too-many-streams", "Too many concurrent streams"),
    e.RequestTimeoutError: (408, "request-timeout", "Request timeout"),
    e.ToksvcError: (400, "bad-request", "Bad request"),
}
HTTP_TYPES = {
    400: ("invalid-body", "Malformed or invalid request"),
    401: ("unauthorized", "Unauthorized"),
    404: ("not-found", "Not found"),
    405: ("method-not-allowed", "Method not allowed"),
    413: ("limit-exceeded", "Limit exceeded"),
    415: ("unsupported-media-type", "Unsupported media type"),
}
log = logging.getLogger("toksvc")


def problem(status: int, kind: str, title: str, detail: str, **extra: Any) -> dict[str, Any]:
    return {"type": TYPE_BASE + kind, "title": title, "status": status, "detail": detail, **extra}


def for_error(exc: e.ToksvcError) -> dict[str, Any]:
    """The problem document of a domain error, with the facts it carries as extensions."""
    status, kind, title = next(TABLE[c] for c in type(exc).__mro__ if c in TABLE)
    extra: dict[str, Any] = {}
    if isinstance(exc, e.DisallowedSpecialError):
        extra = {"token": exc.token, "position": exc.position}
    elif isinstance(exc, e.UnknownIdError):
        extra = {"ids": exc.ids[:100]}
    elif isinstance(exc, e.UndecodableBytesError):
        extra = {"offset": exc.offset, "bytes": exc.data.hex()}
    elif isinstance(exc, e.SurrogateError):
        extra = {"position": exc.position}
    elif isinstance(exc, e.UnknownSpecialError):
        extra = {"tokens": exc.tokens}
    elif isinstance(exc, e.ChatInputError):
        extra = {"index": exc.index, "field": exc.field}
    elif isinstance(exc, e.ContextOverflowError):
        extra = {"needed": exc.needed, "context_window": exc.window}
    elif isinstance(exc, e.PriceMissingError):
        extra = {"missing": exc.missing}
    elif isinstance(exc, e.TokenizerNotFoundError | e.ModelNotFoundError):
        extra = {"available": exc.available}
    elif isinstance(exc, e.LimitExceededError):
        extra = {"limit": exc.limit}
    return problem(status, kind, title, str(exc), **extra)


def for_http(exc: HTTPException) -> dict[str, Any]:
    kind, title = HTTP_TYPES.get(exc.status_code, ("http-error", "HTTP error"))
    extra: dict[str, Any] = {}
    if isinstance(exc, ValidationException) and exc.extra:
        extra["errors"] = exc.extra
    return problem(exc.status_code, kind, title, str(exc.detail), **extra)


def response(doc: dict[str, Any], headers: dict[str, str] | None = None) -> Response[bytes]:
    return Response(
        msgspec.json.encode(doc),
        status_code=doc["status"],
        media_type=PROBLEM_JSON,
        headers=headers,
    )


def retry_headers(status: int) -> dict[str, str] | None:
    return {"Retry-After": "1"} if status in (429, 503) else None


def domain_handler(_: Request[Any, Any, Any], exc: e.ToksvcError) -> Response[bytes]:
    doc = for_error(exc)
    return response(doc, retry_headers(doc["status"]))


def http_handler(_: Request[Any, Any, Any], exc: HTTPException) -> Response[bytes]:
    return response(for_http(exc), exc.headers)


def internal_handler(request: Request[Any, Any, Any], exc: Exception) -> Response[bytes]:
    log.exception("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    return response(
        problem(500, "internal-error", "Internal error", "an unexpected error; see logs")
    )


EXCEPTION_HANDLERS: ExceptionHandlersMap = {
    e.ToksvcError: domain_handler,
    HTTPException: http_handler,
    Exception: internal_handler,
}


def documented(*statuses: int) -> dict[int, ResponseSpec]:
    """OpenAPI entries for the problem responses a route can give."""
    return {
        status: ResponseSpec(
            data_container=ProblemResponse,
            description=f"problem details ({status})",
            media_type=PROBLEM_JSON,
            generate_examples=False,
        )
        for status in statuses
    }
