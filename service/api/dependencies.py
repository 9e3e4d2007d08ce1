"""Typed dependencies: what a route declares by name and type, Litestar provides per request.

    async def decode(tokenizer: TokenizerDep, worker: WorkerDep,
                     data: JSONBody[DecodeRequest]) -> DecodeResponse: ...

`worker` is the worker's typed state (its settings, the registry, stream slots, `stopping`);
`registry` the one serving now (503 before the store has loaded); `tokenizer` the one the path's
`{ref}` names in it (404 naming the loaded ones otherwise).

They form one chain, worker -> registry -> tokenizer, so Litestar resolves them one after
another. Settings are read through `worker` rather than being a dependency of their own: two
dependencies that do not depend on each other are resolved concurrently, in an anyio task group
per request, which costs more than all three of these (see docs/performance.md).
"""

from __future__ import annotations

from typing import TypeAlias

from litestar.datastructures import State
from litestar.di import NamedDependency, Provide
from litestar.params import FromPath

from service.api.worker import KEY, Worker
from service.store.registry import LoadedTokenizer, Registry

# what a handler or provider writes for each (the parameter's name selects the dependency)
WorkerDep: TypeAlias = NamedDependency[Worker]
RegistryDep: TypeAlias = NamedDependency[Registry]
TokenizerDep: TypeAlias = NamedDependency[LoadedTokenizer]


def provide_worker(state: State) -> Worker:
    worker: Worker = state[KEY]
    return worker


def provide_registry(worker: WorkerDep) -> Registry:
    return worker.serving()


def provide_tokenizer(registry: RegistryDep, ref: FromPath[str]) -> LoadedTokenizer:
    return registry.resolve(ref)


DEPENDENCIES = {
    "worker": Provide(provide_worker, sync_to_thread=False),
    "registry": Provide(provide_registry, sync_to_thread=False),
    "tokenizer": Provide(provide_tokenizer, sync_to_thread=False),
}
# the names a handler's signature may use for these types (Litestar resolves the annotations)
SIGNATURE_TYPES = [Worker, Registry, LoadedTokenizer]
