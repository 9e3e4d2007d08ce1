"""Token budgets on text: truncate to at most N tokens, and chunk into pieces of at most N tokens.

Cuts fall between characters (never inside one) and every count returned is the count of the
returned text itself. The text is encoded once; a walk over its tokens (how many characters of
the decoded text each token starts, `pieces.character_starts`) guesses where the N-th token ends.
BPE is not prefix-stable (a text cut at a token boundary may encode differently near the cut), so
the guess is then checked by counting the cut text itself, and moved by galloping and bisection to
a cut that fits while one more character would not. A good guess costs two counts of the piece,
so `chunk` is linear in the text, not quadratic (the idea of rust-gems' interval counting: the
whole encoding predicts every piece's). Each count checks the work's `Deadline`, so the work ends
at its deadline or when it is stopped.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass
from itertools import accumulate
from typing import Literal

from service.bpe.deadline import Deadline
from service.bpe.text.pieces import character_starts
from service.bpe.tokenizer import Tokenizer
from service.errors import InputError, LimitExceededError

Keep = Literal["start", "end"]


@dataclass(frozen=True, slots=True)
class Cut:
    text: str
    start: int  # code point offsets into the input
    end: int
    count: int
    truncated: bool


class _Text:
    """A text, its one encoding and where its tokens end (in characters, as a guess)."""

    def __init__(self, tok: Tokenizer, text: str, deadline: Deadline) -> None:
        self.tok, self.text, self.deadline = tok, text, deadline
        self.n_tokens = self.count(text)
        ids = tok.encode(text, disallowed_special=frozenset()) if self.n_tokens else []
        self.ends = list(accumulate(character_starts(tok, ids)))  # chars up to each token's end

    def count(self, s: str) -> int:
        self.deadline.check()
        return self.tok.count(s, disallowed_special=frozenset())

    def after(self, start: int) -> Callable[[int], int]:
        """The count of the k characters from `start`, as a function of k."""
        return lambda k: self.count(self.text[start : start + k])

    def before(self, end: int) -> Callable[[int], int]:
        """The count of the k characters up to `end`, as a function of k."""
        return lambda k: self.count(self.text[end - k : end])

    def guess_end(self, start: int, n: int) -> int:
        """Where the n-th token after character `start` ends, by the whole text's tokens."""
        first = bisect_right(self.ends, start)  # the first token ending after `start`
        if first + n > len(self.ends):
            return len(self.text)
        return self.ends[first + n - 1] if n else start

    def guess_start(self, end: int, n: int) -> int:
        """Where the n-th token before character `end` starts, by the whole text's tokens."""
        last = bisect_right(self.ends, end) - 1  # the last token ending at or before `end`
        if last - n < 0:
            return 0
        return self.ends[last - n] if n else end


def _longest(count: Callable[[int], int], size: int, limit: int, guess: int) -> tuple[int, int]:
    """A k in [0, size] with count(k) <= limit and (k == size or count(k + 1) > limit), searched
    from `guess` by galloping, then bisection (count(0) must be 0). It is at least every k' such
    that all of count(0..k') fit. Returns k and count(k)."""
    guess = min(max(guess, 0), size)
    at = count(guess)
    if at <= limit:  # gallop up
        lo, c_lo, step = guess, at, 1
        while True:
            if lo == size:
                return lo, c_lo
            hi = min(lo + step, size)
            c_hi = count(hi)
            if c_hi > limit:
                break
            lo, c_lo, step = hi, c_hi, step * 2
    else:  # gallop down
        hi, step = guess, 1
        while True:
            lo = max(hi - step, 0)
            c_lo = count(lo) if lo else 0
            if c_lo <= limit:
                break
            hi, step = lo, step * 2
    while hi - lo > 1:  # count(lo) <= limit < count(hi)
        mid = (lo + hi) // 2
        c_mid = count(mid)
        if c_mid <= limit:
            lo, c_lo = mid, c_mid
        else:
            hi = mid
    return lo, c_lo


def truncate(
    tok: Tokenizer,
    text: str,
    max_tokens: int,
    keep: Keep = "start",
    deadline: Deadline | None = None,
) -> Cut:
    """The longest prefix (or suffix) that encodes to at most `max_tokens`: one more character
    would not fit."""
    t = _Text(tok, text, deadline or Deadline())
    if t.n_tokens <= max_tokens:
        return Cut(text, 0, len(text), t.n_tokens, False)
    size = len(text)
    if keep == "start":
        n, c = _longest(t.after(0), size, max_tokens, t.guess_end(0, max_tokens))
        return Cut(text[:n], 0, n, c, True)
    n, c = _longest(t.before(size), size, max_tokens, size - t.guess_start(size, max_tokens))
    return Cut(text[size - n :], size - n, size, c, True)


CHUNK_BYTES = 64  # what a chunk's answer holds beside its text: keys, offsets, count


def chunk(
    tok: Tokenizer,
    text: str,
    max_tokens: int,
    overlap: int = 0,
    deadline: Deadline | None = None,
    *,
    max_bytes: int | None = None,
) -> list[Cut]:
    """Chunks of at most `max_tokens` covering the text; each after the first starts with the
    longest end of the previous chunk that has at most `overlap` tokens. `max_bytes` bounds the
    answer as it grows (each chunk's UTF-8 text and `CHUNK_BYTES`): small chunks that overlap
    repeat the text many times over, so past it the chunking stops with `LimitExceededError`."""
    if max_tokens < 1 or overlap < 0 or overlap >= max_tokens:
        raise InputError("chunk needs max_tokens >= 1 and 0 <= overlap < max_tokens")
    size, limit = 0, max_bytes if max_bytes is not None else -1
    t = _Text(tok, text, deadline or Deadline())
    if t.n_tokens <= max_tokens:
        return [Cut(text, 0, len(text), t.n_tokens, False)]
    chunks: list[Cut] = []
    start = 0
    while start < len(text):
        rest = len(text) - start
        guess = t.guess_end(start, max_tokens) - start
        n, c = _longest(t.after(start), rest, max_tokens, guess)
        if n == 0:
            raise InputError(
                f"the character at {start} alone needs more than max_tokens={max_tokens} tokens"
            )
        end = start + n
        piece = text[start:end]
        if limit >= 0:
            size += CHUNK_BYTES + (n if piece.isascii() else len(piece.encode("utf-8", "replace")))
            if size > limit:
                raise LimitExceededError("bytes of chunks per answer", limit)
        chunks.append(Cut(piece, start, end, c, n < rest))
        if end >= len(text):
            break
        back = 0
        if overlap:
            guess = end - t.guess_start(end, overlap)
            back, _ = _longest(t.before(end), n, overlap, guess)
        start = max(end - back, start + 1)
    return chunks
