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

EngineChoice = Literal["auto", "python"]
EngineFactory = Callable[[Vocabulary, "str | None", bool], Engine]
log = logging.getLogger("toksvc")


class TiktokenEngine:
    def __init__(self, vocab: Vocabulary, pattern: str) -> None:
        # ranks = ids; for a self-consistent pairs vocabulary, every token has its own bytes
        ranks = {data: tid for tid, data in vocab.items()}
        self._encoding = tiktoken.Encoding(
            "toksvc", pat_str=pattern, mergeable_ranks=ranks, special_tokens={}
        )
        self._encode = self._encoding.encode_ordinary  # releases the GIL while it merges

    def encode_ordinary(self, text: str) -> list[int]:
        return self._encode(text)

    def count_ordinary(self, text: str) -> int:
        return len(self._encode(text))


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
