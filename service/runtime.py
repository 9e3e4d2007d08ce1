"""The running parts built from `Settings`: the engine each vocabulary runs on, the text cache and
the registry the service serves.

`auto` serves every vocabulary (both rules, any pattern) with the native engine
(`service.bpe.engine.native`, a C extension): the shipped patterns are split by C scanners made for
them,
any other pattern by the `regex` module, and both merge rules run in C, exact with the reference by
construction. When the extension was not built (no C compiler at install time) `auto` falls back
to the pure-Python reference engine, and `native_missing_warning` says so at start-up. `python`
always takes the reference (for differential tests and benchmarks). Normalization and special
tokens stay in `Tokenizer`, in front of either engine.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from service.bpe import Engine, PythonEngine, Vocabulary
from service.bpe.engine import native
from service.bpe.engine.text_cache import TextCache
from service.settings import Engine as EngineChoice
from service.settings import Settings
from service.store.builder import EngineFactory
from service.store.engines import native_engine
from service.store.loader import load_store
from service.store.registry import Registry

log = logging.getLogger("toksvc")


def native_missing_warning() -> str | None:
    """The start-up warning when the native engine is missing, else None."""
    if native.AVAILABLE:
        return None
    return (
        "the native engine is NOT built (no C compiler at install time?): every tokenizer "
        "runs on the slow pure-Python engine; reinstall with a C compiler to fix"
    )


def engine_factory(choice: EngineChoice = "auto", cache_size: int = 65536) -> EngineFactory:
    """`auto`: the native engine wherever it is built, else the reference; `python`: always the
    reference (for differential tests and benchmarks)."""
    if choice == "auto" and (warning := native_missing_warning()) is not None:
        log.error(warning)

    def build(vocab: Vocabulary, pattern: str | None, self_consistent: bool) -> Engine:
        engine = native_engine(vocab, pattern, self_consistent) if choice == "auto" else None
        return engine if engine is not None else PythonEngine(vocab, pattern, cache_size)

    return build


def text_cache(settings: Settings) -> TextCache | None:
    """The whole-text cache all tokenizers share (entries keyed by each file's sha256), if any."""
    return TextCache(settings.text_cache_bytes) if settings.text_cache_bytes > 0 else None


def load_registry(
    settings: Settings,
    stores: Sequence[Path] | None = None,
    *,
    only: str | None = None,
    first_use: bool | None = None,
) -> Registry:
    """The registry the service runs on (`settings.stores`, or `stores`), with the engines and
    caches the settings ask for; `only` loads the versions of one name; each tokenizer is built
    on its first use (`settings.build_on_first_use`, or `first_use`), else all at once."""
    native.configure_piece_cache(settings.piece_cache_bytes)
    native.configure_hot_pieces(settings.hot_piece_bytes)
    return load_store(
        settings.stores if stores is None else stores,
        engine_factory(settings.engine, settings.piece_cache_size),
        only=only,
        text_cache=text_cache(settings),
        first_use=settings.build_on_first_use if first_use is None else first_use,
    )
