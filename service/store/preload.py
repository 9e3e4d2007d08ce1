"""Preloading: building named tokenizers before a worker serves, so that their first request is
not the one that pays for the build (Gemma 3's first count took 2.6 s with build on first use).

`names` is `all` (every tokenizer of the store, every version), or comma-separated references to
tokenizers (`name`, `name@version`) or models (a model preloads its tokenizer). A name that the
store does not serve, or a file whose build fails, is a failure of the load
(`Registry.failures`): the worker does not turn ready on it, and a reload that meets it is
refused, as for any other file that fails.
"""

from __future__ import annotations

import contextlib
import time

from service.errors import StoreError, TokenizerNotFoundError, TokenizerUnavailableError
from service.store.registry import LoadedTokenizer, Registry

ALL = "all"
SETTING = "TOKSVC_PRELOAD"


def preload(registry: Registry, names: str) -> float:
    """Build the tokenizers `names` asks for in `registry`; the seconds it took."""
    started = time.monotonic()
    for loaded in _chosen(registry, names):
        with contextlib.suppress(TokenizerUnavailableError):  # the build noted its failure
            loaded.built.get()
    return time.monotonic() - started


def _chosen(registry: Registry, names: str) -> list[LoadedTokenizer]:
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    if wanted == [ALL]:
        return list(registry)
    chosen: dict[str, LoadedTokenizer] = {}
    for name in wanted:
        try:
            loaded = registry.tokenizer_for(name)
        except TokenizerNotFoundError:
            why = (
                f"names {name!r}, which the store does not serve (`{ALL}`, or tokenizers or models)"
            )
            registry.failures.append(StoreError(SETTING, why))
            continue
        chosen.setdefault(loaded.ref, loaded)
    return list(chosen.values())
