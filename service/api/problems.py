"""RFC 9457 problem details: the one table from error class to HTTP status and problem `type`."""

from __future__ import annotations

import logging
import re
from typing import Any

import msgspec
from litestar import Request, Response
from litestar.exceptions import HTTPException, ValidationException
from litestar.openapi.datastructures import ResponseSpec
from litestar.openapi.spec import Example
from litestar.types import ExceptionHandlersMap, Send

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
    e.EngineFailureError: (422, "engine-failure", "The engine cannot encode this text"),
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
    e.ReloadRefusedError: (409, "reload-refused", "Reload refused"),
    e.ReloadUnavailableError: (503, "reload-unavailable", "Reload unavailable"),
    e.ToksvcError: (400, "bad-request", "Bad request"),
}
HTTP_TYPES = {
    400: ("invalid-body", "Malformed or invalid request"),
    401: ("unauthorized", "Unauthorized"),
    404: ("not-found", "Not found"),
    405: ("method-not-allowed", "Method not allowed"),
    413: ("limit-exceeded", "Limit exceeded"),
    415: ("unsupported-media-type", "Unsupported media type"),
    431: ("limit-exceeded", "Request header fields too large"),
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
    elif isinstance(exc, e.ReloadRefusedError):
        extra = {"failures": exc.failures[:100]}
    return problem(status, kind, title, str(exc), **extra)


def for_http(exc: HTTPException) -> dict[str, Any]:
    kind, title = HTTP_TYPES.get(exc.status_code, ("http-error", "HTTP error"))
    extra: dict[str, Any] = {}
    if isinstance(exc, ValidationException):
        extra["errors"] = validation_errors(exc)
    return problem(exc.status_code, kind, title, str(exc.detail), **extra)


_AT_PATH = re.compile(r" - at `(\$[^`]*)`$")  # how msgspec names the place of a decoding error


def validation_errors(exc: ValidationException) -> list[dict[str, Any]]:
    """`errors` of an invalid request: Litestar's entries for parameters (`message`, `key`,
    `source`), or one entry for the body, `key` its JSON path (`$` for the whole body)."""
    if isinstance(exc.extra, list) and exc.extra:
        return [e if isinstance(e, dict) else {"message": str(e)} for e in exc.extra]
    if isinstance(exc.extra, dict) and exc.extra:
        return [exc.extra]
    message = str(exc.detail)
    at = _AT_PATH.search(message)
    key = at.group(1) if at else "$"
    return [{"message": message[: at.start()] if at else message, "key": key, "source": "body"}]


def response(doc: dict[str, Any], headers: dict[str, str] | None = None) -> Response[bytes]:
    return Response(
        msgspec.json.encode(doc),
        status_code=doc["status"],
        media_type=PROBLEM_JSON,
        headers=headers,
    )


async def send_raw(send: Send, doc: dict[str, Any], headers: dict[str, str] | None = None) -> None:
    """Answer with a problem document from plain ASGI middleware (outside Litestar's handlers)."""
    body = msgspec.json.encode(doc)
    head = [(b"content-type", PROBLEM_JSON.encode()), (b"content-length", b"%d" % len(body))]
    head += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": doc["status"], "headers": head})
    await send({"type": "http.response.body", "body": body, "more_body": False})


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


# one example problem per documented status, shown on the docs page
EXAMPLES: dict[int, tuple[str, dict[str, Any]]] = {
    400: ("a body that is not what the operation takes", problem(
        400, "invalid-body", HTTP_TYPES[400][1], "give exactly one of `text` or `texts`",
        errors=[{"message": "give exactly one of `text` or `texts`", "key": "$", "source": "body"}],
    )),
    401: ("no or a wrong bearer token", problem(
        401, "unauthorized", "Unauthorized", "a valid bearer token is required")),
    404: ("no such tokenizer", problem(
        404, "unknown-tokenizer", "Unknown tokenizer",
        "no tokenizer 'cl100k' is loaded; available: cl100k_base@1, gpt2@1, o200k_base@1",
        available=["cl100k_base@1", "gpt2@1", "o200k_base@1"])),
    408: ("a body that arrives too slowly", problem(
        408, "request-timeout", "Request timeout", "the request body did not arrive within 30 s")),
    413: ("too many items in one request", problem(
        413, "limit-exceeded", "Limit exceeded",
        "items per batch exceeds the limit of 1024 (got 2000)", limit=1024)),
    422: ("a special-token literal that is not allowed", problem(
        422, "disallowed-special-token", "Disallowed special token",
        "text contains the special token '<|endoftext|>' at character 0; pass it in "
        "allowed_special to encode it as a special id, or disallowed_special=[] to encode it as "
        "ordinary text",
        token="<|endoftext|>", position=0)),
    503: ("the store is still loading", problem(
        503, "not-ready", "Not ready", "the tokenizer registry is not loaded yet; retry shortly")),
}  # fmt: skip


def types_of(status: int) -> list[str]:
    """Every problem `type` (without the base) this service answers with `status`."""
    kinds = [kind for st, kind, _ in TABLE.values() if st == status]
    if status in HTTP_TYPES:
        kinds.append(HTTP_TYPES[status][0])
    return list(dict.fromkeys(kinds))


def documented(*statuses: int) -> dict[int, ResponseSpec]:
    """OpenAPI entries for the problem responses a route can give (all `ProblemResponse`; see
    docs/api.md for every `type`), each with an example."""
    return {
        status: ResponseSpec(
            data_container=ProblemResponse,
            description=f"problem details, `type` one of: {', '.join(types_of(status))}",
            media_type=PROBLEM_JSON,
            generate_examples=False,
            examples=[Example(summary=EXAMPLES[status][0], value=EXAMPLES[status][1])],
        )
        for status in statuses
    }
