"""Request and response bodies of the model, estimate and text-budget routes (strict Structs)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from msgspec import Meta

from service.api.wire import TokenizerRef, _Request, _Response

Tokens = Annotated[int, Meta(ge=0)]


class PriceInfo(_Response, frozen=True):
    currency: str
    input_per_million: str
    output_per_million: str
    source: str
    read_on: str
    price_file: str
    price_file_sha256: str
    cached_input_per_million: str | None = None


class ModelInfo(_Response, frozen=True):
    name: str
    version: str
    ref: str
    default: bool
    sha256: str
    aliases: list[str]
    tokenizer: str
    chat_format: str
    exact: bool
    context_window: int
    max_output_tokens: int
    description: str
    source: str
    template_sha256: str | None = None
    prices: PriceInfo | None = None


class ModelListResponse(_Response, frozen=True):
    models: list[ModelInfo]


class ModelRef(_Response, frozen=True):
    name: str
    version: str
    sha256: str


class ChatCountRequest(_Request, frozen=True):
    """OpenAI-style messages (role, content, name, tool_calls, tool_call_id, reasoning_content)
    and tools; each message is checked on its own so a problem names its index."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None = None
    add_generation_prompt: bool = True
    chat_template_kwargs: dict[str, Any] | None = None
    return_text: bool = False
    return_ids: bool = False
    breakdown: bool = True  # false: the total only, one rendering (messages empty)


class MessageTokens(_Response, frozen=True):
    index: int
    role: str
    tokens: int
    merged_with_next: bool = False


class ChatCountResponse(_Response, frozen=True):
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


class EstimateRequest(_Request, frozen=True):
    """A conversation (`messages`, `tools`) or a `text`; `max_output_tokens` (default: the
    model's maximum) or `output_tokens` (an expected count); `cached_input_tokens` of the input
    served by a prompt cache."""

    messages: list[dict[str, Any]] | None = None
    tools: list[dict[str, Any]] | None = None
    text: str | None = None
    add_generation_prompt: bool = True
    chat_template_kwargs: dict[str, Any] | None = None
    max_output_tokens: Tokens | None = None
    output_tokens: Tokens | None = None
    cached_input_tokens: Tokens = 0


class Costs(_Response, frozen=True):
    input: str
    cached_input: str
    output: str
    total: str


class EstimateResponse(_Response, frozen=True):
    input_tokens: int
    cached_input_tokens: int
    output_tokens: int
    exact: bool
    method: str
    cost: Costs
    currency: str
    price_file: str
    price_file_sha256: str
    context_window: int
    remaining_context: int
    model: ModelRef
    tokenizer: TokenizerRef


class TruncateRequest(_Request, frozen=True):
    text: str
    max_tokens: Tokens
    keep: Literal["start", "end"] = "start"


class TruncateResponse(_Response, frozen=True):
    text: str
    count: int
    truncated: bool
    start: int
    end: int
    tokenizer: TokenizerRef


class ChunkRequest(_Request, frozen=True):
    text: str
    max_tokens: Annotated[int, Meta(ge=1)]
    overlap: Tokens = 0


class ChunkOut(_Response, frozen=True):
    text: str
    start: int
    end: int
    count: int


class ChunkResponse(_Response, frozen=True):
    chunks: list[ChunkOut]
    tokenizer: TokenizerRef
