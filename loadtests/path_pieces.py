"""The request path piece by piece: the `count` route as a raw-request Litestar handler, and with
one of the service's pieces added, to see what each costs (docs/performance.md, "The request
path outside the engine").

    python loadtests/path_pieces.py 8001 raw    # read body, one msgspec decode, resolve, count, encode
    python loadtests/path_pieces.py 8002 mw     # + request metrics and large-request slots
                                                #   middlewares, token metrics, body deadline
    python loadtests/path_pieces.py 8003 dto    # + the strict body DTO (`data: JSONBody[...]`)
    python loadtests/path_pieces.py 8004 deps   # + the typed dependency chain (worker, registry,
                                                #   tokenizer)
    python loadtests/path_pieces.py 8005 struct # + the response returned as a Struct
    BODIES=... TARGET_PATH=/v1/tokenizers/cl100k_base/count \\
        wrk -t1 -c16 -d8s -s loadtests/cycle.lua http://127.0.0.1:8001

Listens on 127.0.0.1 only; the text cache is off.
"""

from __future__ import annotations

import sys

import msgspec
import uvicorn
from litestar import Litestar, Request, Response, post
from litestar.datastructures import State
from litestar.middleware import DefineMiddleware
from litestar.params import JSONBody

from service.api import metrics, problems
from service.api.budget import LargeRequestSlots
from service.api.dependencies import SIGNATURE_TYPES, TokenizerDep, dependencies
from service.api.routes.catalog import ref_of
from service.api.wire.bodies import BodyRequest, StrictBodies
from service.api.wire.tokens import CountRequest, CountResponse
from service.api.worker import KEY, Worker
from service.runtime import load_registry
from service.settings import Settings
from service.store.registry import LoadedTokenizer

PATH = "/v1/tokenizers/{ref:str}/count"
settings = Settings(text_cache_bytes=0)
registry = load_registry(settings)
decoder = msgspec.json.Decoder(CountRequest)
worker = Worker(settings, registry)
encode = msgspec.json.Encoder().encode


def counted(ref: str | LoadedTokenizer, text: str | None) -> CountResponse:
    t = registry.resolve(ref) if isinstance(ref, str) else ref
    n = t.tokenizer.count(text or "", allowed_special=frozenset(), disallowed_special="all")
    return CountResponse(tokenizer=ref_of(t), count=n)


@post(PATH, status_code=200, opt={"operation": "count"})
async def raw(request: Request[object, object, State]) -> Response[bytes]:
    data = decoder.decode(await request.body())
    return Response(
        encode(counted(request.path_params["ref"], data.text)), media_type="application/json"
    )


@post(PATH, status_code=200, opt={"operation": "count"})
async def with_metrics(request: Request[object, object, State]) -> Response[bytes]:
    data = decoder.decode(await request.body())
    answer = counted(request.path_params["ref"], data.text)
    metrics.record(answer.tokenizer.name, "count", answer.count or 0, [data.text or ""])
    return Response(encode(answer), media_type="application/json")


@post(PATH, status_code=200)
async def with_dto(
    request: Request[object, object, State], data: JSONBody[CountRequest]
) -> Response[bytes]:
    return Response(
        encode(counted(request.path_params["ref"], data.text)), media_type="application/json"
    )


@post(PATH, status_code=200)
async def with_deps(
    request: Request[object, object, State], tokenizer: TokenizerDep
) -> Response[bytes]:
    data = decoder.decode(await request.body())
    return Response(encode(counted(tokenizer, data.text)), media_type="application/json")


@post(PATH, status_code=200)
async def with_struct(request: Request[object, object, State]) -> CountResponse:
    data = decoder.decode(await request.body())
    return counted(request.path_params["ref"], data.text)


VARIANTS = {
    "raw": (raw, {}),
    "mw": (with_metrics, {"middleware": [metrics.RequestMetrics,
                                         DefineMiddleware(LargeRequestSlots, settings=settings)],
                          "request_class": BodyRequest}),
    "dto": (with_dto, {"plugins": [StrictBodies()], "request_class": BodyRequest}),
    "deps": (with_deps, {"dependencies": dependencies(worker), "signature_types": SIGNATURE_TYPES}),
    "struct": (with_struct, {}),
}  # fmt: skip


def main() -> None:
    port, name = int(sys.argv[1]), sys.argv[2]
    handler, options = VARIANTS[name]
    app = Litestar(
        [handler],
        state=State({KEY: Worker(settings, registry)}),
        exception_handlers=problems.EXCEPTION_HANDLERS,
        **options,
    )  # type: ignore[arg-type]
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
