"""A pipeline's added tokens and where they match: one regex of all literals in play (a trie,
longest first), and the text cut at them as the reference's `split_with_indices` cuts it (with
each token's `lstrip`/`rstrip`/`single_word` rules).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

import regex

from service.bpe.pipeline.literals import literal_trie

_SPACE_AT_END = regex.compile(r"\p{White_Space}+$")
_SPACE_AT_START = regex.compile(r"\p{White_Space}+")


@dataclass(frozen=True, slots=True)
class AddedLiteral:
    content: str
    id: int
    special: bool = False
    lstrip: bool = False
    rstrip: bool = False
    single_word: bool = False
    normalized: bool = False
    match: str = ""  # what is looked for: `content`, normalized when `normalized` (set by Pipeline)


def special_added(tokens: Mapping[str, int]) -> tuple[AddedLiteral, ...]:
    """Special tokens (literal -> id) as special added tokens, matched on the raw text."""
    return tuple(AddedLiteral(text, tid, special=True) for text, tid in tokens.items())


# the trie (one group: its `split` alternates gaps and matches), the tokens by what is matched,
# and whether no token has lstrip/rstrip/single_word rules (then `split` cuts as `split_added` does)
Matcher = tuple[re.Pattern[str], dict[str, AddedLiteral], bool] | None


class AddedSet:
    """A pipeline's added tokens as one cache key, hashed by identity (a tuple of hundreds of
    them would be hashed item by item at every encode)."""

    __slots__ = ("items",)

    def __init__(self, items: Sequence[AddedLiteral]) -> None:
        self.items = items


@lru_cache(maxsize=64)
def matchers(added: object, allowed: frozenset[str]) -> tuple[Matcher, Matcher]:
    """The raw-text and normalized-text matchers of the added tokens in play (`added`: the
    pipeline's `AddedSet`)."""
    assert isinstance(added, AddedSet)
    live = [a for a in added.items if not a.special or a.content in allowed]
    return _matcher([a for a in live if not a.normalized]), _matcher(
        [a for a in live if a.normalized]
    )


def _matcher(tokens: list[AddedLiteral]) -> Matcher:
    if not tokens:
        return None
    by_content = {t.match: t for t in tokens if t.match}
    plain = not any(t.lstrip or t.rstrip or t.single_word for t in by_content.values())
    return re.compile(f"({literal_trie(sorted(by_content))})"), by_content, plain


def _is_word(c: str) -> bool:
    return c.isalnum() or c == "_"


def split_added(text: str, matcher: Matcher) -> list[tuple[int, int, AddedLiteral | None]]:
    """(start, end, added token or None) covering `text`, as the reference's
    `split_with_indices` cuts it."""
    if matcher is None or not text:
        return [(0, len(text), None)] if text else []
    pattern, tokens, _ = matcher
    found: list[tuple[int, int, AddedLiteral]] = []
    start_offset = 0
    for m in pattern.finditer(text):
        start, stop = m.span()
        token = tokens[m.group()]
        if token.single_word:
            start_space = start == 0 or not _is_word(text[start - 1])
            stop_space = stop == len(text) or not _is_word(text[stop])
            if not (start_space and stop_space):
                continue
        if token.lstrip and (space := _SPACE_AT_END.search(text, 0, start)):
            start = max(space.start(), start_offset)
        if token.rstrip and (space := _SPACE_AT_START.match(text, stop)):
            stop = space.end()
        found.append((start, stop, token))
        start_offset = stop
    out: list[tuple[int, int, AddedLiteral | None]] = []
    offset = 0
    for start, stop, token in found:
        if offset < start:
            out.append((offset, start, None))
        out.append((start, stop, token))
        offset = stop
    if offset < len(text):
        out.append((offset, len(text), None))
    return out
