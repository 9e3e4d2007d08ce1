"""The native engine: the C extension `service.bpe._native` behind the `Engine` protocol.

The shipped patterns are split by hand-written C scanners (service/bpe/engine/scanners.py); any
other pattern is split by the `regex` module here and the pieces are merged in C. Both merge rules
run in C. `AVAILABLE` is False when the extension was not built (no compiler at install time): the
service then runs on the Python engine and says so.

Behind every engine of the process can sit one piece cache (service/bpe/csrc/piece_cache.h, off
unless configured): the ids of pieces that needed merging, kept across calls from their second
miss, bounded in bytes, keyed with a random seed, scan-resistant, safe for threads and cleared in
a forked child. It never changes an id.

In front of it, each engine keeps its hot pieces (service/bpe/csrc/hot_pieces.h, on by default):
a small table, one per engine, of the ids of the short pieces it cuts most often, so that the
pieces of text like what it has read are answered by one probe of a table that stays in the
core's cache. Keyed with a random seed, scan-resistant, taken by one call at a time (a call that
finds it taken runs without it), cleared in a forked child; it never changes an id either.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from service.bpe.engine import scanners
from service.bpe.engine.matching import matches_of

if TYPE_CHECKING:
    from service.bpe.vocab import Vocabulary

try:
    from service.bpe import _native
except ImportError:  # built without a C compiler
    _native = None  # type: ignore[assignment]

AVAILABLE = _native is not None
UNICODE_VERSION = _native.UNICODE_VERSION if _native is not None else None


# the C scanners by name (service/bpe/engine/scanners.py), their codes in this build
SCANNERS: dict[str, int] = (
    {s.name: getattr(_native, s.code) for s in scanners.SCANNERS} if _native is not None else {}
)


def scanner_of(pattern: str | None) -> str | None:
    """The scanner that cuts as a format v1 pattern's matches do, if this build has one."""
    name = scanners.PATTERN_OF.get(pattern) if pattern is not None else None
    return name if name in SCANNERS else None


def chain_scanner_of(patterns: Sequence[str]) -> str | None:
    """The scanner that cuts as a chain of `isolated` Split patterns does, if this build has
    one."""
    name = scanners.SPLIT_CHAINS.get(tuple(patterns))
    return name if name in SCANNERS else None


class NativeEngine:
    """Pre-tokenization and merging in C; the GIL is released while a long text is encoded."""

    def __init__(
        self,
        vocab: Vocabulary,
        pattern: str | None,
        scanner: str | None = None,
        *,
        as_ranks: bool = False,
    ) -> None:
        """`scanner` names the shipped pattern `pattern` is (a key of SCANNERS), or is None for a
        custom pattern, split here with the `regex` module; no `pattern`: the text is one piece.
        `as_ranks`: run a `pairs` vocabulary under the `ranks` rule, which gives the same ids
        when the vocabulary is self-consistent (`Vocabulary.self_consistent`; the caller has
        checked) and is faster: a piece that is one token is found by one look-up, not merged."""
        if _native is None:
            raise RuntimeError("the native engine is not built")
        self._split = matches_of(pattern) if scanner is None and pattern else None
        rule = "ranks" if as_ranks else vocab.rule
        self._engine = _native.Engine(
            rule,
            vocab.tokens,
            vocab.byte_ids,
            vocab._triples,
            _scanner_code(scanner),
            vocab.free_ids,
        )
        self.nbytes = self._engine.nbytes
        # either rule walks longer pieces with backtrack.h when the vocabulary qualifies
        self.backtracking = self._engine.backtracking

    def split_by(self, pattern: str | None, scanner: str | None = None) -> NativeEngine:
        """An engine for the same vocabulary split by another pattern (`scanner` as in
        `__init__`): it uses these tables (it keeps them alive), so a vocabulary that two files
        cut differently (cl100k_base and phi-4) is held once; `nbytes` is 0, the tables being
        counted here."""
        other = object.__new__(NativeEngine)
        other._split = matches_of(pattern) if scanner is None and pattern else None
        other._engine = self._engine.rescanned(_scanner_code(scanner))
        other.nbytes = other._engine.nbytes
        other.backtracking = other._engine.backtracking
        return other

    def merge_bytes(self, piece: bytes) -> list[int]:
        """The ids of one piece given as bytes (no pre-tokenization, no special tokens)."""
        return self._engine.merge_bytes(piece)

    def encode_pieces(self, pieces: list[str]) -> list[int]:
        """The ids of pieces already cut by a pre-tokenizer (format v2's pipeline)."""
        return self._engine.encode_pieces(pieces)

    def encode_split(self, scanner: str, text: str) -> list[int]:
        """The ids of `text` cut by the C scanner `scanner` (a key of SCANNERS), whichever
        pattern this engine was built for: a v2 file's pre-tokenizers when a scanner splits
        exactly as they do (service/bpe/pipeline/pipeline.py)."""
        return self._engine.encode_with(SCANNERS[scanner], text)

    def encode_words(
        self, mark: bytes, contexts: Sequence[tuple[bytes, bytes]], items: Sequence[str | int]
    ) -> list[int]:
        """The ids of `items` in order: a str is a stretch cut before each `mark` (one
        character's UTF-8) except in `contexts` (service/bpe/pipeline/wordcut.py), each piece
        merged; an
        int is an added token's id, put as it is."""
        return self._engine.encode_words(items, mark, contexts)

    def encode_ordinary(self, text: str) -> list[int]:
        if self._split is not None:
            return self._engine.encode_pieces(self._split(text))
        return self._engine.encode(text)

    def count_ordinary(self, text: str) -> int:
        if self._split is not None:
            return self._engine.count_pieces(self._split(text))
        return self._engine.count(text)

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        if self._split is not None:
            return [self.encode_ordinary(t) for t in texts]
        return self._engine.encode_batch(texts)

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        if self._split is not None:
            return [self.count_ordinary(t) for t in texts]
        return self._engine.count_batch(texts)


def _scanner_code(scanner: str | None) -> int:
    assert _native is not None
    return SCANNERS[scanner] if scanner is not None else _native.SCAN_NONE


PIECE_CACHE_STATS = (
    "capacity_bytes",
    "capacity_entries",
    "entries",
    "hits",
    "misses",
    "inserts",
    "refused",
    "busy",
)


def configure_piece_cache(nbytes: int) -> None:
    """The process's piece cache at most `nbytes` (0: none); asking for the size it already has
    keeps it and its contents. A new table is keyed with 16 bytes from os.urandom."""
    if _native is not None:
        _native.piece_cache(nbytes, os.urandom(16))


HOT_PIECES_STATS = ("table_bytes", "tables", "held_bytes", "hits", "misses", "inserts")


def configure_hot_pieces(nbytes: int, seed: bytes | None = None) -> None:
    """Each engine's table of hot pieces at most `nbytes` (0: off), made on the engine's next use
    and keyed with `seed` (16 bytes; by default from os.urandom, which a test fixes to get the
    same layout on every run)."""
    if _native is not None:
        _native.hot_pieces(nbytes, os.urandom(16) if seed is None else seed)


def hot_pieces_stats() -> dict[str, int]:
    """The size asked of each table, the tables and bytes held, and the hits, misses and
    inserts of them all since the process started (or forked). Zero without the extension."""
    if _native is None:
        return dict.fromkeys(HOT_PIECES_STATS, 0)
    return _native.hot_pieces_stats()


def piece_cache_stats() -> dict[str, int]:
    """The piece cache's capacity (bytes, entries), entries held, and since the process started
    (or forked): hits, misses, inserts, refused (admission said no), busy (a bucket was locked by
    another thread, so the probe counted as a miss). All zero without the extension or a cache."""
    if _native is None:
        return dict.fromkeys(PIECE_CACHE_STATS, 0)
    return _native.piece_cache_stats()


def pairs_all_whole(vocab: Vocabulary) -> bool:
    """Whether every token of a `pairs` vocabulary merges to itself alone under the `pairs` rule,
    checked in C (`Vocabulary.self_consistent`'s check, 100x faster)."""
    if _native is None:
        raise RuntimeError("the native engine is not built")
    # the merge table is all this check needs (no backtracking tables)
    engine = _native.Engine(
        "pairs", vocab.tokens, vocab.byte_ids, vocab._triples, 0, backtracking=False
    )
    return engine.all_whole(vocab.tokens)


def build_tokens(
    rule: str, seed: dict[int, bytes], merges: list[tuple[int, int, int]]
) -> tuple[list[bytes | None], bytes] | None:
    """Every token's bytes by id and the merges as a flat uint32 buffer, when the merge rules of
    format v1 (children defined first, no pair twice, new ids in order and unused; for `ranks`, no
    two tokens with the same bytes) all hold for `merges` on top of the `seed` tokens (id -> bytes).
    None means "not verified" (a rule is broken, or no extension): the caller runs the reference
    checks in service/store/validation.py, which name the broken entry."""
    if _native is None:
        return None
    return _native.build_tokens(rule, seed, merges)


def split(scanner: str, text: str) -> list[str]:
    """The pieces the C scanner of a shipped pattern (a key of SCANNERS) cuts `text` into."""
    if _native is None:
        raise RuntimeError("the native engine is not built")
    return _native.split(SCANNERS[scanner], text)
