"""Encode and count: one text or a batch, with tiktoken's special-token policy."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from litestar.params import JSONBody

from service.api import metrics, token_pieces
from service.api.bodies import exactly_one
from service.api.budget import check_items, run_work
from service.api.catalog import ref_of
from service.api.dependencies import SettingsDep, TokenizerDep
from service.api.openapi import json_post
from service.api.wire import (
    CountRequest,
    CountResponse,
    EncodeRequest,
    EncodeResponse,
    EncodeResult,
    SpecialList,
    TextsRequest,
)
from service.bpe import SpecialSet
from service.settings import Settings


def special_set(value: SpecialList) -> SpecialSet:
    return "all" if value == "all" else frozenset(value)


def _texts(settings: Settings, data: TextsRequest) -> list[str]:
    exactly_one(data.text, data.texts, "`text` or `texts`")
    texts = [data.text] if data.text is not None else data.texts or []
    check_items(settings, len(texts))
    return texts


async def _per_text(
    settings: Settings, data: TextsRequest, apply: Callable[..., Any]
) -> tuple[list[str], list[Any]]:
    """Apply `encode` or `count` (bound to a tokenizer) to each text of the request, with its
    special-token policy."""
    texts = _texts(settings, data)
    allowed, disallowed = special_set(data.allowed_special), special_set(data.disallowed_special)

    def work() -> list[Any]:
        return [apply(x, allowed_special=allowed, disallowed_special=disallowed) for x in texts]

    return texts, await run_work(sum(map(len, texts)), work)


@json_post("/v1/tokenizers/{ref:str}/encode", name="encode", tag="encode and count",
           summary="Encode text to token ids",
           returns="the ids, and the vocabulary that produced them")  # fmt: skip
async def encode(tokenizer: TokenizerDep, settings: SettingsDep,
                 data: JSONBody[EncodeRequest]) -> EncodeResponse:  # fmt: skip
    """`text` gives `ids` and `count`; `texts` gives `results`, one per text, in order. A
    special-token literal in a text is a 422 unless `allowed_special` lists it (it becomes its
    special id) or `disallowed_special` is `[]` (it is encoded as plain text)."""
    texts, results = await _per_text(settings, data, tokenizer.tokenizer.encode)
    metrics.record(tokenizer.ref, "encode", sum(map(len, results)), texts)
    extras = [
        token_pieces.extras(tokenizer.tokenizer, ids, data.pieces, data.offsets) for ids in results
    ]
    if data.text is not None:
        return EncodeResponse(tokenizer=ref_of(tokenizer), ids=results[0], count=len(results[0]),
                              pieces=extras[0][0], offsets=extras[0][1])  # fmt: skip
    return EncodeResponse(tokenizer=ref_of(tokenizer), results=[
        EncodeResult(ids=ids, count=len(ids), pieces=p, offsets=o)
        for ids, (p, o) in zip(results, extras, strict=True)])  # fmt: skip


@json_post("/v1/tokenizers/{ref:str}/count", name="count", tag="encode and count",
           summary="Count the tokens of text",
           returns="the counts, and the vocabulary that counted")  # fmt: skip
async def count(tokenizer: TokenizerDep, settings: SettingsDep,
                data: JSONBody[CountRequest]) -> CountResponse:  # fmt: skip
    """The number of ids encode would return, with the same special-token policy: `text` gives
    `count`; `texts` gives `counts`, one per text, and their `total`."""
    texts, counts = await _per_text(settings, data, tokenizer.tokenizer.count)
    total = sum(counts)
    metrics.record(tokenizer.ref, "count", total, texts)
    if data.text is not None:
        return CountResponse(tokenizer=ref_of(tokenizer), count=counts[0])
    return CountResponse(tokenizer=ref_of(tokenizer), counts=counts, total=total)


ROUTES = [encode, count]
