"""A store dropped by a reload is freed at once by reference counting: none of its built tokenizers
sits in a reference cycle that waits for the collector's rare full pass
(each such pass came only after several reloads, each leaving a whole store in memory)."""

from __future__ import annotations

import gc
import weakref

from service.runtime import engine_factory
from service.settings import BUNDLED_STORE
from service.store.loader import load_store

TEXT = "hello world, 42 <|endoftext|> naïve 你好"


def test_a_dropped_store_frees_every_built_tokenizer_without_the_collector() -> None:
    registry = load_store(BUNDLED_STORE, engine_factory("auto"))
    built = []
    for key in registry.tokenizers:
        tokenizer = registry.resolve(key).tokenizer
        assert tokenizer.encode(TEXT, allowed_special="all")
        built.append(weakref.ref(tokenizer))
    del tokenizer
    gc.collect()
    gc.disable()
    try:
        del registry
        alive = [r() for r in built if r() is not None]
        assert not alive, f"{len(alive)} of {len(built)} left to the cycle collector: {alive[:3]}"
    finally:
        gc.enable()
