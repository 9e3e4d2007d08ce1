"""Loading stores into a registry of verified tokenizers.

Loading checks each file's sha256 against the manifest before parsing it, then validates and
builds it, or with `first_use` parses its head only and builds it when it is first used
(service.store.firstuse). A file that fails stays unloaded, with the reason kept in
`Registry.failures`; the others load. Several stores may be served together (the bundled one and
the user's, say): each owns its names, so a name found in a second store is a failure naming both
manifests, and which version is a name's default is never in doubt.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from service.bpe.engine.text_cache import TextCache
from service.errors import StoreError
from service.store.builder import EngineFactory, load_entry
from service.store.engines import default_engine
from service.store.firstuse import BuiltTokenizer, FirstUse, read_head
from service.store.manifest import (
    MANIFEST,
    Manifest,
    ManifestEntry,
    load_manifest,
    read_manifest,
)
from service.store.modelstore import load_models
from service.store.registry import LoadedTokenizer, Registry
from service.store.sharing import SharedVocabularies


def load_store(
    store: Path | Sequence[Path],
    engine_factory: EngineFactory | None = None,
    *,
    only: str | None = None,
    text_cache: TextCache | None = None,
    first_use: bool = False,
) -> Registry:
    """Load every manifest entry of one store, or of several in order (or only the versions of
    the name `only`).

    A broken manifest is one failure (its store adds nothing). `engine_factory` builds each
    vocabulary's engine (default: the reference). `text_cache`, if given, is shared by all
    tokenizers (entries are keyed by each file's sha256). `first_use`: check hashes and heads
    now, build each tokenizer when it is first used.
    """
    factory = engine_factory or default_engine
    registry = Registry()
    started = time.perf_counter()
    owners: dict[str, Path] = {}  # name -> the store that has it
    shared = SharedVocabularies()  # files that differ only in special tokens share one
    build_lock = threading.Lock()  # first-use builds, one at a time
    manifests: list[tuple[Path, Manifest]] = []
    hashes: list[str] = []
    for root in [store] if isinstance(store, Path) else store:
        try:
            manifest, sha256 = load_manifest(root)
        except StoreError as exc:
            registry.failures.append(exc)
            hashes.append("-")
            continue
        hashes.append(sha256)
        manifests.append((root, manifest))
        for entry in manifest.tokenizers:
            if only is not None and entry.name != only:
                continue
            owner = owners.setdefault(entry.name, root)
            if owner != root:
                registry.failures.append(
                    StoreError(
                        str(root / MANIFEST),
                        f"lists {entry.ref}, but {entry.name} is already in {owner / MANIFEST}; "
                        "a name lives in one store only (rename it in one of them)",
                    )
                )
                continue
            try:
                if first_use:
                    loaded = defer_entry(
                        root,
                        entry,
                        factory,
                        text_cache,
                        shared=shared,
                        registry=registry,
                        lock=build_lock,
                    )
                else:
                    loaded = load_entry(root, entry, factory, text_cache, shared=shared)
            except StoreError as exc:
                registry.failures.append(exc)
                continue
            registry.tokenizers[entry.ref] = loaded
            if entry.default:
                registry.defaults[entry.name] = entry.ref
    if only is None:
        registry.models = load_models(manifests, registry.tokenizers)
        registry.failures += registry.models.failures
    registry.store_sha256 = store_state(hashes)
    registry.load_seconds = time.perf_counter() - started
    return registry


def store_state(manifest_hashes: Sequence[str]) -> str:
    """What names a store state: the manifest's sha256 for one store (it pins every file's
    hash), else the sha256 of the stores' manifest hashes in order ("-" for one that failed)."""
    if len(manifest_hashes) == 1:
        return manifest_hashes[0]
    return hashlib.sha256(":".join(manifest_hashes).encode()).hexdigest()


def listed_refs(stores: Sequence[Path]) -> list[str]:
    """Every `name@version` the stores' manifests list (nothing is loaded)."""
    return [entry.ref for entry in _listed(stores)]


def listed_names(stores: Sequence[Path]) -> list[str]:
    """What resolves to a tokenizer the stores' manifests list: every `name@version`, and every
    plain `name` that has a default version (nothing is loaded)."""
    entries = _listed(stores)
    return [*(e.ref for e in entries), *(e.name for e in entries if e.default)]


def _listed(stores: Sequence[Path]) -> list[ManifestEntry]:
    entries: list[ManifestEntry] = []
    for root in stores:
        try:
            entries += read_manifest(root).tokenizers
        except StoreError:
            continue
    return entries


def defer_entry(
    store: Path,
    entry: ManifestEntry,
    factory: EngineFactory,
    text_cache: TextCache | None,
    *,
    shared: SharedVocabularies,
    registry: Registry,
    lock: threading.Lock,
) -> LoadedTokenizer:
    """The start-up half of first use (service.store.firstuse.read_head); the bytes verified
    now are validated and built in full by load_entry when the tokenizer is first used (and then
    let go)."""
    head, data = read_head(store, entry)

    def build_now() -> BuiltTokenizer:
        try:
            loaded = load_entry(store, entry, factory, text_cache, shared=shared, data=data)
        except StoreError as exc:
            registry.failures.append(exc)
            raise
        return loaded.built.get()

    return LoadedTokenizer(
        *entry.identity,
        head.rule,  # type: ignore[arg-type]
        head.pattern,
        head.normalization,  # type: ignore[arg-type]
        head.metadata,
        head.all_special_tokens,
        head.defined_ids,
        FirstUse(entry.ref, build_now, lock),
        head.plain_added_tokens,
    )
