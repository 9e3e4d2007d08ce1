"""Text budgets over HTTP: truncate to at most N tokens, chunk into pieces of at most N tokens."""

from __future__ import annotations

from litestar.params import JSONBody

from service.api.budget import check_output, run_work
from service.api.dependencies import TokenizerDep, WorkerDep
from service.api.openapi import json_post
from service.api.routes.catalog import ref_of
from service.api.wire import textops as wire
from service.bpe.text import budgets


@json_post(
    "/v1/tokenizers/{ref:str}/truncate",
    name="truncate",
    tag="text budgets",
    summary="Truncate text to a token budget",
    returns="the kept text, its count and offsets",
)
async def truncate(
    tokenizer: TokenizerDep, data: JSONBody[wire.TruncateRequest]
) -> wire.TruncateResponse:
    """The longest prefix (`keep: start`, the default) or suffix (`keep: end`) of whole characters
    that encodes to at most `max_tokens` tokens, with its count and its [start, end) in the text in
    code points. Special-token literals count as ordinary text."""
    cut = await run_work(
        len(data.text),
        lambda d: budgets.truncate(tokenizer.tokenizer, data.text, data.max_tokens, data.keep, d),
    )
    return wire.TruncateResponse(
        text=cut.text,
        count=cut.count,
        truncated=cut.truncated,
        start=cut.start,
        end=cut.end,
        tokenizer=ref_of(tokenizer),
    )


@json_post(
    "/v1/tokenizers/{ref:str}/chunk",
    name="chunk",
    tag="text budgets",
    summary="Split text into token-bounded chunks",
    returns="the chunks, in order",
)
async def chunk(
    tokenizer: TokenizerDep, worker: WorkerDep, data: JSONBody[wire.ChunkRequest]
) -> wire.ChunkResponse:
    """Chunks of at most `max_tokens` tokens that cover the text, in order, with code point offsets;
    each chunk after the first repeats the longest end of the previous one with at most `overlap`
    tokens. Special-token literals count as ordinary text. The answer is held to
    `TOKSVC_MAX_OUTPUT_BYTES` as the chunks are cut (413 past it)."""
    limit = worker.settings.max_output_bytes
    cuts = await run_work(
        len(data.text),
        lambda d: budgets.chunk(
            tokenizer.tokenizer, data.text, data.max_tokens, data.overlap, d, max_bytes=limit
        ),
    )
    # held to the limit as it was cut; a large answer takes a large-request slot as it is sent
    check_output(worker.settings, sum(budgets.CHUNK_BYTES + len(c.text) for c in cuts))
    return wire.ChunkResponse(
        chunks=[wire.ChunkOut(text=c.text, start=c.start, end=c.end, count=c.count) for c in cuts],
        tokenizer=ref_of(tokenizer),
    )


ROUTES = [truncate, chunk]
