"""Token budgets on text: truncate to at most N tokens, and chunk into pieces of at most N tokens.

Cuts fall between characters (never inside one) and every count returned is the count of the
returned text itself. The cut is the longest prefix (or suffix) found by a binary search from
the tokens' own boundary, then grown one character at a time while it still fits, so adding the
next character would exceed the budget.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from service.bpe import Tokenizer
from service.errors import InputError

Keep = Literal["start", "end"]


@dataclass(frozen=True, slots=True)
class Cut:
    text: str
    start: int  # code point offsets into the input
    end: int
    count: int
    truncated: bool


def truncate(tok: Tokenizer, text: str, max_tokens: int, keep: Keep = "start") -> Cut:
    def count(s: str) -> int:
        return tok.count(s, disallowed_special=frozenset())

    total = count(text)
    if total <= max_tokens:
        return Cut(text, 0, len(text), total, False)
    if keep == "start":
        n, c = _longest(lambda k: count(text[:k]), len(text), max_tokens)
        return Cut(text[:n], 0, n, c, True)
    n, c = _longest(lambda k: count(text[len(text) - k :]), len(text), max_tokens)
    return Cut(text[len(text) - n :], len(text) - n, len(text), c, True)


def _longest(count: Callable[[int], int], size: int, limit: int) -> tuple[int, int]:
    """The largest k (0 <= k < size, found by bisection then grown) with count(k) <= limit."""
    lo, hi = 0, size  # count(lo) <= limit (count(0) == 0), count(hi) > limit
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if count(mid) <= limit:
            lo = mid
        else:
            hi = mid
    c = count(lo)
    while lo + 1 < size and (nxt := count(lo + 1)) <= limit:
        lo, c = lo + 1, nxt
    return lo, c


def chunk(tok: Tokenizer, text: str, max_tokens: int, overlap: int = 0) -> list[Cut]:
    """Chunks of at most `max_tokens` covering the text; each after the first starts with the
    longest end of the previous chunk that has at most `overlap` tokens."""
    if max_tokens < 1 or overlap < 0 or overlap >= max_tokens:
        raise InputError("chunk needs max_tokens >= 1 and 0 <= overlap < max_tokens")
    chunks: list[Cut] = []
    start = 0
    while start < len(text) or not chunks:
        piece = truncate(tok, text[start:], max_tokens, "start")
        if not piece.text and start < len(text):
            raise InputError(
                f"the character at {start} alone needs more than max_tokens={max_tokens} tokens"
            )
        end = start + len(piece.text)
        chunks.append(Cut(piece.text, start, end, piece.count, piece.truncated))
        if end >= len(text):
            break
        back = truncate(tok, piece.text, overlap, "end") if overlap else None
        start = max(end - len(back.text), start + 1) if back is not None else end
    return chunks
