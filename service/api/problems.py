"""RFC 9457 problem details: the one place where errors become problem documents.

A domain error names its kind, title and facts itself (`service.errors`); this module adds only
what HTTP makes of it: the status (`STATUS`, by class), `Retry-After` on 503 and the id of the
request answered (`request_id`, from `service.api.request_ids`). Litestar's own
HTTP exceptions (404 route, 405, 415, invalid parameters) get a kind by status (`HTTP_TYPES`).
Every answer is a `ProblemResponse` Struct, whether Litestar's exception handlers, the ASGI
middleware (`send_raw`), the transport (`encode`) or a stream's last line sends it.
"""

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
from service.api import request_ids
from service.api.wire.info import ProblemResponse

PROBLEM_JSON = "application/problem+json"
TYPE_BASE = "/problems/"  # a relative URI reference; every type is listed in docs/api.md

# the HTTP status of a domain error: the first class of its MRO listed here
STATUS: dict[type[e.ToksvcError], int] = {
    e.InputError: 422,
    e.ModelNotFoundError: 404,
    e.TokenizerNotFoundError: 404,
    e.LimitExceededError: 413,
    e.RequestTimeoutError: 408,
    e.ReloadRefusedError: 409,
    e.ReloadInconsistentError: 409,
    e.NotReadyError: 503,
    e.TokenizerUnavailableError: 503,
    e.TooManyStreamsError: 503,
    e.TooManyLargeRequestsError: 503,
    e.TooManyTrainingsError: 503,
    e.WorkStoppedError: 503,
    e.ReloadUnavailableError: 503,
    e.ToksvcError: 400,
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
RETRY_LATER = {"Retry-After": "1"}
log = logging.getLogger("toksvc")
_encode = msgspec.json.encode


def status_of(kind: type[e.ToksvcError]) -> int:
    return next(STATUS[c] for c in kind.__mro__ if c in STATUS)


def for_error(exc: e.ToksvcError) -> ProblemResponse:
    """The problem document of a domain error, with the facts it carries as extensions."""
    document = {
        "type": TYPE_BASE + exc.kind,
        "title": exc.title,
        "status": status_of(type(exc)),
        "detail": str(exc),
        "request_id": request_ids.current(),
        **exc.facts(),
    }
    return msgspec.convert(document, ProblemResponse)  # a fact the Struct lacks fails loudly


def for_http(status: int, detail: str, **facts: Any) -> ProblemResponse:
    """A problem for an HTTP-level refusal; Litestar's and msgspec's messages quote the input
    (an unknown field, an enum value), so every string is cut as `errors.echoed` cuts it."""
    kind, title = HTTP_TYPES.get(status, ("http-error", "HTTP error"))
    errors = facts.pop("errors", None)
    if errors is not None:
        facts["errors"] = [{k: _cut(v) for k, v in entry.items()} for entry in errors[:20]]
    return ProblemResponse(
        type=TYPE_BASE + kind,
        title=title,
        status=status,
        detail=_cut(detail),
        request_id=request_ids.current(),
        **facts,
    )


def _cut(value: Any) -> Any:
    return e.echoed(value, 4 * e.ECHO_CHARS) if isinstance(value, str) else value


def invalid_body(detail: str) -> ProblemResponse:
    """400 for a body (or a stream's line) that is not what the operation takes."""
    return for_http(400, detail)


def kind_of(problem: ProblemResponse) -> str:
    return problem.type.removeprefix(TYPE_BASE)


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


def encode(problem: ProblemResponse) -> bytes:
    return _encode(problem)


def headers_of(problem: ProblemResponse) -> dict[str, str] | None:
    return RETRY_LATER if problem.status in (429, 503) else None


def response(problem: ProblemResponse, headers: dict[str, str] | None = None) -> Response[bytes]:
    return Response(
        _encode(problem),
        status_code=problem.status,
        media_type=PROBLEM_JSON,
        headers=headers or headers_of(problem),
    )


async def send_raw(
    send: Send, problem: ProblemResponse, headers: dict[str, str] | None = None
) -> None:
    """Answer with a problem document from plain ASGI middleware (outside Litestar's handlers)."""
    body = _encode(problem)
    head = [(b"content-type", PROBLEM_JSON.encode()), (b"content-length", b"%d" % len(body))]
    extra = headers or headers_of(problem) or {}
    head += [(k.lower().encode(), v.encode()) for k, v in extra.items()]
    await send({"type": "http.response.start", "status": problem.status, "headers": head})
    await send({"type": "http.response.body", "body": body, "more_body": False})


def _domain_handler(_: Request[Any, Any, Any], exc: e.ToksvcError) -> Response[bytes]:
    return response(for_error(exc))


def _http_handler(_: Request[Any, Any, Any], exc: HTTPException) -> Response[bytes]:
    errors = validation_errors(exc) if isinstance(exc, ValidationException) else None
    return response(for_http(exc.status_code, str(exc.detail), errors=errors), exc.headers)


def _internal_handler(request: Request[Any, Any, Any], exc: Exception) -> Response[bytes]:
    log.exception("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    problem = ProblemResponse(
        type=TYPE_BASE + "internal-error",
        title="Internal error",
        status=500,
        detail="an unexpected error; see logs",
        request_id=request_ids.current(),
    )
    return response(problem)


EXCEPTION_HANDLERS: ExceptionHandlersMap = {
    e.ToksvcError: _domain_handler,
    HTTPException: _http_handler,
    Exception: _internal_handler,
}

# one example problem per documented status, shown on the docs page: real errors' documents
_BODY = "give exactly one of `text` or `texts`"
EXAMPLES: dict[int, tuple[str, ProblemResponse]] = {
    400: (
        "a body that is not what the operation takes",
        for_http(400, _BODY, errors=[{"message": _BODY, "key": "$", "source": "body"}]),
    ),
    401: ("no or a wrong bearer token", for_http(401, "a valid bearer token is required")),
    404: (
        "no such tokenizer",
        for_error(e.TokenizerNotFoundError("cl100k", ["cl100k_base", "cl100k_base@1", "gpt2"])),
    ),
    408: ("a body that arrives too slowly", for_error(e.RequestTimeoutError(30))),
    413: (
        "too many items in one request",
        for_error(e.LimitExceededError("items per batch", 1024, 2000)),
    ),
    422: (
        "a special-token literal that is not allowed",
        for_error(e.DisallowedSpecialError("<|endoftext|>", 0)),
    ),
    503: ("the store is still loading", for_error(e.NotReadyError())),
}


def _classes(root: type[e.ToksvcError]) -> list[type[e.ToksvcError]]:
    """`root` and every subclass, children before their parent, in the order they are defined."""
    return [c for sub in root.__subclasses__() for c in _classes(sub)] + [root]


def types_of(status: int) -> list[str]:
    """Every problem `type` (without the base) this service answers with `status`."""
    kinds = [c.kind for c in _classes(e.ToksvcError) if status_of(c) == status]
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
            examples=[
                Example(summary=EXAMPLES[status][0], value=msgspec.to_builtins(EXAMPLES[status][1]))
            ],
        )
        for status in statuses
    }
