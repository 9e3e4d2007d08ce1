"""The two merge rules, applied to one pre-tokenized piece.

Both rules repeat one step: among the adjacent pairs of symbols that can merge, take the pair of
lowest rank, leftmost on ties, and merge it. They differ in what a symbol is and what a rank is:

- `pairs` (classic BPE, as training produces it): symbols are token ids and the rank of a pair is
  its position in the merge list. Since `pairs` ids are consecutive from 256 in merge order, the new
  id *is* the rank, so `merges` maps (left, right) -> new id. Taking the leftmost pair of lowest
  rank again and again replaces all its occurrences left to right without overlap, because a merge
  creates a new id that can never re-form the same pair.
- `ranks` (tiktoken): symbols are byte strings and the rank of a pair is the id of the token formed
  by the concatenated bytes; a piece that is itself a token is returned whole.

Short pieces use a list scan (C-speed `min`/`index`); long pieces a heap over a linked list, so a
megabyte of one repeated character costs O(n log n), not O(n^2).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping, Sequence
from itertools import pairwise
from typing import TypeVar

S = TypeVar("S", int, bytes)

_NONE = 1 << 62  # rank of a pair that cannot merge
HEAP_FROM = 128  # symbols from which the heap version is faster in Python (C: its own LONG_PIECE)


def merge_pairs(
    ids: list[int], merges: Mapping[tuple[int, int], int], new_of: Sequence[int] | None = None
) -> list[int]:
    """Apply the `pairs` rule to `ids` (modified in place and returned). `new_of`: when given,
    `merges` maps a pair to its rank and `new_of[rank]` is the id it makes (format v2's free ids);
    otherwise the new id is the rank."""
    if len(ids) < 2:
        return ids
    if len(ids) >= HEAP_FROM:
        made_by = (lambda a, b, r: r) if new_of is None else (lambda a, b, r: new_of[r])
        return _merge_long(ids, lambda a, b: merges.get((a, b)), made_by)
    get = merges.get
    ranks = [get(pair, _NONE) for pair in pairwise(ids)]
    while True:
        best = min(ranks)
        if best == _NONE:
            return ids
        i = ranks.index(best)
        made = ids[i] = best if new_of is None else new_of[best]
        del ids[i + 1]
        del ranks[i]
        if i > 0:
            ranks[i - 1] = get((ids[i - 1], made), _NONE)
        if i < len(ranks):
            ranks[i] = get((made, ids[i + 1]), _NONE)
        if not ranks:
            return ids


def merge_ranks(piece: bytes, encoder: Mapping[bytes, int]) -> list[int]:
    """Apply the `ranks` rule to the bytes of one piece and return the token ids."""
    whole = encoder.get(piece)
    if whole is not None:
        return [whole]
    if len(piece) >= HEAP_FROM:
        parts = _merge_long(
            [piece[i : i + 1] for i in range(len(piece))],
            lambda a, b: encoder.get(a + b),
            lambda a, b, r: a + b,
        )
        return [encoder[p] for p in parts]
    get = encoder.get
    # bounds[i] is where part i starts; ranks[i] is the rank of parts i and i + 1 merged
    bounds = list(range(len(piece) + 1))
    ranks = [get(piece[i : i + 2], _NONE) for i in range(len(piece) - 1)]
    while ranks:
        best = min(ranks)
        if best == _NONE:
            break
        i = ranks.index(best)
        del bounds[i + 1]
        del ranks[i]
        if i > 0:
            ranks[i - 1] = get(piece[bounds[i - 1] : bounds[i + 1]], _NONE)
        if i < len(ranks):
            ranks[i] = get(piece[bounds[i] : bounds[i + 2]], _NONE)
    return [encoder[piece[a:b]] for a, b in pairwise(bounds)]


def _merge_long(
    symbols: list[S],
    rank_of: Callable[[S, S], int | None],
    merged: Callable[[S, S, int], S],
) -> list[S]:
    """Heap version of the merge loop: O(n log n) for a piece of n symbols.

    `rank_of(a, b)` gives the rank of merging a and b (None if they cannot merge) and
    `merged(a, b, rank)` the merged symbol. Heap entries are (rank, left position); an entry is
    stale when either symbol it saw has changed since, which re-checking the rank detects (a rank
    names one merged token, so an equal rank means the same merge at the same place).
    """
    n = len(symbols)
    sym: list[S | None] = list(symbols)
    nxt = list(range(1, n + 1))
    prv = list(range(-1, n - 1))
    heap: list[tuple[int, int]] = []
    for i in range(n - 1):
        r = rank_of(symbols[i], symbols[i + 1])
        if r is not None:
            heap.append((r, i))
    heapq.heapify(heap)
    while heap:
        r, i = heapq.heappop(heap)
        a = sym[i]
        j = nxt[i]
        if a is None or j >= n:
            continue
        b = sym[j]
        if b is None or rank_of(a, b) != r:
            continue
        new = merged(a, b, r)
        sym[i] = new
        sym[j] = None
        k = nxt[j]
        nxt[i] = k
        if k < n:
            prv[k] = i
            c = sym[k]
            assert c is not None
            rk = rank_of(new, c)
            if rk is not None:
                heapq.heappush(heap, (rk, i))
        p = prv[i]
        if p >= 0:
            left = sym[p]
            assert left is not None
            rp = rank_of(left, new)
            if rp is not None:
                heapq.heappush(heap, (rp, p))
    return [s for s in sym if s is not None]
