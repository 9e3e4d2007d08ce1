"""Special tokens under tiktoken's policy: which literals a call allows (text that holds a
disallowed one, or a lone surrogate, is refused).

Special tokens are found in the raw text, before normalization, so normalization can neither hide a
special token nor make one (NFKC would turn a fullwidth look-alike into the real literal).
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from typing import Literal

from service.bpe.pipeline.literals import LiteralIndex
from service.errors import DisallowedSpecialError, SurrogateError, UnknownSpecialError

SpecialSet = Set[str] | Literal["all"]


class SpecialTokens:
    """A tokenizer's special tokens (`tokens`: literal -> id, the tokenizer's own mapping) and
    what a call's `allowed_special` and `disallowed_special` make of a text. One regex of all
    the literals (built on first need) finds the disallowed ones of any call."""

    __slots__ = ("_all", "_index", "tokens")

    def __init__(self, tokens: Mapping[str, int]) -> None:
        self.tokens = tokens
        self._all = frozenset(tokens)  # "all", hashed once
        self._index: LiteralIndex | None = None

    def allowed(self, text: str, allowed: SpecialSet, disallowed: SpecialSet) -> Set[str]:
        """The allowed special tokens, after refusing text with a disallowed one."""
        _refuse_surrogates(text)
        allowed_set = self._special_set(allowed)
        if disallowed == "all":
            disallowed_set = set() if allowed == "all" else self._all - allowed_set
        else:
            disallowed_set = self._special_set(disallowed)
        if disallowed_set and text:
            self._refuse(text, disallowed_set)
        return allowed_set

    def _refuse(self, text: str, disallowed: Set[str]) -> None:
        """Raise at the first disallowed literal (leftmost, the longest there)."""
        if self._index is None:
            self._index = LiteralIndex(self.tokens)
        if len(disallowed) == len(self._all):  # all of them: the first match is the one
            found = self._index.pattern.search(text)
            if found:
                raise DisallowedSpecialError(found.group(), found.start())
            return
        pick = lambda literal: literal if literal in disallowed else None  # noqa: E731
        for start, literal, _ in self._index.find(text, pick):
            raise DisallowedSpecialError(literal, start)

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
