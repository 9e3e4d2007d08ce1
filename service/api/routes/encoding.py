"""Encode and count: one text or a batch, with tiktoken's special-token policy.

What each answers is defined once (`encoded`, `counted`); the routes' handlers answer with it, and
so does their hot path (`routes.hot_path`), which serves a plain success without Litestar's
per-request machinery and hands everything else to these handlers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from litestar.params import JSONBody

from service.api import metrics
from service.api import pieces as token_pieces
from service.api.bodies import exactly_one
from service.api.budget import check_output, run_work
from service.api.dependencies import TokenizerDep, WorkerDep
from service.api.openapi import json_post
from service.api.routes.catalog import ref_of
from service.api.wire.tokens import (
    CountRequest,
    CountResponse,
    EncodeRequest,
    EncodeResponse,
    EncodeResult,
    PieceBytes,
    SpecialList,
    TextsRequest,
)
from service.bpe import SpecialSet
from service.settings import Settings
from service.store.registry import LoadedTokenizer

R = TypeVar("R")
PIECES_COST = 4  # work per character with pieces or offsets, against plain encoding


def special_set(value: SpecialList) -> SpecialSet:
    return "all" if value == "all" else frozenset(value)


async def _per_text(
    data: TextsRequest, apply: Callable[..., Any], then: Callable[[list[Any]], R], cost: int = 1
) -> tuple[list[str], R]:
    """Apply `encode` or `count` (bound to a tokenizer) to each text of the request, with its
    special-token policy, then `then` to the results, in the same work (`cost`: its size per
    character of text, for `run_work`)."""
    exactly_one(data.text, data.texts, "`text` or `texts`")
    texts = [data.text] if data.text is not None else data.texts or []
    allowed, disallowed = special_set(data.allowed_special), special_set(data.disallowed_special)

    def work() -> R:
        return then(
            [apply(x, allowed_special=allowed, disallowed_special=disallowed) for x in texts]
        )

    return texts, await run_work(sum(map(len, texts)) * cost, lambda _: work())


Extras = tuple[list[str | PieceBytes] | None, list[tuple[int, int]] | None]


async def encoded(
    tokenizer: LoadedTokenizer, data: EncodeRequest, settings: Settings
) -> EncodeResponse:
    """What encode answers for `data`: the route's handler and its hot path (`routes.hot_path`)
    both answer with this. Pieces and offsets are built in the work that encodes, once their size
    is known to fit TOKSVC_MAX_OUTPUT_BYTES (`wire.pieces`). The metrics are recorded last, once
    the answer is built: a request that fails has recorded nothing."""
    tok = tokenizer.tokenizer
    wanted = data.pieces or data.offsets != "none"

    def with_extras(results: list[list[int]]) -> tuple[list[list[int]], list[Extras]]:
        if not wanted:
            return results, [(None, None)] * len(results)
        size = sum(token_pieces.wire_size(tok, ids, data.pieces, data.offsets) for ids in results)
        check_output(settings, size, "bytes of pieces and offsets per request")
        extras = [token_pieces.extras(tok, ids, data.pieces, data.offsets) for ids in results]
        return results, extras

    texts, (results, extras) = await _per_text(
        data, tok.encode, with_extras, cost=PIECES_COST if wanted else 1
    )
    if data.add_special_tokens:
        framed = [_framed(tokenizer, ids, ex) for ids, ex in zip(results, extras, strict=True)]
        results, extras = [f[0] for f in framed], [f[1] for f in framed]
    if data.text is not None:
        answer = EncodeResponse(
            tokenizer=ref_of(tokenizer),
            ids=results[0],
            count=len(results[0]),
            pieces=extras[0][0],
            offsets=extras[0][1],
        )
    else:
        answer = EncodeResponse(
            tokenizer=ref_of(tokenizer),
            results=[
                EncodeResult(ids=ids, count=len(ids), pieces=p, offsets=o)
                for ids, (p, o) in zip(results, extras, strict=True)
            ],
        )
    metrics.record(tokenizer.ref, "encode", sum(map(len, results)), texts)
    return answer


def _framed(tokenizer: LoadedTokenizer, ids: list[int], extras: Any) -> Any:
    """`ids` with the model's template ids around them; their pieces are their literals and
    their offsets empty, at the start or the end of the text."""
    pipeline = tokenizer.tokenizer.pipeline
    if not (pipeline.prefix or pipeline.suffix):
        return ids, extras
    before, after = list(pipeline.prefix), list(pipeline.suffix)
    pieces, offsets = extras
    if pieces is not None:
        head = token_pieces.extras(tokenizer.tokenizer, before, True, "none")[0] or []
        tail = token_pieces.extras(tokenizer.tokenizer, after, True, "none")[0] or []
        pieces = [*head, *pieces, *tail]
    if offsets is not None:
        end = offsets[-1][1] if offsets else 0
        offsets = [*([(0, 0)] * len(before)), *offsets, *([(end, end)] * len(after))]
    return [*before, *ids, *after], (pieces, offsets)


async def counted(
    tokenizer: LoadedTokenizer, data: CountRequest, settings: Settings
) -> CountResponse:
    """What count answers for `data` (shared as `encoded` is)."""
    texts, counts = await _per_text(data, tokenizer.tokenizer.count, lambda counts: counts)
    pipeline = tokenizer.tokenizer.pipeline
    if data.add_special_tokens:
        counts = [c + len(pipeline.prefix) + len(pipeline.suffix) for c in counts]
    total = sum(counts)
    if data.text is not None:
        answer = CountResponse(tokenizer=ref_of(tokenizer), count=counts[0])
    else:
        answer = CountResponse(tokenizer=ref_of(tokenizer), counts=counts, total=total)
    metrics.record(tokenizer.ref, "count", total, texts)
    return answer


@json_post(
    "/v1/tokenizers/{ref:str}/encode",
    name="encode",
    tag="encode and count",
    summary="Encode text to token ids",
    returns="the ids, and the vocabulary that produced them",
)
async def encode(
    tokenizer: TokenizerDep, worker: WorkerDep, data: JSONBody[EncodeRequest]
) -> EncodeResponse:
    """`text` gives `ids` and `count`; `texts` gives `results`, one per text, in order. A
    special-token literal in a text is a 422 unless `allowed_special` lists it (it becomes its
    special id) or `disallowed_special` is `[]` (it is encoded as plain text)."""
    return await encoded(tokenizer, data, worker.settings)


@json_post(
    "/v1/tokenizers/{ref:str}/count",
    name="count",
    tag="encode and count",
    summary="Count the tokens of text",
    returns="the counts, and the vocabulary that counted",
)
async def count(
    tokenizer: TokenizerDep, worker: WorkerDep, data: JSONBody[CountRequest]
) -> CountResponse:
    """The number of ids encode would return, with the same special-token policy: `text` gives
    `count`; `texts` gives `counts`, one per text, and their `total`."""
    return await counted(tokenizer, data, worker.settings)


ROUTES = [encode, count]
