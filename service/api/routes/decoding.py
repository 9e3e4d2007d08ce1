"""Decode ids to text (or bytes), and the stateless streaming step."""

from __future__ import annotations

from functools import partial

from litestar.params import JSONBody

from service.api import metrics
from service.api.bodies import exactly_one
from service.api.budget import check_output, run_work
from service.api.dependencies import TokenizerDep, WorkerDep
from service.api.openapi import json_post
from service.api.routes.catalog import ref_of
from service.api.routes.streams.session import assembly_limits
from service.api.wire.tokens import (
    DecodeRequest,
    DecodeResponse,
    DecodeResult,
    DecodeStepRequest,
    DecodeStepResponse,
)
from service.bpe import Tokenizer
from service.bpe.stream.options import assembler_for
from service.settings import Settings


@json_post(
    "/v1/tokenizers/{ref:str}/decode",
    name="decode",
    tag="decode",
    summary="Decode token ids to text",
    returns="the text (or bytes), and the vocabulary that decoded",
)
async def decode(
    tokenizer: TokenizerDep, worker: WorkerDep, data: JSONBody[DecodeRequest]
) -> DecodeResponse:
    """`ids` gives `text`; `batch` gives `results`, one per id list, in order. Ids that are not in
    the vocabulary are a 422 naming them; bytes that are not valid UTF-8 are a 422 (`errors:
    strict`, the default) or U+FFFD (`errors: replace`). `output: "base64"` returns the raw
    bytes instead."""
    exactly_one(data.ids, data.batch, "`ids` or `batch`")
    batch = [data.ids] if data.ids is not None else data.batch or []
    n_ids = sum(map(len, batch))
    if data.skip_special_tokens:
        special = tokenizer.tokenizer.skipped_ids
        batch = [[i for i in ids if i not in special] for ids in batch]
    work = partial(_decode_all, tokenizer.tokenizer, batch, data, worker.settings)
    results = await run_work(n_ids * 4, lambda _: work())
    metrics.record(tokenizer.ref, "decode", n_ids, [r.text or r.base64 or b"" for r in results])
    if data.ids is not None:
        return DecodeResponse(
            tokenizer=ref_of(tokenizer), text=results[0].text, base64=results[0].base64
        )
    return DecodeResponse(tokenizer=ref_of(tokenizer), results=results)


def _decode_all(
    tok: Tokenizer, batch: list[list[int]], data: DecodeRequest, settings: Settings
) -> list[DecodeResult]:
    """The output budget is checked before any output is built (base64 grows it by 4/3)."""
    size = sum(map(tok.decoded_size, batch))
    check_output(settings, size * 4 // 3 + 4 if data.output == "base64" else size)
    if data.output == "base64":
        return [DecodeResult(base64=tok.decode_bytes(ids)) for ids in batch]
    return [DecodeResult(text=tok.decode(ids, data.errors)) for ids in batch]


@json_post(
    "/v1/tokenizers/{ref:str}/decode/step",
    name="decode_stream",
    tag="streaming",
    summary="Streaming decode, one stateless step",
    returns="the completed text and the next state",
)
async def decode_step(
    tokenizer: TokenizerDep, worker: WorkerDep, data: JSONBody[DecodeStepRequest]
) -> DecodeStepResponse:
    """Send the ids generated since the last step and the `state` the last step returned (null to
    start); get the text that became whole and the next `state`. Bytes of an unfinished
    character are held back in the state; `"final": true` flushes them. Any replica can serve
    the next step."""
    settings = worker.settings
    limits = assembly_limits(settings)

    def step() -> tuple[str, str, str | None]:
        tok = tokenizer.tokenizer
        check_output(settings, tok.decoded_size(data.ids))
        assembler = assembler_for(tok, data.assembly(), limits, data.errors, data.state)
        text = assembler.decode(data.ids)
        text = text + assembler.flush() if data.final else text
        return text, assembler.state(), assembler.stopped

    n_ids = len(data.ids) + len(data.prompt_ids or ())
    text, decoder_state, stop = await run_work(n_ids * 4, lambda _: step())
    metrics.record(tokenizer.ref, "decode_stream", len(data.ids), [text])
    return DecodeStepResponse(
        text=text,
        state=decoder_state,
        tokenizer=ref_of(tokenizer),
        stopped=stop is not None,
        stop=stop,
    )


ROUTES = [decode, decode_step]
