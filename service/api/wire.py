"""Request and response bodies: strict msgspec Structs (unknown fields and wrong types refused)."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from msgspec import Meta, Struct

SpecialList = list[str] | Literal["all"]
Ids = list[int]
ErrorsMode = Literal["strict", "replace"]


class _Request(Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    pass


class _Response(Struct, frozen=True, omit_defaults=True, kw_only=True):
    pass


class TokenizerRef(_Response, frozen=True):
    """Which exact vocabulary produced a result: name, version and the file's sha256."""

    name: str
    version: str
    sha256: str


class TextsRequest(_Request, frozen=True):
    """Exactly one of `text` or `texts`. Special tokens follow tiktoken's policy."""

    text: str | None = None
    texts: list[str] | None = None
    allowed_special: SpecialList = msgspec.field(default_factory=list)
    disallowed_special: SpecialList = "all"


class EncodeRequest(TextsRequest, frozen=True):
    """`pieces`: each token's text (`{"base64"}` where not valid UTF-8 alone); `offsets`: each
    token's [start, end) in code points or UTF-16 units."""

    pieces: bool = False
    offsets: Literal["none", "codepoints", "utf16"] = "none"


class CountRequest(TextsRequest, frozen=True):
    pass


class PieceBytes(_Response, frozen=True):
    base64: str


class EncodeResult(_Response, frozen=True):
    ids: Ids
    count: int
    pieces: list[str | PieceBytes] | None = None
    offsets: list[tuple[int, int]] | None = None


class EncodeResponse(_Response, frozen=True):
    tokenizer: TokenizerRef
    ids: Ids | None = None
    count: int | None = None
    results: list[EncodeResult] | None = None
    pieces: list[str | PieceBytes] | None = None
    offsets: list[tuple[int, int]] | None = None


class CountResponse(_Response, frozen=True):
    tokenizer: TokenizerRef
    count: int | None = None
    counts: list[int] | None = None
    total: int | None = None


class DecodeRequest(_Request, frozen=True):
    """Exactly one of `ids` or `batch`; `output: "base64"` returns the raw bytes instead of text."""

    ids: Ids | None = None
    batch: list[Ids] | None = None
    errors: ErrorsMode = "strict"
    output: Literal["text", "base64"] = "text"
    skip_special_tokens: bool = False  # drop the ids of special tokens before decoding


class DecodeResult(_Response, frozen=True):
    text: str | None = None
    base64: bytes | None = None


class DecodeResponse(_Response, frozen=True):
    tokenizer: TokenizerRef
    text: str | None = None
    base64: bytes | None = None
    results: list[DecodeResult] | None = None


class DecodeStepRequest(_Request, frozen=True):
    """One step of a stateless stream: pass back the previous step's `state` (null to start)."""

    ids: Ids = msgspec.field(default_factory=list)
    state: str | None = None
    final: bool = False
    errors: ErrorsMode = "replace"


class DecodeStepResponse(_Response, frozen=True):
    text: str
    state: str
    tokenizer: TokenizerRef


class StreamChunkRequest(_Request, frozen=True):
    """One NDJSON line of `decode/stream`, or one WebSocket message of `decode/ws`."""

    ids: Ids = msgspec.field(default_factory=list)
    final: bool = False


class StreamUsage(_Response, frozen=True):
    """A stream's metering, on its last line: ids received, and their cost as output tokens
    when a model was named (decimal string)."""

    output_tokens: int
    model: str | None = None
    cost: str | None = None
    currency: str | None = None
    price_file: str | None = None


class StreamTextResponse(_Response, frozen=True):
    text: str
    done: bool = False
    reason: str | None = None  # why a stream ended early (the server is shutting down)
    count: int | None = None  # ids received so far (with ?usage=true or ?model=)
    usage: StreamUsage | None = None  # on the last line (with ?usage=true or ?model=)


class TokenizerInfoResponse(_Response, frozen=True):
    name: str
    version: str
    ref: str
    default: bool
    sha256: str
    rule: Literal["pairs", "ranks"]
    vocab_size: Annotated[int, Meta(description="defined ids, special tokens included")]
    special_tokens: dict[str, int]
    normalization: str
    pattern: str | None
    self_consistent: bool
    description: str
    source: str
    license: str
    created: str


class TokenizerListResponse(_Response, frozen=True):
    tokenizers: list[TokenizerInfoResponse]


class HealthResponse(_Response, frozen=True):
    status: str
    tokenizers: int | None = None
    failures: list[str] | None = None


class ProblemResponse(Struct, frozen=True, kw_only=True):
    """RFC 9457 problem details; extension members (`token`, `ids`, `offset`) name the facts."""

    type: str
    title: str
    status: int
    detail: str


class ReloadResponse(_Response, frozen=True):
    status: str
    tokenizers: int | None = None
