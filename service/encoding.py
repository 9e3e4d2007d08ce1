"""The library's tiktoken-like entry point: `get_encoding(name)` gives a tokenizer of the bundled
store (or of the stores named) with tiktoken's `Encoding` interface, on the native engine
wherever it is built.

`Encoding` wraps a store's `Tokenizer` and names its methods and attributes as tiktoken does:
`encode` (tiktoken's special-token policy, `allowed_special` literals the tokenizer lacks
ignored), `encode_ordinary`, `encode_batch`, `decode` (`errors="replace"` by default),
`decode_bytes`, `decode_tokens_bytes`, `name`, `n_vocab` (the highest id + 1), `eot_token`,
`special_tokens_set`. Beyond tiktoken: `count` (no ids list kept), `ref` and `sha256` (the exact
file), and `tokenizer` (the store's own object). Errors are this project's typed errors:
`DisallowedSpecialError` where tiktoken raises ValueError, `UnknownIdError` for KeyError.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Sequence, Set
from pathlib import Path
from typing import Literal

from service.bpe import Tokenizer
from service.errors import TokenizerNotFoundError
from service.settings import BUNDLED_STORE
from service.store.loader import listed_names, listed_refs, load_store
from service.store.registry import LoadedTokenizer

Allowed = Literal["all"] | Set[str]
Disallowed = Literal["all"] | Collection[str]


class Encoding:
    def __init__(self, loaded: LoadedTokenizer) -> None:
        self.tokenizer: Tokenizer = loaded.tokenizer
        self.name = loaded.name
        self.ref = loaded.ref
        self.sha256 = loaded.sha256
        self.n_vocab = self.tokenizer.n_vocab
        self.max_token_value = self.n_vocab - 1
        self.special_tokens_set: set[str] = set(self.tokenizer.special_tokens)

    def __repr__(self) -> str:
        return f"<Encoding {self.ref!r}>"

    @property
    def eot_token(self) -> int:
        """The id of `<|endoftext|>` (KeyError if the tokenizer has none, as in tiktoken)."""
        return self.tokenizer.special_tokens["<|endoftext|>"]

    def _policy(self, allowed: Allowed, disallowed: Disallowed) -> tuple[Set[str], Set[str]]:
        """tiktoken's sets: only literals the tokenizer has are allowed (others are ignored)."""
        allowed_set = self.special_tokens_set if allowed == "all" else set(allowed)
        allowed_set &= self.special_tokens_set
        if disallowed == "all":
            return allowed_set, self.special_tokens_set - allowed_set
        return allowed_set, set(disallowed) & self.special_tokens_set

    def encode(
        self,
        text: str,
        *,
        allowed_special: Allowed = frozenset(),
        disallowed_special: Disallowed = "all",
    ) -> list[int]:
        allowed, disallowed = self._policy(allowed_special, disallowed_special)
        return self.tokenizer.encode(
            _scalar_values(text), allowed_special=allowed, disallowed_special=disallowed
        )

    def encode_ordinary(self, text: str) -> list[int]:
        return self.tokenizer.encode_ordinary(_scalar_values(text))

    def encode_batch(
        self,
        text: Sequence[str],
        *,
        num_threads: int = 8,
        allowed_special: Allowed = frozenset(),
        disallowed_special: Disallowed = "all",
    ) -> list[list[int]]:
        allowed, disallowed = self._policy(allowed_special, disallowed_special)
        return [
            self.tokenizer.encode(
                _scalar_values(t), allowed_special=allowed, disallowed_special=disallowed
            )
            for t in text
        ]

    def count(
        self,
        text: str,
        *,
        allowed_special: Allowed = frozenset(),
        disallowed_special: Disallowed = "all",
    ) -> int:
        allowed, disallowed = self._policy(allowed_special, disallowed_special)
        return self.tokenizer.count(
            _scalar_values(text), allowed_special=allowed, disallowed_special=disallowed
        )

    def decode(self, tokens: Sequence[int], errors: str = "replace") -> str:
        if errors in ("strict", "replace"):
            return self.tokenizer.decode(tokens, errors)  # type: ignore[arg-type]
        return self.tokenizer.decode_bytes(tokens).decode("utf-8", errors)

    def decode_bytes(self, tokens: Sequence[int]) -> bytes:
        return self.tokenizer.decode_bytes(tokens)

    def decode_single_token_bytes(self, token: int) -> bytes:
        return self.tokenizer.decode_bytes([token])

    def decode_tokens_bytes(self, tokens: Sequence[int]) -> list[bytes]:
        return [self.tokenizer.decode_bytes([t]) for t in tokens]


def get_encoding(name: str, store: Path | Sequence[Path] = BUNDLED_STORE) -> Encoding:
    """The tokenizer `name` (its default version) or `name@version` of the store(s), loaded once
    per process (verified against the manifest, native engine wherever built)."""
    stores = (store,) if isinstance(store, Path) else tuple(store)
    return _load(name, stores)


def list_encoding_names(store: Path | Sequence[Path] = BUNDLED_STORE) -> list[str]:
    """Every tokenizer name the store(s) list."""
    stores = (store,) if isinstance(store, Path) else tuple(store)
    return sorted({ref.partition("@")[0] for ref in listed_refs(stores)})


@functools.lru_cache(maxsize=32)
def _load(name: str, stores: tuple[Path, ...]) -> Encoding:
    registry = load_store(stores, only=name.partition("@")[0])
    try:
        return Encoding(registry.resolve(name))
    except TokenizerNotFoundError:
        if registry.failures:  # listed, but it did not load: say why
            raise registry.failures[0] from None
        raise TokenizerNotFoundError(name, listed_names(stores)) from None


def _scalar_values(text: str) -> str:
    """Lone surrogates become U+FFFD, as tiktoken's encode does."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text
