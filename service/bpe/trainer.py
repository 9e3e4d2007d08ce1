"""Training a `pairs` tokenizer: classic byte-level BPE.

Each round merges the most frequent adjacent pair. Pairs are counted with overlap ("aaa" holds the
pair (a, a) twice) and replaced without overlap, left to right. Ties between equally frequent pairs
go to the lexicographically smallest (left id, right id), which makes training deterministic.
Training stops at `vocab_size` or as soon as the best pair occurs fewer than `min_frequency`
times, so the vocabulary may come out smaller than asked.

The work is done on the unique pre-tokenized pieces with their frequencies, and after each merge
only the pieces that hold the merged pair are re-counted; the corpus is never scanned again.
"""

from __future__ import annotations

import heapq
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise

from service.bpe.engine.matching import matches_of
from service.errors import ConfigError

Progress = Callable[[int, int], None]


@dataclass(frozen=True, slots=True)
class TrainedModel:
    merges: list[tuple[int, int, int]]
    pattern: str | None
    special_tokens: dict[str, int]


def train(
    corpus: Iterable[str],
    vocab_size: int,
    pattern: str | None = None,
    special_tokens: Sequence[str] = (),
    *,
    min_frequency: int = 2,
    progress: Progress | None = None,
) -> TrainedModel:
    """Learn up to `vocab_size - 256` merges from the texts in `corpus`.

    Special-token literals are cut out of the corpus before counting (no merge learns them) and get
    the ids right after the last merge.
    """
    if vocab_size < 256:
        raise ConfigError(f"vocab_size must be at least 256 (the single bytes), got {vocab_size}")
    if min_frequency < 1:
        raise ConfigError(f"min_frequency must be at least 1, got {min_frequency}")
    pieces = _count_pieces(corpus, pattern, special_tokens)
    words = [list(piece.encode("utf-8")) for piece in pieces]
    freqs = list(pieces.values())

    counts: Counter[tuple[int, int]] = Counter()
    where: defaultdict[tuple[int, int], set[int]] = defaultdict(set)
    for w, (word, freq) in enumerate(zip(words, freqs, strict=True)):
        for pair in pairwise(word):
            counts[pair] += freq
            where[pair].add(w)
    heap = [(-c, pair) for pair, c in counts.items()]
    heapq.heapify(heap)

    merges: list[tuple[int, int, int]] = []
    wanted = vocab_size - 256
    while len(merges) < wanted and heap:
        neg, pair = heapq.heappop(heap)
        if counts.get(pair, 0) != -neg:
            continue  # stale entry: the count changed and a fresh entry is in the heap
        if -neg < min_frequency:
            break
        new = 256 + len(merges)
        merges.append((pair[0], pair[1], new))
        changed: set[tuple[int, int]] = set()
        for w in where.pop(pair):
            word, freq = words[w], freqs[w]
            for old in pairwise(word):
                counts[old] -= freq
                changed.add(old)
            word[:] = _replace(word, pair, new)
            for fresh in pairwise(word):
                counts[fresh] += freq
                where[fresh].add(w)
                changed.add(fresh)
        for p in changed:
            if counts[p] > 0:
                heapq.heappush(heap, (-counts[p], p))
            else:
                del counts[p]
        if progress is not None:
            progress(len(merges), wanted)
    next_id = 256 + len(merges)
    specials = {text: next_id + i for i, text in enumerate(dict.fromkeys(special_tokens))}
    return TrainedModel(merges, pattern, specials)


def _count_pieces(
    corpus: Iterable[str], pattern: str | None, special_tokens: Sequence[str]
) -> Counter[str]:
    split = matches_of(pattern) if pattern else None
    # longest first, as the tokenizer finds them: with `<s>` and `<s>x`, `<s>x` is one literal
    longest_first = sorted(set(special_tokens), key=lambda t: (-len(t), t))
    cut = re.compile("|".join(map(re.escape, longest_first))) if special_tokens else None
    pieces: Counter[str] = Counter()
    for text in corpus:
        for segment in cut.split(text) if cut else (text,):
            pieces.update(split(segment) if split else (segment,) if segment else ())
    return pieces


def _replace(word: list[int], pair: tuple[int, int], new: int) -> list[int]:
    """Replace every occurrence of pair in word, left to right, without overlap."""
    out: list[int] = []
    i, n = 0, len(word)
    a, b = pair
    while i < n:
        if i + 1 < n and word[i] == a and word[i + 1] == b:
            out.append(new)
            i += 2
        else:
            out.append(word[i])
            i += 1
    return out
