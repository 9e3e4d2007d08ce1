"""Bodies of the text-budget routes: truncate and chunk (`service.api.routes.textops`)."""

from __future__ import annotations

from typing import Annotated, Literal

from msgspec import Meta

from service.api.wire.models import Tokens
from service.api.wire.tokens import RequestBody, ResponseBody, TokenizerRef, doc


class TruncateRequest(RequestBody, frozen=True):
    """A text to cut to at most `max_tokens` tokens, keeping its start or its end."""

    text: Annotated[str, doc("the text (special-token literals count as ordinary text)", "Hi")]
    max_tokens: Annotated[Tokens, doc("at most this many tokens", 2)]
    keep: Annotated[
        Literal["start", "end"], doc("keep the longest prefix (`start`) or suffix (`end`)")
    ] = "start"


class TruncateResponse(ResponseBody, frozen=True):
    """The kept text, its token count and where it lies in the input."""

    text: Annotated[str, doc("the kept text", "How are")]
    count: Annotated[int, doc("its tokens (at most `max_tokens`)", 2)]
    truncated: Annotated[bool, doc("whether anything was cut")]
    start: Annotated[int, doc("where the kept text starts in the input (code points)", 0)]
    end: Annotated[int, doc("where it ends, exclusive (code points)", 7)]
    tokenizer: TokenizerRef  # described by TokenizerRef (a field description would wrap the $ref)


class ChunkRequest(RequestBody, frozen=True):
    """A text to cover with chunks of at most `max_tokens` tokens, optionally overlapping."""

    text: Annotated[str, doc("the text (special-token literals count as ordinary text)", "Hi")]
    max_tokens: Annotated[int, Meta(ge=1), doc("at most this many tokens per chunk", 4)]
    overlap: Annotated[
        Tokens, doc("each chunk after the first repeats at most this many tokens of the last", 1)
    ] = 0


class ChunkOut(ResponseBody, frozen=True):
    """One chunk: its text, where it lies in the input, and its tokens."""

    text: Annotated[str, doc("the chunk's text", "Hello, world.")]
    start: Annotated[int, doc("where it starts in the input (code points)", 0)]
    end: Annotated[int, doc("where it ends, exclusive (code points)", 13)]
    count: Annotated[int, doc("its tokens (at most `max_tokens`)", 4)]


class ChunkResponse(ResponseBody, frozen=True):
    """The chunks, in order; together they cover the text."""

    chunks: Annotated[list[ChunkOut], doc("the chunks, in order")]
    tokenizer: TokenizerRef  # described by TokenizerRef (a field description would wrap the $ref)
