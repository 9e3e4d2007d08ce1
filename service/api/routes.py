"""The request/response endpoints: tokenizers, encode, count, decode, decode/step, probes."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from litestar import Response, get, post
from litestar.exceptions import ValidationException
from litestar.params import JSONBody

from service.api import lifecycle, metrics, problems, token_pieces
from service.api.bodies import strict_body
from service.api.budget import check_items, check_output, run_work
from service.api.openapi import operation
from service.api.wire import (
    CountRequest,
    CountResponse,
    DecodeRequest,
    DecodeResponse,
    DecodeResult,
    DecodeStepRequest,
    DecodeStepResponse,
    EncodeRequest,
    EncodeResponse,
    EncodeResult,
    HealthResponse,
    SpecialList,
    TextsRequest,
    TokenizerInfoResponse,
    TokenizerListResponse,
    TokenizerRef,
)
from service.api.worker import Worker
from service.bpe import SpecialSet, StreamDecoder, Tokenizer
from service.errors import NotReadyError
from service.settings import Settings
from service.store.engines import native_missing_warning
from service.store.registry import LoadedTokenizer, Registry

# --- shared helpers ----------------------------------------------------------------------------


def ref_of(t: LoadedTokenizer) -> TokenizerRef:
    return TokenizerRef(name=t.name, version=t.version, sha256=t.sha256)


def special_set(value: SpecialList) -> SpecialSet:
    return "all" if value == "all" else frozenset(value)


def exactly_one(a: object, b: object, names: str) -> None:
    if (a is None) == (b is None):
        raise ValidationException(f"give exactly one of {names}")


# --- tokenizers and probes ----------------------------------------------------------------


def info_of(t: LoadedTokenizer) -> TokenizerInfoResponse:
    m = t.metadata
    return TokenizerInfoResponse(
        name=t.name, version=t.version, ref=t.ref, default=t.is_default, sha256=t.sha256,
        rule=t.rule, vocab_size=t.tokenizer.n_vocab, special_tokens=t.tokenizer.special_tokens,
        normalization=t.normalization, pattern=t.pattern, self_consistent=t.self_consistent,
        description=m.description, source=m.source, license=m.license, created=m.created,
    )  # fmt: skip


@get("/v1/tokenizers", opt={"operation": "list"}, sync_to_thread=False,
     responses=problems.documented(503), tags=["tokenizers"], summary="List the tokenizers",
     description="Every loaded tokenizer file (every version of every name) with its metadata.",
     response_description="the loaded tokenizers", operation_class=operation())  # fmt: skip
def list_tokenizers(registry: Registry) -> TokenizerListResponse:
    return TokenizerListResponse(tokenizers=[info_of(t) for t in registry])


@get("/v1/tokenizers/{ref:str}", opt={"operation": "info"}, sync_to_thread=False,
     responses=problems.documented(400, 404, 503), tags=["tokenizers"],
     summary="Describe one tokenizer", description="The metadata of the file `{ref}` resolves "
     "to: exact version, sha256, merge rule, special tokens, pattern and provenance.",
     response_description="the tokenizer", operation_class=operation())  # fmt: skip
def get_tokenizer(tokenizer: LoadedTokenizer) -> TokenizerInfoResponse:
    return info_of(tokenizer)


@get("/healthz", opt={"operation": "health"}, sync_to_thread=False, tags=["probes"],
     summary="Liveness", description="200 while the process runs, even while the store loads.",
     response_description="alive")  # fmt: skip
def healthz() -> HealthResponse:
    return HealthResponse(status="ok")


@get("/readyz", opt={"operation": "health"}, sync_to_thread=False,
     responses=problems.documented(503), tags=["probes"], summary="Readiness",
     description="200 once the store is loaded and this worker serves; 503 (problem, with "
     "`Retry-After` and the files that failed) before that.",
     response_description="ready to serve")  # fmt: skip
def readyz(worker: Worker) -> Response[Any]:
    """Ready only when every file of every store loaded: a replica that serves part of the store
    must not take traffic beside replicas that serve all of it (during a rollout, say)."""
    registry = worker.registry
    if registry is None or not registry.complete:
        reasons = [str(f) for f in registry.failures] if registry is not None else []
        detail = (f"{len(reasons)} store file(s) failed to load; this worker serves the others but "
                  "is not ready" if reasons and registry and len(registry)
                  else str(NotReadyError()))  # fmt: skip
        doc = problems.problem(503, "not-ready", "Not ready", detail, failures=reasons)
        return problems.response(doc, {"Retry-After": "1"})
    warning = native_missing_warning()  # ready, but slow: say so where operators look
    workers, loaded = lifecycle.workers_loaded(worker)
    return Response(HealthResponse(status="ready", tokenizers=len(registry),
                                   engine="python" if warning else "native",
                                   warnings=[warning] if warning else None,
                                   workers=workers, workers_loaded=loaded))  # fmt: skip


# --- encode and count ---------------------------------------------------------------------


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


@post(
    "/v1/tokenizers/{ref:str}/encode",
    status_code=200,
    opt={"operation": "encode", "body": EncodeRequest},
    before_request=strict_body,
    responses=problems.documented(400, 404, 408, 413, 422, 503),
    tags=["encode and count"],
    summary="Encode text to token ids",
    description="`text` gives `ids` and `count`; `texts` gives `results`, one per text, in "
    "order. A special-token literal in a text is a 422 unless `allowed_special` lists it (it "
    "becomes its special id) or `disallowed_special` is `[]` (it is encoded as plain text).",
    response_description="the ids, and the vocabulary that produced them",
    operation_class=operation(EncodeRequest),
)
async def encode(
    tokenizer: LoadedTokenizer, settings: Settings, data: JSONBody[EncodeRequest]
) -> EncodeResponse:
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


@post(
    "/v1/tokenizers/{ref:str}/count",
    status_code=200,
    opt={"operation": "count", "body": CountRequest},
    before_request=strict_body,
    responses=problems.documented(400, 404, 408, 413, 422, 503),
    tags=["encode and count"],
    summary="Count the tokens of text",
    description="The number of ids encode would return, with the same special-token policy: "
    "`text` gives `count`; `texts` gives `counts`, one per text, and their `total`.",
    response_description="the counts, and the vocabulary that counted",
    operation_class=operation(CountRequest),
)
async def count(
    tokenizer: LoadedTokenizer, settings: Settings, data: JSONBody[CountRequest]
) -> CountResponse:
    texts, counts = await _per_text(settings, data, tokenizer.tokenizer.count)
    total = sum(counts)
    metrics.record(tokenizer.ref, "count", total, texts)
    if data.text is not None:
        return CountResponse(tokenizer=ref_of(tokenizer), count=counts[0])
    return CountResponse(tokenizer=ref_of(tokenizer), counts=counts, total=total)


# --- decode ------------------------------------------------------------------------------------


@post(
    "/v1/tokenizers/{ref:str}/decode",
    status_code=200,
    opt={"operation": "decode", "body": DecodeRequest},
    before_request=strict_body,
    responses=problems.documented(400, 404, 408, 413, 422, 503),
    tags=["decode"],
    summary="Decode token ids to text",
    description="`ids` gives `text`; `batch` gives `results`, one per id list, in order. "
    "Ids that are not in the vocabulary are a 422 naming them; bytes that are not valid UTF-8 "
    "are a 422 (`errors: strict`, the default) or U+FFFD (`errors: replace`). "
    '`output: "base64"` returns the raw bytes instead.',
    response_description="the text (or bytes), and the vocabulary that decoded",
    operation_class=operation(DecodeRequest),
)
async def decode(
    tokenizer: LoadedTokenizer, settings: Settings, data: JSONBody[DecodeRequest]
) -> DecodeResponse:
    exactly_one(data.ids, data.batch, "`ids` or `batch`")
    batch = [data.ids] if data.ids is not None else data.batch or []
    n_ids = sum(map(len, batch))
    check_items(settings, len(batch), n_ids)
    if data.skip_special_tokens:
        special = set(tokenizer.tokenizer.special_tokens.values())
        batch = [[i for i in ids if i not in special] for ids in batch]
    work = partial(_decode_all, tokenizer.tokenizer, batch, data, settings)
    results = await run_work(n_ids * 4, work)
    metrics.record(tokenizer.ref, "decode", n_ids, [r.text or r.base64 or b"" for r in results])
    if data.ids is not None:
        return DecodeResponse(tokenizer=ref_of(tokenizer), text=results[0].text,
                              base64=results[0].base64)  # fmt: skip
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


@post(
    "/v1/tokenizers/{ref:str}/decode/step",
    status_code=200,
    opt={"operation": "decode_stream", "body": DecodeStepRequest},
    before_request=strict_body,
    responses=problems.documented(400, 404, 408, 413, 422, 503),
    tags=["streaming"],
    summary="Streaming decode, one stateless step",
    description="Send the ids generated since the last step and the `state` the last step "
    "returned (null to start); get the text that became whole and the next `state`. Bytes of "
    'an unfinished character are held back in the state; `"final": true` flushes them. Any '
    "replica can serve the next step.",
    response_description="the completed text and the next state",
    operation_class=operation(DecodeStepRequest),
)
async def decode_step(
    tokenizer: LoadedTokenizer, settings: Settings, data: JSONBody[DecodeStepRequest]
) -> DecodeStepResponse:
    """Stateless streaming decode: the returned `state` carries the held-back bytes."""
    check_items(settings, 1, len(data.ids))

    def step() -> tuple[str, str]:
        check_output(settings, tokenizer.tokenizer.decoded_size(data.ids))
        decoder = StreamDecoder.resume(tokenizer.tokenizer.decode_bytes, data.state, data.errors)
        text = decoder.decode(data.ids)
        return (text + decoder.flush() if data.final else text), decoder.state()

    text, decoder_state = await run_work(len(data.ids) * 4, step)
    metrics.record(tokenizer.ref, "decode_stream", len(data.ids), [text])
    return DecodeStepResponse(text=text, state=decoder_state, tokenizer=ref_of(tokenizer))


ROUTES = [list_tokenizers, get_tokenizer, healthz, readyz, encode, count, decode, decode_step]
