"""Typed dependencies: what a route declares by name and type, Litestar provides per request.

    async def encode(tokenizer: TokenizerDep, settings: SettingsDep,
                     data: JSONBody[EncodeRequest]) -> EncodeResponse: ...

`tokenizer` is the one the path's `{ref}` names (404 naming the loaded ones otherwise), `registry`
the one serving now (503 before the store has loaded), `settings` the worker's, `worker` all of it.
"""

from __future__ import annotations

from typing import TypeAlias

from litestar.datastructures import State
from litestar.di import NamedDependency, Provide
from litestar.params import FromPath

from service.api.worker import KEY, Worker
from service.settings import Settings
from service.store.registry import LoadedTokenizer, Registry

# what a handler or provider writes for each (the parameter's name selects the dependency)
WorkerDep: TypeAlias = NamedDependency[Worker]
SettingsDep: TypeAlias = NamedDependency[Settings]
RegistryDep: TypeAlias = NamedDependency[Registry]
TokenizerDep: TypeAlias = NamedDependency[LoadedTokenizer]


def provide_worker(state: State) -> Worker:
    worker: Worker = state[KEY]
    return worker


def provide_settings(worker: WorkerDep) -> Settings:
    return worker.settings


def provide_registry(worker: WorkerDep) -> Registry:
    return worker.serving()


def provide_tokenizer(registry: RegistryDep, ref: FromPath[str]) -> LoadedTokenizer:
    return registry.resolve(ref)


DEPENDENCIES = {
    "worker": Provide(provide_worker, sync_to_thread=False),
    "settings": Provide(provide_settings, sync_to_thread=False),
    "registry": Provide(provide_registry, sync_to_thread=False),
    "tokenizer": Provide(provide_tokenizer, sync_to_thread=False),
}
# the names a handler's signature may use for these types (Litestar resolves the annotations)
SIGNATURE_TYPES = [Worker, Settings, Registry, LoadedTokenizer]
