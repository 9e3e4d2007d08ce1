"""Choosing the engine that serves a vocabulary.

`TiktokenEngine` runs pre-tokenization and merging in tiktoken's Rust core (it releases the GIL).
Its merging is exact by construction for every `ranks` vocabulary (that is tiktoken's own rule),
and for a `pairs` vocabulary in which every token encodes to itself: there, merging the lowest-rank
pair and merging the lowest-rank bytes give the same ids for every input. Its regex engine
(fancy-regex) is not the reference's (`regex`): they agree on the published patterns (tested on
every corpus), but a custom pattern may use a construct they read differently, so a fast engine
must first encode a probe text to the reference's ids. Everything else (a vocabulary without a
pattern, a pattern fancy-regex rejects, a probe that differs) keeps the pure-Python reference
engine. Normalization and special tokens stay in `Tokenizer`, in front of either engine.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Literal

import regex
import tiktoken

from service.bpe import Engine, PythonEngine, Vocabulary

EngineChoice = Literal["auto", "python"]
EngineFactory = Callable[[Vocabulary, "str | None", bool], Engine]
log = logging.getLogger("toksvc")

# What a pattern might split differently: letters of several scripts and cases, marks, digits,
# contractions, punctuation runs, whitespace runs of every kind, line ends, emoji, controls.
PROBE = (
    "Hello, World! It's 2024-06-01; they'll've DONE it... naïve café e\u0301 ÉCOLE ǅ ﬁ\n"
    "  indented\tline\r\n\r\n\n   \n trailing   \nπ≈3.14159 ½ ² ٣ 一二三 "
    "中文字符\uff0c日本語の文\u3002"
    "한국어 हिन्दी ไทย עברית العربية Ελληνικά Русский\u00a0nbsp\u2003em\u200bzw aab ab "
    "x=a[i]+b**2//c; /* c */ <|tag|> @user #tag https://example.com/a?b=c&d=e 😀👍🏽👩‍👩‍👧 \x00\x1b"
    "AAAA aaaa 1234567 ''' \"\"\" --- ... !!! ??? ___ ~~~ \u2028\u2029\f\v end"
)


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


def agrees_on_probe(fast: TiktokenEngine, pattern: str) -> bool:
    """Does the fast engine split the probe as the reference's regex does? Encoding each reference
    piece alone must give the ids of the whole probe. (Only the split is compared: the merging is
    exact by construction, and leaving it out keeps the reference's look-up dicts unbuilt.)"""
    pieces = regex.findall(pattern, PROBE)
    return fast.encode_ordinary(PROBE) == [i for p in pieces for i in fast.encode_ordinary(p)]


def engine_factory(choice: EngineChoice = "auto", cache_size: int = 65536) -> EngineFactory:
    """`auto`: tiktoken's core wherever it is exact, else the reference; `python`: always the
    reference (for differential tests and benchmarks)."""

    def build(vocab: Vocabulary, pattern: str | None, self_consistent: bool) -> Engine:
        if choice == "auto" and pattern is not None and self_consistent:
            try:
                fast = TiktokenEngine(vocab, pattern)
            except ValueError as exc:  # a pattern fancy-regex cannot compile
                log.warning("fast engine unavailable (%s); using the Python engine", exc)
            else:
                if agrees_on_probe(fast, pattern):
                    return fast
                log.warning("the fast engine splits the probe text differently with pattern "
                            "%r; it stays on the Python engine", pattern)  # fmt: skip
        return PythonEngine(vocab, pattern, cache_size)

    return build
