"""Naive reference implementations, slow and obviously right, used only as test oracles."""

from __future__ import annotations

from collections import Counter
from itertools import pairwise


def naive_pairs(ids: list[int], merges: dict[tuple[int, int], int]) -> list[int]:
    """Classic BPE straight from the definition: lowest-rank pair, replace all, repeat."""
    ids = list(ids)
    while True:
        ranked = [merges[p] for p in pairwise(ids) if p in merges]
        if not ranked:
            return ids
        best = min(ranked)
        pair = next(p for p, r in merges.items() if r == best)
        out, i = [], 0
        while i < len(ids):
            if i + 1 < len(ids) and (ids[i], ids[i + 1]) == pair:
                out.append(best)
                i += 2
            else:
                out.append(ids[i])
                i += 1
        ids = out


def naive_ranks(piece: bytes, encoder: dict[bytes, int]) -> list[int]:
    """tiktoken's rule: merge the adjacent pair whose bytes form the lowest-rank token."""
    if piece in encoder:
        return [encoder[piece]]
    parts = [bytes([b]) for b in piece]
    while True:
        best = None
        for i in range(len(parts) - 1):
            rank = encoder.get(parts[i] + parts[i + 1])
            if rank is not None and (best is None or rank < best[0]):
                best = (rank, i)
        if best is None:
            return [encoder[p] for p in parts]
        i = best[1]
        parts[i : i + 2] = [parts[i] + parts[i + 1]]


def naive_train(text_pieces: list[bytes], n_merges: int, min_frequency: int = 2):  # type: ignore[no-untyped-def]
    """Recount everything every round (the slow way the trainer must agree with)."""
    words = [list(p) for p in text_pieces]
    merges = []
    for k in range(n_merges):
        counts: Counter[tuple[int, int]] = Counter()
        for w in words:
            counts.update(pairwise(w))
        if not counts:
            break
        top = max(counts.values())
        if top < min_frequency:
            break
        pair = min(p for p, c in counts.items() if c == top)
        new = 256 + k
        merges.append((pair[0], pair[1], new))
        words = [naive_pairs(w, {pair: new}) for w in words]
    return merges
