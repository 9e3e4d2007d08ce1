"""Special tokens under tiktoken's policy: which literals a call allows (text that holds a
disallowed one, or a lone surrogate, is refused), and a text cut at the allowed ones.

Special tokens are found in the raw text, before normalization, so normalization can neither hide a
special token nor make one (NFKC would turn a fullwidth look-alike into the real literal).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Set
from functools import lru_cache
from typing import Literal

from service.bpe.pipeline.literals import literal_trie
from service.errors import DisallowedSpecialError, SurrogateError, UnknownSpecialError

SpecialSet = Set[str] | Literal["all"]


class SpecialTokens:
    """A tokenizer's special tokens (`tokens`: literal -> id, the tokenizer's own mapping) and
    what a call's `allowed_special` and `disallowed_special` make of a text."""

    __slots__ = ("_all", "tokens")

    def __init__(self, tokens: Mapping[str, int]) -> None:
        self.tokens = tokens
        self._all = frozenset(tokens)  # "all", hashed once

    def allowed(self, text: str, allowed: SpecialSet, disallowed: SpecialSet) -> Set[str]:
        """The allowed special tokens, after refusing text with a disallowed one."""
        _refuse_surrogates(text)
        allowed_set = self._special_set(allowed)
        if disallowed == "all":
            disallowed_set = set() if allowed == "all" else self._all - allowed_set
        else:
            disallowed_set = self._special_set(disallowed)
        if disallowed_set and (found := _finder(frozenset(disallowed_set)).search(text)):
            raise DisallowedSpecialError(found.group(), found.start())
        return allowed_set

    def segments(
        self, text: str, allowed: SpecialSet, disallowed: SpecialSet
    ) -> Iterator[tuple[str, int | None]]:
        """Split text into (ordinary text, None) and (literal, special id) segments."""
        allowed_set = self.allowed(text, allowed, disallowed)
        if not allowed_set:
            yield text, None
            return
        start = 0
        for found in _finder(frozenset(allowed_set)).finditer(text):
            if found.start() > start:
                yield text[start : found.start()], None
            yield found.group(), self.tokens[found.group()]
            start = found.end()
        if start < len(text) or start == 0:
            yield text[start:], None

    def _special_set(self, tokens: SpecialSet) -> Set[str]:
        if tokens == "all":
            return self._all
        unknown = {t for t in tokens if t not in self.tokens}  # never a copy of the keys
        if unknown:
            raise UnknownSpecialError(unknown)
        return tokens


def _refuse_surrogates(text: str) -> None:
    """Lone surrogates (possible in JSON) are no characters. UTF-8 encoding finds them at C speed
    (0.4 ms per MB, a tenth of a regex scan); only then is the position looked up."""
    if text.isascii():
        return
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise SurrogateError(exc.start) from None


@lru_cache(maxsize=256)
def _finder(literals: frozenset[str]) -> re.Pattern[str]:
    """A regex that finds any of the literals, the longest first where several start together."""
    return re.compile(literal_trie(sorted(literals)))


@lru_cache(maxsize=64)
def splitter(literals: frozenset[str]) -> re.Pattern[str]:
    """`_finder`'s regex as one group, for `split`."""
    return re.compile(f"({literal_trie(sorted(literals))})")
