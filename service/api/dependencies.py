"""Typed dependencies: what a route declares by name and type, Litestar provides per request.

    async def decode(tokenizer: TokenizerDep, worker: WorkerDep,
                     data: JSONBody[DecodeRequest]) -> DecodeResponse: ...

`worker` is the worker's typed state (its settings, the registry, stream slots, `stopping`);
`registry` the one serving now (503 before the store has loaded); `tokenizer` the one the path's
`{ref}` names in it, or the tokenizer of the model it names (404 naming the loaded ones
otherwise).

A tokenizer not used yet in this worker is built (service.store.firstuse) in a worker thread
before the handler runs (`ready`), so a first use never blocks the event loop.

`worker` is known when the app is built, so it is a cached value (nothing to resolve per
request); `registry` and `tokenizer` each read it, so a handler's dependencies form a chain that
Litestar resolves one after another. Settings are read through `worker` rather than being a
dependency of their own: two dependencies that do not depend on each other are resolved
concurrently, in an anyio task group per request.
"""

from __future__ import annotations

from typing import TypeAlias

import anyio.to_thread
from litestar.di import NamedDependency, Provide
from litestar.params import FromPath

from service.api.worker import Worker
from service.store.modelstore import LoadedModel
from service.store.registry import LoadedTokenizer, Registry

# what a handler or provider writes for each (the parameter's name selects the dependency)
WorkerDep: TypeAlias = NamedDependency[Worker]
RegistryDep: TypeAlias = NamedDependency[Registry]
TokenizerDep: TypeAlias = NamedDependency[LoadedTokenizer]


def provide_registry(worker: WorkerDep) -> Registry:
    return worker.serving()


async def provide_tokenizer(worker: WorkerDep, ref: FromPath[str]) -> LoadedTokenizer:
    """`{ref}` names a tokenizer, or a model (whose tokenizer the answer's `tokenizer` names)."""
    return await ready(worker.serving().tokenizer_for(ref))


async def ready(tokenizer: LoadedTokenizer) -> LoadedTokenizer:
    """The tokenizer, built first (off the event loop) if this is its first use."""
    if tokenizer.built.built is None:
        await anyio.to_thread.run_sync(tokenizer.built.get)
    return tokenizer


async def model_ready(registry: Registry, ref: str) -> LoadedModel:
    """The model `ref` names, its tokenizer built first (off the event loop) if this is its
    first use: a route that counts for a model never builds a vocabulary on the loop."""
    model = registry.resolve_model(ref)
    await ready(registry.resolve(model.tokenizer_ref))
    return model


def dependencies(worker: Worker) -> dict[str, Provide]:
    """The providers of the app that `worker` runs."""

    def provide_worker() -> Worker:
        return worker

    return {
        "worker": Provide(provide_worker, use_cache=True, sync_to_thread=False),
        "registry": Provide(provide_registry, sync_to_thread=False),
        "tokenizer": Provide(provide_tokenizer),
    }


# the names a handler's signature may use for these types (Litestar resolves the annotations)
SIGNATURE_TYPES = [Worker, Registry, LoadedTokenizer]
