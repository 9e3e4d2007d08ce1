"""Identical vocabularies built once per load.

Some shipped files differ only in their special tokens (o200k_base and o200k_harmony; qwen2.5 and
qwen3): the same rule, pattern, byte ids, extra tokens and merges. Within one `load_store`, the
second one reuses the first one's verified token bytes, `Vocabulary` and engine, which saves
verifying and building it again (about a third of the start-up) and the memory of a second copy.
Only content decides: two files share when the sha256 of everything the vocabulary and the
engine are built from is equal. Nothing is kept between loads or on disk.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import msgspec

from service.bpe import Engine, Vocabulary
from service.store.fileformat import TokenizerFile


@dataclass(frozen=True, slots=True)
class BuiltVocabulary:
    vocab: Vocabulary
    engine: Engine
    self_consistent: bool
    expand: dict[int, tuple[int, ...]] = field(default_factory=dict)  # synthetic ids (v2)


class SharedVocabularies:
    """The vocabularies built so far in one load, by the digest of what they are built from."""

    def __init__(self) -> None:
        self._built: dict[bytes, BuiltVocabulary] = {}

    @staticmethod
    def key(tf: TokenizerFile) -> bytes:
        shape = (tf.rule, tf.pattern, tf.byte_ids, tf.tokens, tf.merges, tf.byte_fallback)
        return hashlib.sha256(msgspec.msgpack.encode(shape)).digest()

    def get(self, key: bytes) -> BuiltVocabulary | None:
        return self._built.get(key)

    def add(self, key: bytes, built: BuiltVocabulary) -> None:
        self._built.setdefault(key, built)
