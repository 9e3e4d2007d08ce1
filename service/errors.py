"""The one tree of typed errors. Domain code raises these; `service.api` maps them to HTTP statuses.

Every message says what was wrong and, where it can, how to fix it.
"""

from __future__ import annotations

from collections.abc import Iterable


class ToksvcError(Exception):
    """Base class of every error this project raises on purpose."""


# --- bad input: valid request, invalid meaning ---------------------------------------------------


class InputError(ToksvcError):
    """The input is well-formed but cannot be tokenized or decoded as asked."""


class DisallowedSpecialError(InputError):
    def __init__(self, token: str, position: int) -> None:
        self.token = token
        self.position = position
        super().__init__(
            f"text contains the special token {token!r} at character {position}; pass it in "
            f"allowed_special to encode it as a special id, or disallowed_special=[] to encode "
            f"it as ordinary text"
        )


class UnknownIdError(InputError):
    def __init__(self, ids: Iterable[int], vocab_size: int) -> None:
        self.ids = sorted(set(ids))
        shown = ", ".join(map(str, self.ids[:10])) + (", ..." if len(self.ids) > 10 else "")
        super().__init__(
            f"unknown token id(s) {shown}: not in this tokenizer ({vocab_size} ids are defined)"
        )


class UndecodableBytesError(InputError):
    def __init__(self, offset: int, data: bytes) -> None:
        self.offset = offset
        self.data = data
        super().__init__(
            f"bytes {data.hex(' ')} at byte offset {offset} are not valid UTF-8; "
            f"decode with errors='replace' or ask for bytes"
        )


class SurrogateError(InputError):
    def __init__(self, position: int, where: str = "character {} of the text") -> None:
        self.position = position
        super().__init__(
            f"a lone surrogate at {where.format(position)}: it is not a Unicode scalar value "
            f"and cannot be encoded as UTF-8; send well-formed UTF-16 pairs or real characters"
        )


class UnknownSpecialError(InputError):
    def __init__(self, tokens: Iterable[str]) -> None:
        self.tokens = sorted(tokens)
        super().__init__(f"not special tokens of this tokenizer: {', '.join(self.tokens)}")


class EngineFailureError(InputError):
    def __init__(self, length: int, reason: str) -> None:
        self.length = length
        super().__init__(
            f"the tokenizer engine failed on this text ({length} characters: {reason}); such "
            f"input (e.g. a run of about a million whitespace characters) cannot be encoded in "
            f"one piece: split the text"
        )


class StreamStateError(InputError):
    """A decode-step state that this service did not produce."""


# --- configuration and training --------------------------------------------------------------


class ConfigError(ToksvcError):
    """A setting, argument or training parameter is out of range."""


# --- the store ---------------------------------------------------------------------------------


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


class ManifestError(StoreError):
    pass


class ReloadRefusedError(ToksvcError):
    def __init__(self, failures: Iterable[str]) -> None:
        self.failures = list(failures)
        shown = "; ".join(self.failures[:5]) or "no tokenizer loaded"
        super().__init__(f"reload refused, the previous store keeps serving: {shown}")


class ReloadUnavailableError(ToksvcError):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)


# --- the registry ------------------------------------------------------------------------------


class TokenizerNotFoundError(ToksvcError):
    def __init__(self, ref: str, available: Iterable[str]) -> None:
        self.ref = ref
        self.available = sorted(available)
        super().__init__(
            f"no tokenizer {ref!r} is loaded; available: {', '.join(self.available) or 'none'}"
        )


class ModelNotFoundError(ToksvcError):
    def __init__(self, ref: str, available: Iterable[str]) -> None:
        self.ref = ref
        self.available = sorted(available)
        super().__init__(
            f"no model {ref!r} is loaded; available: {', '.join(self.available) or 'none'}"
        )


class ChatInputError(InputError):
    """A conversation that cannot be rendered: `index` names the message (None: the request)."""

    def __init__(self, index: int | None, field: str, reason: str) -> None:
        self.index = index
        self.field = field
        where = field if index is None else f"messages[{index}].{field}"
        super().__init__(f"{where}: {reason}")


class TemplateError(InputError):
    """The model's chat template refused the conversation (its own message is kept)."""

    def __init__(self, message: str) -> None:
        self.template_message = message
        super().__init__(f"the chat template raised: {message}")


class PriceMissingError(InputError):
    def __init__(self, model: str, missing: str) -> None:
        self.model = model
        self.missing = missing
        super().__init__(f"no {missing} price is loaded for model {model}; add a price file")


class ContextOverflowError(InputError):
    def __init__(self, model: str, needed: int, window: int) -> None:
        self.needed = needed
        self.window = window
        super().__init__(
            f"{needed} tokens (input plus output) do not fit {model}'s context window of {window}"
        )


class NotReadyError(ToksvcError):
    def __init__(self) -> None:
        super().__init__("the tokenizer registry is not loaded yet; retry shortly")


class TooManyStreamsError(ToksvcError):
    def __init__(self, limit: int) -> None:
        self.limit = limit
        super().__init__(f"this worker already serves {limit} streams; retry shortly")


class RequestTimeoutError(ToksvcError):
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        super().__init__(f"the request body did not arrive within {seconds:g} s")


class LimitExceededError(ToksvcError):
    def __init__(self, what: str, limit: int, actual: int | None = None) -> None:
        self.what = what
        self.limit = limit
        got = "" if actual is None else f" (got {actual})"
        super().__init__(f"{what} exceeds the limit of {limit}{got}")
