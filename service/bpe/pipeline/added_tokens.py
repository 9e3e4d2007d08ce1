"""A pipeline's added tokens and where they match: one regex of all their literals (a trie,
longest first, built once; a call's allowed special tokens filter its matches), and the text
cut at them as the reference's `split_with_indices` cuts it (with each token's
`lstrip`/`rstrip`/`single_word` rules).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence, Set
from dataclasses import dataclass

import regex

from service.bpe.pipeline.literals import LiteralIndex

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


class Kind:
    """The added tokens of one kind (matched on the raw text, or on normalized text): all their
    literals in one trie regex, built once, whatever a call allows."""

    __slots__ = ("_checked", "index", "last", "open", "plain", "specials", "tokens")

    def __init__(self, tokens: Sequence[AddedLiteral]) -> None:
        by_match: dict[str, list[AddedLiteral]] = {}
        for t in tokens:
            if t.match:
                by_match.setdefault(t.match, []).append(t)
        self.tokens = {m: tuple(ts) for m, ts in by_match.items()}
        self.last = {m: ts[-1] for m, ts in self.tokens.items()}  # a literal listed twice: the last
        self.index = LiteralIndex(self.tokens)
        self.plain = not any(t.lstrip or t.rstrip or t.single_word for t in tokens)
        self.specials = frozenset(t.content for t in tokens if t.special)
        self.open = any(not t.special for t in tokens)  # some token is in play whatever is allowed
        self._checked: tuple[object, bool] = (None, False)

    def all_in(self, allowed: Set[str]) -> bool:
        """Whether every special token of this kind is allowed (the answer for the set last
        asked about is kept when it is a frozenset: "all" is one, and Gemma's 6,414 literals
        cost 0.2 ms)."""
        checked, answer = self._checked
        if checked is not allowed or not isinstance(allowed, frozenset):
            answer = self.specials <= allowed
            self._checked = (allowed, answer)
        return answer


class Matcher:
    """A kind of added tokens under one call's allowed special tokens: those in play are the
    non-special ones and the allowed special ones. Nothing is compiled per call: where some
    literal is not in play, the kind's one regex is searched and its matches filtered
    (`LiteralIndex.find`), which finds what a regex of the tokens in play would."""

    __slots__ = ("allowed", "every", "kind", "pattern", "splits")

    def __init__(self, kind: Kind, allowed: Set[str]) -> None:
        self.kind = kind
        self.allowed = allowed
        self.every = kind.all_in(allowed)  # every literal is in play
        self.pattern = kind.index.pattern
        # `pattern.split` alternates gaps and tokens as `split_added` cuts (no token with rules)
        self.splits = self.every and kind.plain

    def token(self, literal: str) -> AddedLiteral | None:
        """The token `literal` is, if one in play (the last listed, where several are)."""
        for t in reversed(self.kind.tokens[literal]):
            if not t.special or t.content in self.allowed:
                return t
        return None

    def finditer(self, text: str) -> Iterator[tuple[int, int, AddedLiteral]]:
        """(start, end, token) of the leftmost-longest tokens in play, without overlaps."""
        if self.every:
            last = self.kind.last
            for m in self.pattern.finditer(text):
                yield m.start(), m.end(), last[m.group()]
            return
        for start, literal, token in self.kind.index.find(text, self.token):
            yield start, start + len(literal), token


class AddedSet:
    """A pipeline's added tokens, as one cache key hashed by identity (a tuple of hundreds of
    them would be hashed item by item at every encode), and their two kinds, built once."""

    __slots__ = ("items", "normalized", "raw")

    def __init__(self, items: Sequence[AddedLiteral]) -> None:
        self.items = items
        self.raw = Kind([a for a in items if not a.normalized])
        self.normalized = Kind([a for a in items if a.normalized])


def matchers(added: AddedSet, allowed: Set[str]) -> tuple[Matcher | None, Matcher | None]:
    """The raw-text and normalized-text matchers of the added tokens in play (None: no token of
    that kind is)."""
    return _matcher(added.raw, allowed), _matcher(added.normalized, allowed)


def _matcher(kind: Kind, allowed: Set[str]) -> Matcher | None:
    if not kind.tokens or not (kind.open or not kind.specials.isdisjoint(allowed)):
        return None
    return Matcher(kind, allowed)


def _is_word(c: str) -> bool:
    return c.isalnum() or c == "_"


def split_added(text: str, matcher: Matcher | None) -> list[tuple[int, int, AddedLiteral | None]]:
    """(start, end, added token or None) covering `text`, as the reference's
    `split_with_indices` cuts it."""
    if matcher is None or not text:
        return [(0, len(text), None)] if text else []
    found: list[tuple[int, int, AddedLiteral]] = []
    start_offset = 0
    for at, end, token in matcher.finditer(text):
        start, stop = at, end
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
