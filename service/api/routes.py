"""The request/response endpoints: tokenizers, encode, count, decode, decode/step, probes."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

import anyio
import anyio.to_thread
import msgspec
from litestar import Request, Response, get, post
from litestar.datastructures import State
from litestar.exceptions import ValidationException
from litestar.params import FromPath, JSONBody

from service.api import metrics, problems, token_pieces
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
from service.bpe import SpecialSet, StreamDecoder, Tokenizer
from service.errors import (
    LimitExceededError,
    NotReadyError,
    RequestTimeoutError,
    SurrogateError,
)
from service.settings import Settings
from service.store.registry import LoadedTokenizer, Registry

T = TypeVar("T")
INLINE_WORK_BYTES = 16 * 1024  # smaller requests run on the event loop; larger ones in a thread


# --- shared helpers ----------------------------------------------------------------------------


def registry_of(state: State) -> Registry:
    registry: Registry | None = state.registry
    if registry is None or not len(registry):
        raise NotReadyError()
    return registry


def resolve(state: State, ref: str) -> LoadedTokenizer:
    return registry_of(state).resolve(ref)


def ref_of(t: LoadedTokenizer) -> TokenizerRef:
    return TokenizerRef(name=t.name, version=t.version, sha256=t.sha256)


async def run_work(size: int, fn: Callable[[], T]) -> T:
    """Run small work inline and large work in a worker thread, so a megabyte of text never blocks
    the event loop and a 200-byte request never pays for a thread hop."""
    if size <= INLINE_WORK_BYTES:
        return fn()
    return await anyio.to_thread.run_sync(fn)


def special_set(value: SpecialList) -> SpecialSet:
    return "all" if value == "all" else frozenset(value)


def exactly_one(a: object, b: object, names: str) -> None:
    if (a is None) == (b is None):
        raise ValidationException(f"give exactly one of {names}")


def check_items(settings: Settings, n_items: int, n_ids: int = 0) -> None:
    if n_items > settings.max_batch_items:
        raise LimitExceededError("items per batch", settings.max_batch_items, n_items)
    if n_ids > settings.max_ids_per_request:
        raise LimitExceededError("ids per request", settings.max_ids_per_request, n_ids)


_SURROGATE_ESCAPE = re.compile(rb"(?<!\\)(?:\\\\)*\\u[dD]([0-9a-fA-F])[0-9a-fA-F]{2}")


async def strict_body(request: Request[Any, Any, Any]) -> None:
    """Decode the body strictly into the route's request type before Litestar does.

    Litestar converts bodies leniently (`"1"` would become the id 1); the API promises that wrong
    types are refused, so every JSON route checks its body here first (~1 ms per MB). A body the
    JSON parser rejects may hold a lone surrogate escape (\\ud800, which is no character): that
    is a 422 naming its offset, anything else a 400 with the parser's reason. A client that takes
    longer than TOKSVC_BODY_SECONDS to send its body gets a 408 and the worker moves on.
    """
    seconds = request.app.state.settings.body_seconds
    try:
        with anyio.fail_after(seconds):
            body = await request.body()
    except TimeoutError:
        raise RequestTimeoutError(seconds) from None
    try:
        msgspec.json.decode(body, type=request.route_handler.opt["body"])
    except msgspec.ValidationError as exc:
        raise ValidationException(f"invalid body: {exc}") from None
    except msgspec.DecodeError as exc:
        _refuse_lone_surrogates(body)
        raise ValidationException(f"malformed JSON: {exc}") from None


def _refuse_lone_surrogates(body: bytes) -> None:
    matches = list(_SURROGATE_ESCAPE.finditer(body))
    i = 0
    while i < len(matches):
        high = matches[i].group(1).lower() in b"89ab"
        pair = high and i + 1 < len(matches) and matches[i + 1].start() == matches[i].end()
        if pair and matches[i + 1].group(1).lower() in b"cdef":
            i += 2
            continue
        raise SurrogateError(matches[i].end() - 6, "byte {} of the request body")


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
     responses=problems.documented(503))  # fmt: skip
def list_tokenizers(state: State) -> TokenizerListResponse:
    return TokenizerListResponse(tokenizers=[info_of(t) for t in registry_of(state)])


@get("/v1/tokenizers/{ref:str}", opt={"operation": "info"}, sync_to_thread=False,
     responses=problems.documented(404, 503))  # fmt: skip
def get_tokenizer(state: State, ref: FromPath[str]) -> TokenizerInfoResponse:
    return info_of(resolve(state, ref))


@get("/healthz", opt={"operation": "health"}, sync_to_thread=False)
def healthz() -> HealthResponse:
    return HealthResponse(status="ok")


@get("/readyz", opt={"operation": "health"}, sync_to_thread=False,
     responses=problems.documented(503))  # fmt: skip
def readyz(state: State) -> Response[Any]:
    """Ready only when every file of every store loaded: a replica that serves part of the store
    must not take traffic beside replicas that serve all of it (during a rollout, say)."""
    registry: Registry | None = state.registry
    if registry is None or not registry.complete:
        reasons = [str(f) for f in registry.failures] if registry is not None else []
        detail = (f"{len(reasons)} store file(s) failed to load; this worker serves the others but "
                  "is not ready" if reasons and registry and len(registry)
                  else str(NotReadyError()))  # fmt: skip
        doc = problems.problem(503, "not-ready", "Not ready", detail, failures=reasons)
        return problems.response(doc, {"Retry-After": "1"})
    return Response(HealthResponse(status="ready", tokenizers=len(registry)))


# --- encode and count ---------------------------------------------------------------------


def _texts(state: State, data: TextsRequest) -> list[str]:
    exactly_one(data.text, data.texts, "`text` or `texts`")
    texts = [data.text] if data.text is not None else data.texts or []
    check_items(state.settings, len(texts))
    return texts


async def _per_text(
    state: State, ref: str, data: TextsRequest, verb: str
) -> tuple[LoadedTokenizer, list[str], list[Any]]:
    """Apply `encode` or `count` to each text of the request, with its special-token policy."""
    t = resolve(state, ref)
    texts = _texts(state, data)
    apply = getattr(t.tokenizer, verb)
    allowed, disallowed = special_set(data.allowed_special), special_set(data.disallowed_special)

    def work() -> list[Any]:
        return [apply(x, allowed_special=allowed, disallowed_special=disallowed) for x in texts]

    return t, texts, await run_work(sum(map(len, texts)), work)


@post(
    "/v1/tokenizers/{ref:str}/encode",
    status_code=200,
    opt={"operation": "encode", "body": EncodeRequest},
    before_request=strict_body,
    responses=problems.documented(400, 404, 413, 422, 503),
)
async def encode(state: State, ref: FromPath[str], data: JSONBody[EncodeRequest]) -> EncodeResponse:
    t, texts, results = await _per_text(state, ref, data, "encode")
    metrics.record(t.ref, "encode", sum(map(len, results)), texts)
    extras = [token_pieces.extras(t.tokenizer, ids, data.pieces, data.offsets) for ids in results]
    if data.text is not None:
        return EncodeResponse(tokenizer=ref_of(t), ids=results[0], count=len(results[0]),
                              pieces=extras[0][0], offsets=extras[0][1])  # fmt: skip
    return EncodeResponse(tokenizer=ref_of(t), results=[
        EncodeResult(ids=ids, count=len(ids), pieces=p, offsets=o)
        for ids, (p, o) in zip(results, extras, strict=True)])  # fmt: skip


@post(
    "/v1/tokenizers/{ref:str}/count",
    status_code=200,
    opt={"operation": "count", "body": CountRequest},
    before_request=strict_body,
    responses=problems.documented(400, 404, 413, 422, 503),
)
async def count(state: State, ref: FromPath[str], data: JSONBody[CountRequest]) -> CountResponse:
    t, texts, counts = await _per_text(state, ref, data, "count")
    total = sum(counts)
    metrics.record(t.ref, "count", total, texts)
    if data.text is not None:
        return CountResponse(tokenizer=ref_of(t), count=counts[0])
    return CountResponse(tokenizer=ref_of(t), counts=counts, total=total)


# --- decode ------------------------------------------------------------------------------------


@post(
    "/v1/tokenizers/{ref:str}/decode",
    status_code=200,
    opt={"operation": "decode", "body": DecodeRequest},
    before_request=strict_body,
    responses=problems.documented(400, 404, 413, 422, 503),
)
async def decode(state: State, ref: FromPath[str], data: JSONBody[DecodeRequest]) -> DecodeResponse:
    t = resolve(state, ref)
    exactly_one(data.ids, data.batch, "`ids` or `batch`")
    batch = [data.ids] if data.ids is not None else data.batch or []
    n_ids = sum(map(len, batch))
    check_items(state.settings, len(batch), n_ids)
    if data.skip_special_tokens:
        special = set(t.tokenizer.special_tokens.values())
        batch = [[i for i in ids if i not in special] for ids in batch]
    results = await run_work(n_ids * 4, partial(_decode_all, t.tokenizer, batch, data))
    metrics.record(t.ref, "decode", n_ids, [r.text or r.base64 or b"" for r in results])
    if data.ids is not None:
        return DecodeResponse(tokenizer=ref_of(t), text=results[0].text,
                              base64=results[0].base64)  # fmt: skip
    return DecodeResponse(tokenizer=ref_of(t), results=results)


def _decode_all(tok: Tokenizer, batch: list[list[int]], data: DecodeRequest) -> list[DecodeResult]:
    if data.output == "base64":
        return [DecodeResult(base64=tok.decode_bytes(ids)) for ids in batch]
    return [DecodeResult(text=tok.decode(ids, data.errors)) for ids in batch]


@post(
    "/v1/tokenizers/{ref:str}/decode/step",
    status_code=200,
    opt={"operation": "decode_stream", "body": DecodeStepRequest},
    before_request=strict_body,
    responses=problems.documented(400, 404, 413, 422, 503),
)
async def decode_step(
    state: State, ref: FromPath[str], data: JSONBody[DecodeStepRequest]
) -> DecodeStepResponse:
    """Stateless streaming decode: the returned `state` carries the held-back bytes."""
    t = resolve(state, ref)
    check_items(state.settings, 1, len(data.ids))
    decoder = StreamDecoder.resume(t.tokenizer.decode_bytes, data.state, data.errors)
    text = decoder.decode(data.ids)
    if data.final:
        text += decoder.flush()
    metrics.record(t.ref, "decode_stream", len(data.ids), [text])
    return DecodeStepResponse(text=text, state=decoder.state(), tokenizer=ref_of(t))


ROUTES = [list_tokenizers, get_tokenizer, healthz, readyz, encode, count, decode, decode_step]
