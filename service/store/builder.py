"""One tokenizer file built: parsed, checked against its manifest entry, validated, and made a
`LoadedTokenizer` whose vocabulary and engine are shared with the files built before it where
they can be (service.store.sharing). The cyclic collector is paused while a file loads.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable
from pathlib import Path
from typing import ParamSpec, TypeVar

import msgspec

from service.bpe import Engine, Tokenizer, Vocabulary
from service.bpe.engine.text_cache import TextCache
from service.errors import FormatError
from service.store import engines
from service.store.engines import engine_sharing, native_lent
from service.store.firstuse import BuiltTokenizer, FirstUse
from service.store.formats.tokenizer import TokenizerFile, parse
from service.store.manifest import ManifestEntry
from service.store.pipeline.build import engine_merges, pipeline_of
from service.store.reading import read_verified
from service.store.registry import LoadedTokenizer
from service.store.sharing import BuiltVocabulary, SharedVocabularies, VocabularyKey
from service.store.validation import validate

# (vocabulary, split pattern, does the `ranks` rule give its ids? (a self-consistent `pairs`
# vocabulary without byte-fallback expansion)) -> the engine that serves it
EngineFactory = Callable[[Vocabulary, "str | None", bool], Engine]
P = ParamSpec("P")
R = TypeVar("R")


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
    return build(
        entry,
        tf,
        factory,
        text_cache,
        token_bytes=checked.tokens,
        triples=checked.triples,
        shared=shared,
        key=key,
    )


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
        vocab = Vocabulary.build(
            tf.rule, merges, tf.ids_of_bytes, extra, token_bytes=token_bytes, triples=triples
        )
        for synthetic in expand:  # never an output: expanded into byte-fallback ids
            vocab.tokens[synthetic] = None
        vocab = shared.same_content(key, vocab)
        self_consistent = engines.self_consistent(vocab)
        twin = shared.twin(key, vocab.rule)
        lent = None  # a twin under the other rule gives the same ids when both are consistent
        if twin is not None and self_consistent and twin.self_consistent and not expand:
            lent = native_lent(twin.engine, pattern)
        ranks_ok = self_consistent and not expand  # a ranks engine gives the same ids
        known = BuiltVocabulary(
            vocab, lent or factory(vocab, pattern, ranks_ok), self_consistent, expand
        )
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
        cache=text_cache,
        cache_owner=entry.sha256,
        nonspecial=tf.nonspecial_tokens,
        pipeline=pipeline_of(tf, known.expand),
    )
    built = FirstUse.done(entry.ref, BuiltTokenizer(tokenizer, self_consistent))
    return LoadedTokenizer(
        *entry.identity,
        tf.rule,
        tf.pattern,
        tf.normalization,
        tf.metadata,
        tokenizer.special_tokens,
        tokenizer.defined_ids,
        built,
        {a.content: a.id for a in tf.added_tokens or () if not a.special},
    )
