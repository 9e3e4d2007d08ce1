"""The word cut of SentencePiece-style text: a stretch that the pre-tokenizers leave whole (a
whole line for Gemma) is cut before each metaspace character (`mark`, '▁') and the words merge
one by one, through the engine's memo and piece cache, instead of one long merge per line.

A merge only ever makes tokens of the vocabulary, and both merge rules work within a piece, so a
cut that no token can span changes no id: the merges on either side never meet. A token spans a
cut at q only if it holds the mark's bytes (or a prefix of them, at its end) after its first byte,
and the text around q reads as that token. Each such token and place gives a context (the bytes
before the mark, those from it) in which the engine does not cut (service/bpe/csrc/wordcut.h);
a context that another implies is dropped. Gemma 3 has 30 runs of '▁' ('▁' before '▁' is
never cut) and '>▁</'."""

from __future__ import annotations

from collections.abc import Iterable

MAX_CONTEXTS = 64  # the engine's bound (WC_MAX_CONTEXTS): more, and there is no word cut
MAX_CONTEXT_BYTES = 256  # the engine's bound on each side (WC_MAX_BYTES)
MAX_FOUND = 4096  # contexts before dropping the implied ones (a quadratic step)

Context = tuple[bytes, bytes]


def contexts(tokens: Iterable[bytes | None], mark: str) -> list[Context] | None:
    """The contexts in which a cut before `mark` is unsafe for a vocabulary's `tokens` (every
    token the engine can make), or None when they are too many for the engine."""
    m = mark.encode("utf-8")
    lead = m[:1]
    found: set[Context] = set()
    for token in tokens:
        if token is None:
            continue
        k = token.find(lead, 1)
        while k != -1:
            rest = token[k:]
            if rest.startswith(m) or m.startswith(rest):
                found.add((token[:k], rest))
            k = token.find(lead, k + 1)
        if len(found) > MAX_FOUND:
            return None
    kept = sorted(c for c in found if not any(_implies(o, c) for o in found if o != c))
    if len(kept) > MAX_CONTEXTS or any(
        len(b) > MAX_CONTEXT_BYTES or len(a) > MAX_CONTEXT_BYTES for b, a in kept
    ):
        return None
    return kept


def _implies(weaker: Context, stronger: Context) -> bool:
    """Whether every place `stronger` holds at, `weaker` holds at too (so `stronger` adds no
    unsafe cut): its bytes before end those of `stronger`, its bytes from start them."""
    return stronger[0].endswith(weaker[0]) and stronger[1].startswith(weaker[1])
