"""Choosing the engine that serves a vocabulary.

`TiktokenEngine` runs pre-tokenization and merging in tiktoken's Rust core (it releases the GIL).
It is exact by construction for every `ranks` vocabulary (that is tiktoken's own rule), and for a
`pairs` vocabulary in which every token encodes to itself: there, merging the lowest-rank pair and
merging the lowest-rank bytes give the same ids for every input. Everything else, a vocabulary
without a pattern, or a pattern tiktoken's regex engine rejects, keeps the pure-Python reference
engine. Normalization and special tokens stay in `Tokenizer`, in front of either engine.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Literal

import tiktoken

from service.bpe import Engine, PythonEngine, Vocabulary
from service.store.presets import PATTERNS

EngineChoice = Literal["auto", "python"]
EngineFactory = Callable[[Vocabulary, "str | None", bool], Engine]
log = logging.getLogger("toksvc")


# A single newline after a non-space and before a letter or digit ends a piece under every preset
# pattern (gpt2, cl100k, o200k, qwen2), whether the text goes on or stops there; so a long text cut
# at such points and encoded part by part gives exactly the ids of the whole (tested on every
# corpus). tiktoken's core holds the GIL for a whole call, so without the cuts a megabyte would
# stall the event loop for ~0.1 s; with them a call holds it for a few milliseconds at a time.
# (Measured: the core never runs in parallel threads, so the cuts buy latency, not throughput.)
CUT_CHARS = 32 * 1024
SAFE_TO_CUT = frozenset(PATTERNS.values())


def cut(text: str, size: int | None = None) -> list[str]:
    """Cut text into parts of about `size` (default CUT_CHARS) characters, at safe points only."""
    size = size or CUT_CHARS
    parts, start, end = [], 0, len(text) - 1
    while len(text) - start > size:
        at = text.find("\n", start + size)
        while 0 < at < end and not (text[at + 1].isalnum() and not text[at - 1].isspace()):
            at = text.find("\n", at + 1)
        if not 0 < at < end:
            break
        parts.append(text[start : at + 1])
        start = at + 1
    parts.append(text[start:])
    return parts


class TiktokenEngine:
    def __init__(self, vocab: Vocabulary, pattern: str) -> None:
        # ranks = ids; for a self-consistent pairs vocabulary, every token has its own bytes
        ranks = {data: tid for tid, data in vocab.items()}
        self._encoding = tiktoken.Encoding(
            "toksvc", pat_str=pattern, mergeable_ranks=ranks, special_tokens={}
        )
        self._encode = self._encoding.encode_ordinary
        self._cuttable = pattern in SAFE_TO_CUT

    def encode_ordinary(self, text: str) -> list[int]:
        if not self._cuttable or len(text) <= 2 * CUT_CHARS:
            return self._encode(text)
        out: list[int] = []
        for part in cut(text):
            out += self._encode(part)
        return out

    def count_ordinary(self, text: str) -> int:
        if not self._cuttable or len(text) <= 2 * CUT_CHARS:
            return len(self._encode(text))
        return sum(len(self._encode(part)) for part in cut(text))


def engine_factory(choice: EngineChoice = "auto", cache_size: int = 65536) -> EngineFactory:
    """`auto`: tiktoken's core wherever it is exact, else the reference; `python`: always the
    reference (for differential tests and benchmarks)."""

    def build(vocab: Vocabulary, pattern: str | None, self_consistent: bool) -> Engine:
        if choice == "auto" and pattern is not None and self_consistent:
            try:
                return TiktokenEngine(vocab, pattern)
            except ValueError as exc:  # a pattern fancy-regex cannot compile
                log.warning("tiktoken engine unavailable (%s); using the Python engine", exc)
        return PythonEngine(vocab, pattern, cache_size)

    return build
