"""Engines turn ordinary text (no special tokens, already normalized) into ids.

An engine owns pre-tokenization and merging; `Tokenizer` puts normalization, special tokens and
decoding in front of whichever engine serves a vocabulary. `PythonEngine` is the reference.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Protocol

from service.bpe.engine.matching import matches_of
from service.bpe.vocab import Vocabulary

MAX_CACHED_PIECE = 64  # characters; longer pieces (whitespace runs, long words) rarely repeat


class Engine(Protocol):
    def encode_ordinary(self, text: str) -> list[int]: ...

    def count_ordinary(self, text: str) -> int: ...


class PieceEngine(Engine, Protocol):
    """An engine that also merges pieces cut by someone else (format v2's pipeline)."""

    def encode_pieces(self, pieces: list[str]) -> list[int]: ...


class PythonEngine:
    """Pure-Python engine: regex pre-tokenization, then the vocabulary's merge rule per piece.

    Encoded pieces are kept in a bounded LRU cache (`cache_size` pieces); pieces repeat a lot in
    real text, so most of the work after warm-up is the regex and a dict look-up. Only pieces of
    at most MAX_CACHED_PIECE characters are kept, which bounds the cache in bytes too (at most
    ~2.5 KB an entry, 64 4-byte characters as byte ids; 65,536 entries < 170 MB, real pieces a
    tenth of that): a long piece rarely repeats, and 40 one-piece 1 MB texts would add 355 MB.
    """

    def __init__(self, vocab: Vocabulary, pattern: str | None, cache_size: int = 65536) -> None:
        self.vocab = vocab
        self._split = matches_of(pattern) if pattern else None
        merge = vocab.merge_piece

        def encode_piece(piece: str) -> tuple[int, ...]:
            return tuple(merge(piece.encode("utf-8")))

        cached = lru_cache(maxsize=cache_size)(encode_piece)
        self._piece_cache = cached

        def piece(p: str) -> tuple[int, ...]:
            return cached(p) if len(p) <= MAX_CACHED_PIECE else encode_piece(p)

        self._piece = piece

    def encode_ordinary(self, text: str) -> list[int]:
        if self._split is None:
            return self.vocab.merge_piece(text.encode("utf-8")) if text else []
        out: list[int] = []
        extend, piece = out.extend, self._piece
        for p in self._split(text):
            extend(piece(p))
        return out

    def encode_pieces(self, pieces: list[str]) -> list[int]:
        """The ids of pieces already cut by a pre-tokenizer (format v2's pipeline)."""
        out: list[int] = []
        extend, piece = out.extend, self._piece
        for p in pieces:
            extend(piece(p))
        return out

    def count_ordinary(self, text: str) -> int:
        if self._split is None:
            return len(self.encode_ordinary(text))
        return sum(map(len, map(self._piece, self._split(text))))

    def cache_info(self) -> tuple[int, int, int]:
        """(hits, misses, current size) of the piece cache."""
        info = self._piece_cache.cache_info()
        return info.hits, info.misses, info.currsize
