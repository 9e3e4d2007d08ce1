"""The tokenizer front: normalization and special tokens in front of an engine, and decoding.

Special tokens follow tiktoken's policy. `disallowed_special` (default "all": every special token
not allowed) makes text that contains such a literal an error naming it; `allowed_special` (a set,
or "all") encodes those literals as their special ids; any other literal is ordinary text.

Special tokens are found in the raw text, before normalization, so normalization can neither hide a
special token nor make one (NFKC would turn a fullwidth look-alike into the real literal).
Normalization then applies to each stretch of ordinary text between allowed special tokens.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator, Mapping, Sequence, Set
from functools import lru_cache
from typing import Literal

from service.bpe.cache import TextCache
from service.bpe.engine import Engine
from service.bpe.vocab import Vocabulary
from service.errors import (
    DisallowedSpecialError,
    SurrogateError,
    UndecodableBytesError,
    UnknownIdError,
    UnknownSpecialError,
)

Normalization = Literal["none", "NFC", "NFKC"]
Errors = Literal["strict", "replace"]
SpecialSet = Set[str] | Literal["all"]

_SURROGATE = re.compile("[\ud800-\udfff]")


class Tokenizer:
    def __init__(
        self,
        vocab: Vocabulary,
        engine: Engine,
        special_tokens: Mapping[str, int] | None = None,
        normalization: Normalization = "none",
        *,
        cache: TextCache | None = None,
        cache_owner: str = "",
    ) -> None:
        """`cache` keeps whole ordinary texts -> ids; `cache_owner` must name this exact
        vocabulary (the store uses the file's sha256)."""
        self.vocab = vocab
        self.engine = engine
        self._cache = cache
        self._owner = cache_owner
        self.special_tokens: dict[str, int] = dict(special_tokens or {})
        self.normalization = normalization
        self._decoder: dict[int, bytes] = dict(vocab.decoder)
        for text, tid in self.special_tokens.items():
            self._decoder[tid] = text.encode("utf-8")

    @property
    def n_vocab(self) -> int:
        """Number of defined ids, special tokens included."""
        return len(self._decoder)

    # --- encoding ---------------------------------------------------------------------------

    def encode(
        self,
        text: str,
        *,
        allowed_special: SpecialSet = frozenset(),
        disallowed_special: SpecialSet = "all",
    ) -> list[int]:
        out: list[int] = []
        for segment, special_id in self._segments(text, allowed_special, disallowed_special):
            if special_id is None:
                out += self._ordinary(self._normalize(segment))
            else:
                out.append(special_id)
        return out

    def count(
        self,
        text: str,
        *,
        allowed_special: SpecialSet = frozenset(),
        disallowed_special: SpecialSet = "all",
    ) -> int:
        total = 0
        for segment, special_id in self._segments(text, allowed_special, disallowed_special):
            if special_id is not None:
                total += 1
            elif self._cache is None:  # no ids list is kept: the engine only counts
                total += self.engine.count_ordinary(self._normalize(segment))
            else:
                total += len(self._ordinary(self._normalize(segment)))
        return total

    def encode_ordinary(self, text: str) -> list[int]:
        """Encode with every special-token literal treated as ordinary text."""
        return self.encode(text, disallowed_special=frozenset())

    def _ordinary(self, text: str) -> Sequence[int]:
        if self._cache is None:
            return self.engine.encode_ordinary(text)
        return self._cache.ids(self._owner, text, self.engine.encode_ordinary)

    def _normalize(self, text: str) -> str:
        form = self.normalization
        if form == "none" or unicodedata.is_normalized(form, text):
            return text
        return unicodedata.normalize(form, text)

    def _segments(
        self, text: str, allowed: SpecialSet, disallowed: SpecialSet
    ) -> Iterator[tuple[str, int | None]]:
        """Split text into (ordinary text, None) and (literal, special id) segments."""
        if (surrogate := _SURROGATE.search(text)) is not None:
            raise SurrogateError(surrogate.start())
        allowed_set = self._special_set(allowed)
        disallowed_set = (
            self.special_tokens.keys() - allowed_set
            if disallowed == "all"
            else self._special_set(disallowed)
        )
        if disallowed_set and (found := _finder(frozenset(disallowed_set)).search(text)):
            raise DisallowedSpecialError(found.group(), found.start())
        if not allowed_set:
            yield text, None
            return
        start = 0
        for found in _finder(frozenset(allowed_set)).finditer(text):
            if found.start() > start:
                yield text[start : found.start()], None
            yield found.group(), self.special_tokens[found.group()]
            start = found.end()
        if start < len(text) or start == 0:
            yield text[start:], None

    def _special_set(self, tokens: SpecialSet) -> Set[str]:
        if tokens == "all":
            return self.special_tokens.keys()
        unknown = set(tokens) - self.special_tokens.keys()
        if unknown:
            raise UnknownSpecialError(unknown)
        return tokens

    # --- decoding ---------------------------------------------------------------------------

    def decode_bytes(self, ids: Sequence[int]) -> bytes:
        """The bytes of all ids joined. Unknown ids are an error that names them."""
        table = self._decoder
        try:
            return b"".join([table[i] for i in ids])
        except KeyError:
            raise UnknownIdError([i for i in ids if i not in table], self.n_vocab) from None

    def decode(self, ids: Sequence[int], errors: Errors = "strict") -> str:
        """Join the bytes of all ids, then decode them as UTF-8 (never token by token)."""
        data = self.decode_bytes(ids)
        try:
            return data.decode("utf-8", errors)
        except UnicodeDecodeError as exc:
            raise UndecodableBytesError(exc.start, data[exc.start : exc.end]) from None


@lru_cache(maxsize=256)
def _finder(literals: frozenset[str]) -> re.Pattern[str]:
    """A regex that finds any of the literals, the longest first where several start together."""
    return re.compile("|".join(map(re.escape, sorted(literals, key=lambda s: (-len(s), s)))))
