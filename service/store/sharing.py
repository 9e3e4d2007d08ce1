"""Identical vocabularies built once per load, and identical tables held once.

Some shipped files differ only in their special tokens (o200k_base and o200k_harmony; qwen2.5 and
qwen3), some also in their split pattern (cl100k_base and phi-4): the same rule, byte ids, extra
tokens and merges. Within one `load_store`, a later one reuses the first one's verified token
bytes, `Vocabulary` and engine (with another pattern, an engine that splits its own way over the
same native tables, service.store.engines.engine_sharing), which saves verifying and building it
again and the memory of a second copy. Files with the same tokens under the other rule (qwen2's
`ranks` and qwen2.5's `pairs`) build their own engine but hold one list of token bytes and one
merge table. Only content decides: the sha256 of everything the tokens are built from, with the
rule for a vocabulary, and the pattern for an engine. Where the `pairs` one of such twins is
self-consistent, both rules give the same ids on every input (docs/format.md), so they also share
one native engine's tables. Nothing is kept between loads or on disk.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import NamedTuple

import msgspec

from service.bpe import Engine, Vocabulary
from service.store.formats.tokenizer import TokenizerFile


@dataclass(frozen=True, slots=True)
class BuiltVocabulary:
    vocab: Vocabulary
    engine: Engine
    self_consistent: bool
    expand: dict[int, tuple[int, ...]] = field(default_factory=dict)  # synthetic ids (v2)


class VocabularyKey(NamedTuple):
    content: bytes  # the tokens: byte ids, extra tokens, merges, byte fallback
    vocabulary: bytes  # the content and the rule


class SharedVocabularies:
    """The vocabularies built so far in one load, by the digest of what they are built from, and
    their engines by pattern."""

    def __init__(self) -> None:
        self._built: dict[bytes, BuiltVocabulary] = {}
        self._engines: dict[tuple[bytes, str | None], Engine] = {}
        self._content: dict[bytes, Vocabulary] = {}
        self._tokens: dict[bytes, BuiltVocabulary] = {}  # by content: the first built

    @staticmethod
    def key(tf: TokenizerFile) -> VocabularyKey:
        shape = (tf.byte_ids, tf.tokens, tf.merges, tf.byte_fallback)
        content = hashlib.sha256(msgspec.msgpack.encode(shape)).digest()
        return VocabularyKey(content, hashlib.sha256(tf.rule.encode() + content).digest())

    def get(self, key: VocabularyKey) -> BuiltVocabulary | None:
        return self._built.get(key.vocabulary)

    def engine(self, key: VocabularyKey, pattern: str | None) -> Engine | None:
        """The engine built in this load for this vocabulary and pattern, if any."""
        return self._engines.get((key.vocabulary, pattern))

    def add(
        self, key: VocabularyKey, built: BuiltVocabulary, pattern: str | None, engine: Engine
    ) -> None:
        """Keep `built` (the first of its vocabulary) and `engine`, its engine for `pattern`."""
        self._built.setdefault(key.vocabulary, built)
        self._tokens.setdefault(key.content, built)
        self._engines.setdefault((key.vocabulary, pattern), engine)

    def twin(self, key: VocabularyKey, rule: str) -> BuiltVocabulary | None:
        """The vocabulary built in this load with the same tokens under the other rule, if any."""
        found = self._tokens.get(key.content)
        return found if found is not None and found.vocab.rule != rule else None

    def same_content(self, key: VocabularyKey, vocab: Vocabulary) -> Vocabulary:
        """`vocab` holding the token list and merge table of the first vocabulary of the same
        content in this load, where they are equal (service.bpe.Vocabulary.share_tables)."""
        first = self._content.setdefault(key.content, vocab)
        if first is not vocab:
            vocab.share_tables(first)
        return vocab
