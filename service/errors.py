"""The one tree of typed errors. Domain code raises these; `service.api.problems` makes them
problem documents (the HTTP status is chosen there, by class).

Every message says what was wrong and, where it can, how to fix it. Each class names its kind
(`kind`, a stable slug, and `title`) and carries its facts: `fact_names` lists the attributes a
client may act on (the offending token and its position, the limit, ...), which become the
problem document's extension members, so no other layer restates them.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import ClassVar

ECHO_CHARS = 200  # of a client's input quoted back in an error (a name, a token, a field)


def echoed(text: str, limit: int = ECHO_CHARS) -> str:
    """`text` as an error quotes it: at most `limit` characters, then "…"."""
    return text if len(text) <= limit else text[:limit] + "…"


class ToksvcError(Exception):
    """Base class of every error this project raises on purpose."""

    kind: ClassVar[str] = "bad-request"
    title: ClassVar[str] = "Bad request"
    fact_names: ClassVar[tuple[str, ...]] = ()

    def facts(self) -> dict[str, object]:
        """The facts a problem document carries as extension members (None ones left out)."""
        values = {name: getattr(self, name) for name in self.fact_names}
        return {name: value for name, value in values.items() if value is not None}


# --- bad input: valid request, invalid meaning ---------------------------------------------------


class InputError(ToksvcError):
    """The input is well-formed but cannot be tokenized or decoded as asked."""

    kind, title = "invalid-input", "Invalid input"


class DisallowedSpecialError(InputError):
    kind, title = "disallowed-special-token", "Disallowed special token"
    fact_names = ("token", "position")

    def __init__(self, token: str, position: int) -> None:
        self.token = token
        self.position = position
        super().__init__(
            f"text contains the special token {token!r} at character {position}; pass it in "
            f"allowed_special to encode it as a special id, or disallowed_special=[] to encode "
            f"it as ordinary text"
        )


class UnknownSpecialError(InputError):
    kind, title = "unknown-special-token", "Unknown special token"
    fact_names = ("tokens",)

    def __init__(self, tokens: Iterable[str]) -> None:
        self.tokens = [echoed(t) for t in sorted(tokens)[:10]]  # the first 10 are reported
        super().__init__(f"not special tokens of this tokenizer: {', '.join(self.tokens)}")


class UnknownIdError(InputError):
    kind, title = "unknown-token-id", "Unknown token id"
    fact_names = ("ids",)

    def __init__(self, ids: Iterable[int], vocab_size: int) -> None:
        unknown = sorted(set(ids))
        self.ids = unknown[:100]  # the first 100 are reported
        shown = ", ".join(map(str, unknown[:10])) + (", ..." if len(unknown) > 10 else "")
        super().__init__(
            f"unknown token id(s) {shown}: not in this tokenizer ({vocab_size} ids are defined)"
        )


class UndecodableBytesError(InputError):
    kind, title = "undecodable-bytes", "Bytes are not valid UTF-8"

    def __init__(self, offset: int, data: bytes) -> None:
        self.offset = offset
        self.data = data
        super().__init__(
            f"bytes {data.hex(' ')} at byte offset {offset} are not valid UTF-8; "
            f"decode with errors='replace' or ask for bytes"
        )

    def facts(self) -> dict[str, object]:
        return {"offset": self.offset, "bytes": self.data.hex()}


class SurrogateError(InputError):
    kind, title = "lone-surrogate", "Lone surrogate in text"
    fact_names = ("position",)

    def __init__(self, position: int, where: str = "character {} of the text") -> None:
        self.position = position
        super().__init__(
            f"a lone surrogate at {where.format(position)}: it is not a Unicode scalar value "
            f"and cannot be encoded as UTF-8; send well-formed UTF-16 pairs or real characters"
        )


class StreamStateError(InputError):
    """A decode-step state that this service did not produce."""

    kind, title = "invalid-stream-state", "Invalid stream state"


class StreamOptionError(InputError):
    """A stream option that is not acceptable: out of bounds, or sent after the stream started."""

    kind, title = "invalid-stream-option", "Invalid stream option"
    fact_names = ("field",)

    def __init__(self, field: str, why: str) -> None:
        self.field = field
        super().__init__(f"`{field}`: {why}")


class EngineFailureError(InputError):
    kind, title = "engine-failure", "The engine cannot encode this text"

    def __init__(self, length: int, reason: str) -> None:
        self.length = length
        super().__init__(
            f"the tokenizer engine failed on this text ({length} characters: {reason}); such "
            f"input (e.g. a run of about a million whitespace characters) cannot be encoded in "
            f"one piece: split the text"
        )


class PatternTimeoutError(InputError):
    kind, title = "pattern-timeout", "The tokenizer's pattern cannot cut this text in time"
    fact_names = ("seconds",)

    def __init__(self, seconds: float) -> None:
        self.seconds = round(seconds, 3)
        super().__init__(
            f"the tokenizer file's pre-tokenization pattern did not cut this text within "
            f"{self.seconds:g} s (it backtracks on such input); use another tokenizer or text"
        )


class ChatInputError(InputError):
    """A conversation that cannot be rendered: `index` names the message (None: the request)."""

    kind, title = "invalid-message", "Invalid message"
    fact_names = ("index", "field")

    def __init__(self, index: int | None, field: str, reason: str) -> None:
        self.index = index
        self.field = field = echoed(field)
        reason = echoed(reason, 4 * ECHO_CHARS)
        where = field if index is None else f"messages[{index}].{field}"
        super().__init__(f"{where}: {reason}")

    def facts(self) -> dict[str, object]:
        return {"index": self.index, "field": self.field}  # index null: the request itself


class ImageInputError(ChatInputError):
    """An image part whose size cannot be known: bad base64, a header that is not PNG, JPEG, GIF
    or WebP (or is cut short), or a URL without `width` and `height` (a URL is never fetched)."""

    kind, title = "invalid-image", "Invalid image"


class ImagesNotCountedError(InputError):
    """An image sent to a model whose profile has no `images` rule."""

    kind, title = "images-not-counted", "Images not counted"
    fact_names = ("model", "index", "field")

    def __init__(self, model: str, index: int, field: str) -> None:
        self.model = model
        self.index = index
        self.field = field
        super().__init__(
            f"model {model} does not count images (its profile has no `images` rule); "
            f"messages[{index}].{field} is an image: leave it out, or count with a model that "
            f"counts images"
        )


class TemplateError(InputError):
    """The model's chat template refused the conversation (its own message is kept); `index`
    names the message it refused (None: not known, or the conversation as a whole); `located`
    says how: "found", "whole" (no message is to blame: the generation prompt is refused), "not
    found in time" (the search for the message ran out of time or size), or None (no search was
    made)."""

    kind, title = "template-error", "The chat template raised"
    fact_names: ClassVar[tuple[str, ...]] = ("index", "located")

    def __init__(self, message: str, index: int | None = None, located: str | None = None) -> None:
        self.template_message = message = echoed(message, 4 * ECHO_CHARS)
        self.index = index
        self.located = located
        where = "" if index is None else f"messages[{index}]: "
        super().__init__(f"{where}the chat template raised: {message}")

    def facts(self) -> dict[str, object]:
        return {"index": self.index, "located": self.located}  # index null: no one message


class ChatFormatError(TemplateError):
    """A model's own chat encoder (Mistral's instruct formats) refused the conversation, as the
    reference implementation (mistral-common) refuses it; `index` names the message (None: the
    request as a whole, e.g. no message or a tool definition)."""

    kind, title = "chat-format-refused", "The chat format refuses the conversation"
    fact_names: ClassVar[tuple[str, ...]] = ("index", "format")

    def __init__(self, fmt: str, index: int | None, reason: str) -> None:
        self.format = fmt
        self.template_message = reason = echoed(reason, 4 * ECHO_CHARS)
        self.index = index
        where = "" if index is None else f"messages[{index}]: "
        InputError.__init__(self, f"{where}{fmt} refuses this conversation: {reason}")

    def facts(self) -> dict[str, object]:
        return {"index": self.index, "format": self.format}


class PriceMissingError(InputError):
    kind, title = "price-missing", "Price missing"
    fact_names = ("missing",)

    def __init__(self, model: str, missing: str) -> None:
        self.model = model
        self.missing = missing
        super().__init__(f"no {missing} price is loaded for model {model}; add a price file")


class ContextOverflowError(InputError):
    kind, title = "context-overflow", "Context window exceeded"
    fact_names = ("needed", "context_window")

    def __init__(self, model: str, needed: int, window: int) -> None:
        self.needed = needed
        self.context_window = window
        super().__init__(
            f"{needed} tokens (input plus output) do not fit {model}'s context window of {window}"
        )


# --- configuration and the store -----------------------------------------------------------------


class ConfigError(ToksvcError):
    """A setting, argument or training parameter is out of range."""


class StoreError(ToksvcError):
    """A tokenizer file or the manifest cannot be used. `path` names the file."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}")


class HashMismatchError(StoreError):
    def __init__(self, path: str, expected: str, actual: str) -> None:
        super().__init__(
            path,
            f"sha256 is {actual} but the manifest pins {expected}; the file was changed or "
            f"corrupted: restore it, or re-import it so the manifest entry is rewritten",
        )


class FormatError(StoreError):
    """The file parses but breaks a rule of the format; `entry` names the offending entry."""

    def __init__(self, path: str, entry: str, reason: str) -> None:
        self.entry = entry
        super().__init__(path, f"{entry}: {reason}")


class UnsupportedComponentError(StoreError):
    """An import source uses a component we do not implement exactly: `at` is its JSON path,
    `supported` what is implemented instead (docs/format.md has the support matrix)."""

    def __init__(self, path: str, at: str, found: str, supported: str) -> None:
        self.at = at
        super().__init__(
            path,
            f"{at}: {found} is not supported (supported: {supported}; see the "
            "support matrix in docs/format.md)",
        )


class ManifestError(StoreError):
    pass


# --- what is served ----------------------------------------------------------------------------


class _NotFoundError(ToksvcError):
    """`closest`: the loaded names nearest to the one asked for (a typo's likely fix)."""

    what: ClassVar[str]
    fact_names = ("available", "closest")

    def __init__(self, ref: str, available: Iterable[str]) -> None:
        self.ref = ref = echoed(ref)
        self.available = sorted(set(available))
        self.closest = difflib.get_close_matches(ref, self.available, n=3, cutoff=0.5)
        hint = f"; did you mean {' or '.join(map(repr, self.closest))}?" if self.closest else ""
        super().__init__(
            f"no {self.what} {ref!r} is loaded{hint}; available: "
            f"{', '.join(self.available) or 'none'}"
        )


class ModelNotFoundError(_NotFoundError):
    kind, title, what = "unknown-model", "Unknown model", "model"


class TokenizerNotFoundError(_NotFoundError):
    kind, title, what = "unknown-tokenizer", "Unknown tokenizer", "tokenizer"


class TokenizerUnavailableError(ToksvcError):
    """A listed tokenizer whose file failed its full check when first used (load on first use)."""

    kind, title = "tokenizer-unavailable", "Tokenizer unavailable"
    fact_names = ("tokenizer",)

    def __init__(self, tokenizer: str, reason: str) -> None:
        self.tokenizer = tokenizer
        super().__init__(
            f"tokenizer {tokenizer} is listed but could not be built: {reason}; "
            "run `toksvc verify` and restore or re-import the file"
        )


class NotReadyError(ToksvcError):
    """Nothing to serve yet, or (`failures`) a store that loaded only in part."""

    kind, title = "not-ready", "Not ready"
    fact_names = ("failures",)

    def __init__(
        self, failures: list[str] | None = None, *, serving: bool = False, reason: str = ""
    ) -> None:
        self.failures = failures
        if reason:
            super().__init__(reason)
        elif failures and serving:
            super().__init__(
                f"{len(failures)} store file(s) failed to load; this worker serves "
                "the others but is not ready"
            )
        else:
            super().__init__("the tokenizer registry is not loaded yet; retry shortly")


# --- what a request or a stream may cost ---------------------------------------------------------


class LimitExceededError(ToksvcError):
    kind, title = "limit-exceeded", "Limit exceeded"
    fact_names = ("limit",)

    def __init__(self, what: str, limit: int, actual: int | None = None) -> None:
        self.what = what
        self.limit = limit
        got = "" if actual is None else f" (got {actual})"
        super().__init__(f"{what} exceeds the limit of {limit}{got}")


class TooManyStreamsError(ToksvcError):
    kind, title = "too-many-streams", "Too many concurrent streams"
    fact_names = ("limit",)

    def __init__(self, limit: int) -> None:
        self.limit = limit
        super().__init__(f"this worker already serves {limit} streams; retry shortly")


class TooManyLargeRequestsError(ToksvcError):
    kind, title = "too-many-large-requests", "Too many large requests"
    fact_names = ("limit",)

    def __init__(self, limit: int, threshold: int) -> None:
        self.limit = limit
        super().__init__(
            f"this worker already works on {limit} requests over {threshold} bytes; retry shortly"
        )


class TooManyTrainingsError(ToksvcError):
    kind, title = "too-many-trainings", "Too many trainings"
    fact_names = ("limit",)

    def __init__(self, limit: int) -> None:
        self.limit = limit
        super().__init__(
            f"this worker already trains {limit} playground vocabularies; retry shortly"
        )


class WorkStoppedError(ToksvcError):
    """CPU work stopped before its end because its client went away or the worker is stopping
    (`service.bpe.deadline.Deadline`)."""

    kind, title = "work-stopped", "Work stopped"

    def __init__(self) -> None:
        super().__init__("the work was stopped: its client went away or the worker is stopping")


class RequestTimeoutError(ToksvcError):
    kind, title = "request-timeout", "Request timeout"

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        super().__init__(f"the request body did not arrive within {seconds:g} s")


# --- reloading the store -------------------------------------------------------------------------


class ReloadUnavailableError(ToksvcError):
    kind, title = "reload-unavailable", "Reload unavailable"


class ReloadRefusedError(ToksvcError):
    kind, title = "reload-refused", "Reload refused"
    fact_names = ("failures",)

    def __init__(self, failures: Iterable[str]) -> None:
        self.failures = list(failures)[:100]
        shown = "; ".join(self.failures[:5]) or "no tokenizer loaded"
        super().__init__(f"reload refused, the previous store keeps serving: {shown}")


class ReloadInconsistentError(ToksvcError):
    """After a reload the workers do not all serve one store state (the store changed while they
    loaded it, or a worker did not answer in time). `workers`: pid -> the manifest sha256 it
    serves, or "no answer"."""

    kind, title = "reload-inconsistent", "Workers disagree after the reload"
    fact_names = ("workers",)

    def __init__(self, workers: dict[str, str]) -> None:
        self.workers = workers
        states = len(set(workers.values()) - {"no answer"})
        silent = sum(1 for v in workers.values() if v == "no answer")
        super().__init__(
            f"after the reload the workers serve {states} different store state(s) and "
            f"{silent} did not answer in time; the store may have changed while they loaded it: "
            "reload again once it is complete"
        )
