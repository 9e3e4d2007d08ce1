"""A tokenizer of the service with tiktoken's `Encoding` interface: `Encoding` (blocking) and
`AsyncEncoding` (the same methods, awaited). Attributes as tiktoken's: `name`, `n_vocab` (the
highest id + 1, special tokens included), `max_token_value`, `eot_token`, `special_tokens_set`;
also `ref` (the exact `name@version` served) and `info` (all the service says of it).

Beyond tiktoken: `count` (no ids list travels), and `decode(errors="strict")` raises a typed
`UndecodableBytesError` naming the bytes and their offset.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from toksvc_client.calls import Allowed, Disallowed, EncodingCalls

if TYPE_CHECKING:
    from toksvc_client.aio import AsyncClient
    from toksvc_client.client import Client

_SERVER_ERRORS = ("strict", "replace")


class _Facts:
    """What an encoding is, as tiktoken names it."""

    def __init__(self, calls: EncodingCalls) -> None:
        self._calls = calls
        self.info = calls.info
        self.name = calls.name
        self.ref = calls.ref
        self.n_vocab = calls.n_vocab
        self.max_token_value = calls.max_token_value
        self.special_tokens_set = calls.special_tokens_set

    @property
    def eot_token(self) -> int:
        """The id of `<|endoftext|>` (KeyError if the tokenizer has none, as in tiktoken)."""
        return self._calls.eot_token


class Encoding(_Facts):
    """Blocking; every method is one request (batches: one per 256 texts)."""

    def __init__(self, client: Client, calls: EncodingCalls) -> None:
        super().__init__(calls)
        self._client = client

    def __repr__(self) -> str:
        return f"<Encoding {self.ref!r} of {self._client.base_url}>"

    def encode(
        self,
        text: str,
        *,
        allowed_special: Allowed = frozenset(),
        disallowed_special: Disallowed = "all",
    ) -> list[int]:
        return self._client.run(self._calls.encode(text, allowed_special, disallowed_special))

    def encode_ordinary(self, text: str) -> list[int]:
        return self.encode(text, disallowed_special=())

    def count(
        self,
        text: str,
        *,
        allowed_special: Allowed = frozenset(),
        disallowed_special: Disallowed = "all",
    ) -> int:
        return self._client.run(self._calls.count(text, allowed_special, disallowed_special))

    def encode_batch(
        self,
        text: Sequence[str],
        *,
        num_threads: int = 8,
        allowed_special: Allowed = frozenset(),
        disallowed_special: Disallowed = "all",
    ) -> list[list[int]]:
        """`num_threads` is accepted for tiktoken's signature; the server does the work."""
        calls = self._calls.encode_batch(text, allowed_special, disallowed_special)
        return [ids for call in calls for ids in self._client.run(call)]

    def encode_ordinary_batch(
        self, text: Sequence[str], *, num_threads: int = 8
    ) -> list[list[int]]:
        return self.encode_batch(text, disallowed_special=())

    def decode(self, tokens: Sequence[int], errors: str = "replace") -> str:
        if errors in _SERVER_ERRORS:
            return self._client.run(self._calls.decode(tokens, errors))
        return self.decode_bytes(tokens).decode("utf-8", errors)

    def decode_bytes(self, tokens: Sequence[int]) -> bytes:
        return self._client.run(self._calls.decode_bytes(tokens))

    def decode_single_token_bytes(self, token: int) -> bytes:
        return self.decode_bytes([token])

    def decode_tokens_bytes(self, tokens: Sequence[int]) -> list[bytes]:
        return [b for call in self._calls.decode_each(tokens) for b in self._client.run(call)]


class AsyncEncoding(_Facts):
    """The same methods as `Encoding`, awaited."""

    def __init__(self, client: AsyncClient, calls: EncodingCalls) -> None:
        super().__init__(calls)
        self._client = client

    def __repr__(self) -> str:
        return f"<AsyncEncoding {self.ref!r} of {self._client.base_url}>"

    async def encode(
        self,
        text: str,
        *,
        allowed_special: Allowed = frozenset(),
        disallowed_special: Disallowed = "all",
    ) -> list[int]:
        return await self._client.run(self._calls.encode(text, allowed_special, disallowed_special))

    async def encode_ordinary(self, text: str) -> list[int]:
        return await self.encode(text, disallowed_special=())

    async def count(
        self,
        text: str,
        *,
        allowed_special: Allowed = frozenset(),
        disallowed_special: Disallowed = "all",
    ) -> int:
        return await self._client.run(self._calls.count(text, allowed_special, disallowed_special))

    async def encode_batch(
        self,
        text: Sequence[str],
        *,
        num_threads: int = 8,
        allowed_special: Allowed = frozenset(),
        disallowed_special: Disallowed = "all",
    ) -> list[list[int]]:
        out: list[list[int]] = []
        for call in self._calls.encode_batch(text, allowed_special, disallowed_special):
            part: list[list[int]] = await self._client.run(call)
            out += part
        return out

    async def encode_ordinary_batch(
        self, text: Sequence[str], *, num_threads: int = 8
    ) -> list[list[int]]:
        return await self.encode_batch(text, disallowed_special=())

    async def decode(self, tokens: Sequence[int], errors: str = "replace") -> str:
        if errors in _SERVER_ERRORS:
            return await self._client.run(self._calls.decode(tokens, errors))
        return (await self.decode_bytes(tokens)).decode("utf-8", errors)

    async def decode_bytes(self, tokens: Sequence[int]) -> bytes:
        return await self._client.run(self._calls.decode_bytes(tokens))

    async def decode_single_token_bytes(self, token: int) -> bytes:
        return await self.decode_bytes([token])

    async def decode_tokens_bytes(self, tokens: Sequence[int]) -> list[bytes]:
        out: list[bytes] = []
        for call in self._calls.decode_each(tokens):
            part: list[bytes] = await self._client.run(call)
            out += part
        return out
