"""What the service answers, as typed msgspec Structs (docs/api.md of the service). Unknown members
are ignored, so a newer server that adds fields keeps working with this client."""

from __future__ import annotations

from typing import Any

from msgspec import Struct


class TokenizerRef(Struct, frozen=True):
    """The exact vocabulary file that produced a result."""

    name: str
    version: str
    sha256: str


class TokenizerInfo(Struct, frozen=True, kw_only=True):
    """A served tokenizer. `vocab_size` counts the ids defined; `n_vocab` is tiktoken's (the
    highest id + 1), None from a server that predates it."""

    name: str
    version: str
    ref: str
    default: bool
    sha256: str
    rule: str
    vocab_size: int
    special_tokens: dict[str, int]
    n_vocab: int | None = None
    normalization: str = "none"
    pattern: str | None = None


class TokenizerList(Struct, frozen=True):
    tokenizers: list[TokenizerInfo]


class IdsResult(Struct, frozen=True):
    ids: list[int]
    count: int


class EncodeAnswer(Struct, frozen=True):
    ids: list[int] | None = None
    results: list[IdsResult] | None = None


class CountAnswer(Struct, frozen=True):
    count: int | None = None
    counts: list[int] | None = None


class DecodeResult(Struct, frozen=True):
    text: str | None = None
    base64: bytes | None = None


class DecodeAnswer(Struct, frozen=True):
    text: str | None = None
    base64: bytes | None = None
    results: list[DecodeResult] | None = None


class StepAnswer(Struct, frozen=True):
    """One `decode/step`: the text it completed and the state for the next one; `stopped` and
    `stop` once a stop string completed (servers with stop strings)."""

    text: str
    state: str
    stopped: bool = False
    stop: str | None = None


class Prices(Struct, frozen=True, kw_only=True):
    currency: str
    input_per_million: str
    output_per_million: str
    price_file: str
    cached_input_per_million: str | None = None


class ModelInfo(Struct, frozen=True, kw_only=True):
    """A served model profile."""

    name: str
    version: str
    ref: str
    default: bool
    aliases: list[str]
    tokenizer: str
    chat_format: str
    exact: bool
    context_window: int
    max_output_tokens: int
    prices: Prices | None = None


class ModelList(Struct, frozen=True):
    models: list[ModelInfo]


class ModelRef(Struct, frozen=True):
    name: str
    version: str
    sha256: str


class MessageTokens(Struct, frozen=True, kw_only=True):
    index: int
    role: str
    tokens: int
    merged_with_next: bool = False


class ChatCount(Struct, frozen=True, kw_only=True):
    """A conversation's input tokens: `messages`, `tools_tokens` and `overhead` add up to
    `input_tokens`; `exact` is false for an estimate."""

    input_tokens: int
    messages: list[MessageTokens]
    tools_tokens: int
    overhead: dict[str, int]
    exact: bool
    method: str
    model: ModelRef
    tokenizer: TokenizerRef
    template_sha256: str | None = None
    text: str | None = None
    ids: list[int] | None = None


class Costs(Struct, frozen=True):
    """Decimal strings (use `decimal.Decimal`, never float)."""

    input: str
    cached_input: str
    output: str
    total: str


class Estimate(Struct, frozen=True, kw_only=True):
    input_tokens: int
    cached_input_tokens: int
    output_tokens: int
    exact: bool
    method: str
    cost: Costs
    currency: str
    price_file: str
    context_window: int
    remaining_context: int
    model: ModelRef
    tokenizer: TokenizerRef


class Truncation(Struct, frozen=True, kw_only=True):
    """The kept text, its tokens and where it lies in the input (code points, end exclusive)."""

    text: str
    count: int
    truncated: bool
    start: int
    end: int


class Chunk(Struct, frozen=True, kw_only=True):
    text: str
    start: int
    end: int
    count: int


class ChunkList(Struct, frozen=True):
    chunks: list[Chunk]


Json = dict[str, Any]
