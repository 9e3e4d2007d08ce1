"""Typed errors: one class per problem `type` the service answers, each carrying the problem's
facts as attributes, plus the failures of the transport itself (server down, no answer in time,
an answer that is not the service's JSON).

Every error of this package derives from `ToksvcError`. Input problems (422) also derive from
`ValueError`, as tiktoken's do; an unknown token id also from `KeyError`, as in tiktoken.
"""

from __future__ import annotations

from typing import Any, ClassVar

TYPE_BASE = "/problems/"


class ToksvcError(Exception):
    """Base class of every error this client raises."""


class StreamClosedError(ToksvcError):
    """`feed` or `finish` on a decode stream that already finished."""


# --- the transport ------------------------------------------------------------------------------


class TransportError(ToksvcError):
    """No usable answer came back: the server could not be reached or did not answer in time."""


class ConnectFailedError(TransportError):
    """The server could not be reached (refused, reset, unknown host), after the retries."""


class TransportTimeoutError(TransportError, TimeoutError):
    """Connecting, sending or waiting for the answer took longer than the client's timeout."""


class BadResponseError(ToksvcError):
    """An answer that is not what the service sends: not JSON, or not the expected shape (a
    proxy's HTML error page, another service on that port). `status`, `content_type` and the
    start of the body (`excerpt`) say what came back."""

    def __init__(self, reason: str, status: int, content_type: str, body: bytes) -> None:
        self.status = status
        self.content_type = content_type
        self.excerpt = body[:200].decode("utf-8", "replace")
        super().__init__(
            f"{reason} (HTTP {status}, {content_type or 'no content type'}): {self.excerpt!r}"
        )


# --- problem documents --------------------------------------------------------------------------


class ProblemError(ToksvcError):
    """An RFC 9457 problem document from the service. `type`, `title`, `status`, `detail` are
    the document's; `problem` is all of it; `retry_after` the seconds the server asked to wait
    (503 and 429), else None. Subclasses name their facts (`facts`) as attributes."""

    kind: ClassVar[str] = ""  # the `type` without its /problems/ prefix; "" for the base class
    facts: ClassVar[tuple[str, ...]] = ()

    def __init__(self, problem: dict[str, Any], retry_after: float | None = None) -> None:
        self.problem = problem
        self.type = str(problem.get("type", ""))
        self.title = str(problem.get("title", ""))
        status = problem.get("status")
        self.status = status if isinstance(status, int) else 0
        self.detail = str(problem.get("detail", ""))
        self.retry_after = retry_after
        for name in self.facts:
            setattr(self, name, problem.get(name))
        super().__init__(f"{self.status} {self.type}: {self.detail}")

    def __str__(self) -> str:  # KeyError's own would show the repr of the message
        return str(self.args[0]) if self.args else ""


class InputError(ProblemError, ValueError):
    """422: the request is well-formed but its input cannot be processed as asked."""

    kind = "invalid-input"


class UnavailableError(ProblemError):
    """503 (and 429): the server cannot take this now; the client retries these itself."""


# 400, 401, 404, 405, 408, 409, 413, 415, 431


class InvalidBodyError(ProblemError):
    kind, facts = "invalid-body", ("errors",)
    errors: list[dict[str, Any]] | None


class BadRequestError(ProblemError):
    kind = "bad-request"


class UnauthorizedError(ProblemError):
    kind = "unauthorized"


class RequestTimeoutError(ProblemError):
    kind = "request-timeout"


class UnknownTokenizerError(ProblemError):
    kind, facts = "unknown-tokenizer", ("available",)
    available: list[str] | None


class UnknownModelError(ProblemError):
    kind, facts = "unknown-model", ("available",)
    available: list[str] | None


class NotFoundError(ProblemError):
    kind = "not-found"


class MethodNotAllowedError(ProblemError):
    kind = "method-not-allowed"


class UnsupportedMediaTypeError(ProblemError):
    kind = "unsupported-media-type"


class ReloadRefusedError(ProblemError):
    kind, facts = "reload-refused", ("failures",)
    failures: list[str] | None


class LimitExceededError(ProblemError):
    kind, facts = "limit-exceeded", ("limit",)
    limit: int | None


# 422


class DisallowedSpecialTokenError(InputError):
    """A special-token literal in the text that is not allowed (tiktoken raises ValueError)."""

    kind, facts = "disallowed-special-token", ("token", "position")
    token: str
    position: int | None


class UnknownSpecialTokenError(InputError):
    kind, facts = "unknown-special-token", ("tokens",)
    tokens: list[str] | None


class UnknownTokenIdError(InputError, KeyError):
    """Ids the vocabulary lacks (tiktoken raises KeyError)."""

    kind, facts = "unknown-token-id", ("ids",)
    ids: list[int] | None


class UndecodableBytesError(InputError):
    """Strict decoding met invalid UTF-8: `offset` in the bytes, `bytes` as hex."""

    kind, facts = "undecodable-bytes", ("offset", "bytes")
    offset: int | None
    bytes: str | None


class LoneSurrogateError(InputError):
    kind, facts = "lone-surrogate", ("position",)
    position: int | None


class InvalidMessageError(InputError):
    """A message (`index`; None: the request itself) that cannot be rendered; `field` at fault."""

    kind, facts = "invalid-message", ("index", "field")
    index: int | None
    field: str | None


class InvalidImageError(InvalidMessageError):
    """An image part whose size cannot be known (a URL without `width` and `height`, bad base64,
    a header that is cut short or not PNG, JPEG, GIF or WebP)."""

    kind, facts = "invalid-image", ("index", "field")


class ImagesNotCountedError(InputError):
    """An image sent to a model whose profile has no `images` rule."""

    kind, facts = "images-not-counted", ("model", "index", "field")
    model: str | None
    index: int | None
    field: str | None


class TemplateError(InputError):
    kind = "template-error"


class ChatFormatRefusedError(TemplateError):
    """A model's own chat encoder (Mistral's instruct formats) refused the conversation as its
    reference does; `index` names the message (None: the request as a whole)."""

    kind, facts = "chat-format-refused", ("index", "format")
    index: int | None
    format: str | None


class PriceMissingError(InputError):
    kind, facts = "price-missing", ("missing",)
    missing: str | None


class ContextOverflowError(InputError):
    kind, facts = "context-overflow", ("needed", "context_window")
    needed: int | None
    context_window: int | None


class InvalidInputError(InputError):
    kind = "invalid-input"


class InvalidStreamStateError(InputError):
    kind = "invalid-stream-state"


class InvalidStreamOptionError(InputError):
    """A stream option out of bounds, or sent after the stream started; `field` names it."""

    kind, facts = "invalid-stream-option", ("field",)
    field: str | None


class EngineFailureError(InputError):
    kind = "engine-failure"


class PatternTimeoutError(InputError):
    """A tokenizer file's pattern backtracked past its time bound (`seconds`) on this text."""

    kind, facts = "pattern-timeout", ("seconds",)
    seconds: float | None


# 503 and 500


class NotReadyError(UnavailableError):
    kind, facts = "not-ready", ("failures",)
    failures: list[str] | None


class TooManyStreamsError(UnavailableError):
    kind, facts = "too-many-streams", ("limit",)
    limit: int | None


class TooManyLargeRequestsError(UnavailableError):
    kind, facts = "too-many-large-requests", ("limit",)
    limit: int | None


class ReloadUnavailableError(UnavailableError):
    kind = "reload-unavailable"


class TooManyTrainingsError(UnavailableError):
    kind, facts = "too-many-trainings", ("limit",)
    limit: int | None


class TokenizerUnavailableError(UnavailableError):
    """A listed tokenizer whose file failed its full check when the server first used it."""

    kind, facts = "tokenizer-unavailable", ("tokenizer",)
    tokenizer: str | None


class WorkStoppedError(UnavailableError):
    """The server stopped the work (it is stopping): retry, another worker will serve it."""

    kind = "work-stopped"


class ReloadInconsistentError(ProblemError):
    """After a reload the workers hold different store states: `workers` maps each worker's pid to
    the manifest sha256 it serves (or "no answer")."""

    kind, facts = "reload-inconsistent", ("workers",)
    workers: dict[str, str] | None


class InternalServerError(ProblemError):
    kind = "internal-error"


def _concrete(base: type[ProblemError]) -> list[type[ProblemError]]:
    found = [base] if base.kind and base not in (InputError,) else []
    for sub in base.__subclasses__():
        found += _concrete(sub)
    return found


PROBLEM_CLASSES: dict[str, type[ProblemError]] = {
    TYPE_BASE + cls.kind: cls for cls in _concrete(ProblemError)
}
"""problem `type` -> the class raised for it (an unknown type raises the nearest by status)."""


def problem_error(problem: dict[str, Any], retry_after: float | None = None) -> ProblemError:
    """The typed error for a problem document."""
    cls = PROBLEM_CLASSES.get(str(problem.get("type", "")))
    if cls is None:
        status = problem.get("status")
        cls = (
            InputError
            if status == 422
            else UnavailableError
            if status in (429, 503)
            else ProblemError
        )
    return cls(problem, retry_after)
