"""Loading stores into a registry of verified tokenizers, and resolving `name[@version]`.

Loading checks each file's sha256 against the manifest before parsing it, then validates and
builds it, or with `first_use` parses its head only and builds it when it is first used
(service.store.firstuse). A file that fails stays unloaded, with the reason kept in
`Registry.failures`; the others load. Several stores may be served together (the bundled one and
the user's, say): each owns its names, so a name found in a second store is a failure naming both
manifests, and which version is a name's default is never in doubt.
"""

from __future__ import annotations

import functools
import gc
import hashlib
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import ParamSpec, TypeVar

import msgspec

from service.bpe import Engine, Normalization, Rule, Tokenizer, Vocabulary
from service.bpe.cache import TextCache
from service.errors import (
    FormatError,
    ModelNotFoundError,
    StoreError,
    TokenizerNotFoundError,
)
from service.store.engines import default_engine, engine_sharing, native_lent
from service.store.fileformat import Metadata, TokenizerFile, parse
from service.store.firstuse import BuiltTokenizer, FirstUse, read_head
from service.store.manifest import (
    MANIFEST,
    Loaded,
    Manifest,
    ManifestEntry,
    load_manifest,
    read_manifest,
)
from service.store.modelstore import LoadedModel, ModelTables, load_models
from service.store.pipelinebuild import engine_merges, pipeline_of
from service.store.reading import read_verified
from service.store.sharing import BuiltVocabulary, SharedVocabularies, VocabularyKey
from service.store.validation import validate

# (vocabulary, split pattern, does the `ranks` rule give its ids? (a self-consistent `pairs`
# vocabulary without byte-fallback expansion)) -> the engine that serves it
EngineFactory = Callable[[Vocabulary, "str | None", bool], Engine]
P = ParamSpec("P")
R = TypeVar("R")


@dataclass(frozen=True, slots=True, eq=False)
class LoadedTokenizer(Loaded):
    """A verified tokenizer with the facts the API lists about it (not the merge list itself):
    its manifest entry's, and what its file says of it. The tokenizer itself is built at load or
    on first use (`built`)."""

    rule: Rule
    pattern: str | None
    normalization: Normalization
    metadata: Metadata
    special_tokens: dict[str, int]
    defined_ids: int  # ids defined, special tokens included (not tiktoken's n_vocab)
    built: FirstUse

    @property
    def tokenizer(self) -> Tokenizer:
        """The tokenizer (built now if it was not yet; TokenizerUnavailableError if it fails)."""
        return self.built.get().tokenizer

    @property
    def self_consistent(self) -> bool:
        return self.built.get().self_consistent

    @property
    def known_self_consistent(self) -> bool | None:
        """Without building: always for `ranks`; for `pairs` once built, else None."""
        done = self.built.built
        return True if self.rule == "ranks" else done.self_consistent if done else None


@dataclass(slots=True)
class Registry:
    tokenizers: dict[str, LoadedTokenizer] = field(default_factory=dict)  # by name@version
    defaults: dict[str, str] = field(default_factory=dict)  # name -> name@version
    failures: list[StoreError] = field(default_factory=list)  # appended to by first-use builds
    load_seconds: float = 0.0
    models: ModelTables = field(default_factory=ModelTables)
    # the store state loaded: one store's manifest sha256, or that of several stores' hashes
    store_sha256: str = ""

    def resolve_model(self, ref: str) -> LoadedModel:
        """A model's name, alias or `name@version`."""
        found = self.models.models.get(self.models.names.get(ref, ""))
        if found is None:
            raise ModelNotFoundError(ref, [m.ref for m in self.models.models.values()])
        return found

    def resolve(self, ref: str) -> LoadedTokenizer:
        """`name` gives the default version, `name@version` that version."""
        key = ref if "@" in ref else self.defaults.get(ref, "")
        found = self.tokenizers.get(key)
        if found is None:
            raise TokenizerNotFoundError(ref, [*self.tokenizers, *self.defaults])
        return found

    def tokenizer_for(self, ref: str) -> LoadedTokenizer:
        """A tokenizer reference, or a model's name, alias or `name@version`: that model's
        tokenizer. Neither: TokenizerNotFoundError listing (and suggesting) both kinds."""
        try:
            return self.resolve(ref)
        except TokenizerNotFoundError:
            model_key = self.models.names.get(ref)
            if model_key is None:
                models = [m.ref for m in self.models.models.values()]
                known = [*self.tokenizers, *self.defaults, *models]
                raise TokenizerNotFoundError(ref, known) from None
        return self.resolve(self.models.models[model_key].tokenizer_ref)

    def __iter__(self) -> Iterator[LoadedTokenizer]:
        return iter(self.tokenizers.values())

    def __len__(self) -> int:
        return len(self.tokenizers)

    @property
    def complete(self) -> bool:
        """Every file of every store loaded (and there was at least one)."""
        return not self.failures and bool(self.tokenizers)


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
                registry.failures.append(StoreError(
                    str(root / MANIFEST),
                    f"lists {entry.ref}, but {entry.name} is already in {owner / MANIFEST}; "
                    "a name lives in one store only (rename it in one of them)",
                ))  # fmt: skip
                continue
            try:
                if first_use:
                    loaded = defer_entry(root, entry, factory, text_cache, shared=shared,
                                         registry=registry, lock=build_lock)  # fmt: skip
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
    refs: list[str] = []
    for root in stores:
        try:
            refs += [entry.ref for entry in read_manifest(root).tokenizers]
        except StoreError:
            continue
    return refs


def _gc_paused(load: Callable[P, R]) -> Callable[P, R]:
    """Loading a file allocates millions of small objects that form no cycles (the parsed merge
    triples, the token bytes); the cyclic collector walked them again and again (about a tenth of
    the start-up). It is paused while one file loads (and resumed after, if it was running)."""

    @functools.wraps(load)
    def paused(*args: P.args, **kwargs: P.kwargs) -> R:
        enabled = gc.isenabled()
        gc.disable()
        try:
            return load(*args, **kwargs)
        finally:
            if enabled:
                gc.enable()

    return paused


@_gc_paused
def load_entry(
    store: Path,
    entry: ManifestEntry,
    factory: EngineFactory,
    text_cache: TextCache | None = None,
    *,
    shared: SharedVocabularies | None = None,
    data: bytes | None = None,
) -> LoadedTokenizer:
    """Validate and build one file (`data`: its bytes, verified against the pin already)."""
    where = str(store / entry.path)
    if data is None:
        data = read_verified(store, entry.path, entry.sha256)  # bounded; hashed before parsing
    try:
        tf = parse(data)
    except msgspec.MsgspecError as exc:
        raise FormatError(where, "file", f"is not a valid tokenizer file: {exc}") from None
    if (tf.name, tf.version) != (entry.name, entry.version):
        raise FormatError(
            where, "name/version", f"file says {tf.name}@{tf.version}, manifest says {entry.ref}"
        )
    shared = shared if shared is not None else SharedVocabularies()
    key = SharedVocabularies.key(tf)
    known = shared.get(key)
    checked = validate(tf, where, verified=known.vocab.tokens if known is not None else None)
    return build(entry, tf, factory, text_cache, token_bytes=checked.tokens,
                 triples=checked.triples, shared=shared, key=key)  # fmt: skip


def build(
    entry: ManifestEntry,
    tf: TokenizerFile,
    factory: EngineFactory,
    text_cache: TextCache | None = None,
    *,
    token_bytes: list[bytes | None] | None = None,
    triples: bytes | None = None,
    shared: SharedVocabularies | None = None,
    key: VocabularyKey | None = None,
) -> LoadedTokenizer:
    """`shared`: what this load built so far; a file with the same vocabulary (`key`) as one
    built earlier takes its vocabulary and engine (or, with another pattern, an engine over the
    same tables), one with the same tokens under the other rule its token list, and where both
    are self-consistent its native tables too (service.store.sharing)."""
    shared = shared if shared is not None else SharedVocabularies()
    key = key if key is not None else SharedVocabularies.key(tf)
    pattern = tf.pattern if tf.format_version == 1 else None
    known = shared.get(key)
    if known is None:
        extra = {tid: bytes.fromhex(h) for tid, h in tf.tokens}
        for b, tid in enumerate(tf.byte_fallback or ()):
            extra.setdefault(tid, bytes([b]))
        merges, expand = engine_merges(tf)
        if tf.byte_fallback is not None:  # with synthetic merges: computed here
            token_bytes = triples = None
        vocab = Vocabulary.build(tf.rule, merges, tf.ids_of_bytes, extra,
                                 token_bytes=token_bytes, triples=triples)  # fmt: skip
        for synthetic in expand:  # never an output: expanded into byte-fallback ids
            vocab.tokens[synthetic] = None
        vocab = shared.same_content(key, vocab)
        self_consistent = vocab.self_consistent()
        twin = shared.twin(key, vocab.rule)
        lent = None  # a twin under the other rule gives the same ids when both are consistent
        if twin is not None and self_consistent and twin.self_consistent and not expand:
            lent = native_lent(twin.engine, pattern)
        ranks_ok = self_consistent and not expand  # a ranks engine gives the same ids
        known = BuiltVocabulary(vocab, lent or factory(vocab, pattern, ranks_ok),
                                self_consistent, expand)  # fmt: skip
        shared.add(key, known, pattern, known.engine)
    engine = shared.engine(key, pattern)
    if engine is None:
        ranks_ok = known.self_consistent and not known.expand
        engine = engine_sharing(known.engine, known.vocab, pattern, ranks_ok, factory)
        shared.add(key, known, pattern, engine)
    vocab, self_consistent = known.vocab, known.self_consistent
    tokenizer = Tokenizer(
        vocab,
        engine,
        tf.special_tokens,
        tf.normalization,
        cache=text_cache,
        cache_owner=entry.sha256,
        nonspecial=tf.nonspecial_tokens,
        pipeline=pipeline_of(tf, known.expand),
    )
    built = FirstUse.done(entry.ref, BuiltTokenizer(tokenizer, self_consistent))
    return LoadedTokenizer(*entry.identity, tf.rule, tf.pattern, tf.normalization, tf.metadata,
                           tokenizer.special_tokens, tokenizer.defined_ids, built)  # fmt: skip


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

    return LoadedTokenizer(*entry.identity, head.rule, head.pattern, head.normalization,  # type: ignore[arg-type]
                           head.metadata, head.all_special_tokens, head.defined_ids,
                           FirstUse(entry.ref, build_now, lock))  # fmt: skip
