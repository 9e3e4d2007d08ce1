"""Preloading builds what it names before the worker serves, and only that; a name the store does
not serve, or a file that fails its build, is a failure of the load (the worker is not ready on
it, a reload meeting it is refused)."""

from __future__ import annotations

from service.runtime import engine_factory
from service.settings import BUNDLED_STORE
from service.store.loader import load_store
from service.store.preload import preload
from service.store.registry import Registry


def lazy() -> Registry:
    return load_store([BUNDLED_STORE], engine_factory("auto"), first_use=True)


def built(registry: Registry) -> set[str]:
    return {t.ref for t in registry if t.built.built is not None}


def test_names_and_models_build_their_tokenizers_and_nothing_else() -> None:
    registry = lazy()
    assert built(registry) == set()
    preload(registry, " gpt2 , gpt-4o,gpt2@1 ")  # gpt-4o: a model, served by o200k_base
    assert built(registry) == {"gpt2@1", registry.tokenizer_for("gpt-4o").ref}
    assert registry.complete


def test_all_builds_every_version() -> None:
    registry = lazy()
    preload(registry, "all")
    assert built(registry) == {t.ref for t in registry} and len(registry) > 10


def test_a_name_the_store_does_not_serve_is_a_failure() -> None:
    registry = lazy()
    preload(registry, "gpt2,gtp-4o")
    assert built(registry) == {"gpt2@1"} and not registry.complete
    (failure,) = registry.failures
    assert "TOKSVC_PRELOAD" in str(failure) and "'gtp-4o'" in str(failure)
