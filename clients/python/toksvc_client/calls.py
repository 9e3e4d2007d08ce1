"""The requests behind each method of a tiktoken-shaped encoding (`toksvc_client.encoding`),
built without sending anything, so the blocking and the async forms share them.

tiktoken's special-token policy is applied here, before any request, exactly as tiktoken applies
it: `allowed_special` ("all" or a set; literals the tokenizer lacks are ignored) and
`disallowed_special` ("all": every special token not allowed; a literal of it in the text raises
`DisallowedSpecialTokenError`, a `ValueError`). Lone surrogates are replaced by U+FFFD before
encoding, as tiktoken does. `decode` defaults to `errors="replace"`, as tiktoken's does.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterator, Sequence
from collections.abc import Set as AbstractSet
from functools import lru_cache
from typing import Literal, TypeVar

from toksvc_client.errors import TYPE_BASE, DisallowedSpecialTokenError
from toksvc_client.transport import Call, get, post, segment
from toksvc_client.wire import (
    ChatCount,
    Chunk,
    ChunkList,
    CountAnswer,
    DecodeAnswer,
    EncodeAnswer,
    Estimate,
    Json,
    ModelInfo,
    ModelList,
    TokenizerInfo,
    TokenizerList,
    Truncation,
)

A = TypeVar("A")
B = TypeVar("B")
Allowed = Literal["all"] | AbstractSet[str]
Disallowed = Literal["all"] | Collection[str]
BATCH_ITEMS = 256  # per request (the server takes 1024 by default)
BATCH_CHARS = 1 << 20  # per request, so a batch stays well under the body limit


class EncodingCalls:
    """The requests behind each method of an encoding, and tiktoken's policy in front of them."""

    def __init__(self, info: TokenizerInfo) -> None:
        self.info = info
        self.name = info.name
        self.ref = info.ref
        self._special_tokens = dict(info.special_tokens)
        self.special_tokens_set: set[str] = set(info.special_tokens)
        highest = max(info.special_tokens.values(), default=info.vocab_size - 1)
        # tiktoken's n_vocab: the highest id + 1 (a server without the field: specials on top)
        self.n_vocab: int = info.n_vocab if info.n_vocab is not None else highest + 1
        self.max_token_value = self.n_vocab - 1
        self._path = f"/v1/tokenizers/{segment(info.ref)}"

    @property
    def eot_token(self) -> int:
        """The id of `<|endoftext|>` (KeyError if the tokenizer has none, as in tiktoken)."""
        return self._special_tokens["<|endoftext|>"]

    def allowed(self, texts: Sequence[str], allowed: Allowed, disallowed: Disallowed) -> list[str]:
        """tiktoken's check of `texts`; returns the allowed literals the tokenizer has."""
        allowed_set = self.special_tokens_set if allowed == "all" else set(allowed)
        refused = self.special_tokens_set - allowed_set if disallowed == "all" else disallowed
        if refused:
            finder = _finder(frozenset(refused))
            for text in texts:
                if found := finder.search(text):
                    raise _disallowed(found.group(), found.start())
        return sorted(allowed_set & self.special_tokens_set)

    def encode(self, text: str, allowed: Allowed, disallowed: Disallowed) -> Call[list[int]]:
        body = {
            "text": _scalar_values(text),
            "allowed_special": self.allowed([text], allowed, disallowed),
            "disallowed_special": [],
        }
        return _map(post(self._path + "/encode", body, EncodeAnswer), lambda a: a.ids or [])

    def count(self, text: str, allowed: Allowed, disallowed: Disallowed) -> Call[int]:
        body = {
            "text": _scalar_values(text),
            "allowed_special": self.allowed([text], allowed, disallowed),
            "disallowed_special": [],
        }
        return _map(post(self._path + "/count", body, CountAnswer), lambda a: a.count or 0)

    def encode_batch(
        self, texts: Sequence[str], allowed: Allowed, disallowed: Disallowed
    ) -> list[Call[list[list[int]]]]:
        special = self.allowed(texts, allowed, disallowed)
        calls = []
        for part in _batches(texts):
            body = {
                "texts": [_scalar_values(t) for t in part],
                "allowed_special": special,
                "disallowed_special": [],
            }
            calls.append(
                _map(
                    post(self._path + "/encode", body, EncodeAnswer),
                    lambda a: [r.ids for r in a.results or []],
                )
            )
        return calls

    def decode(self, ids: Sequence[int], errors: str) -> Call[str]:
        body = {"ids": list(ids), "errors": errors}
        return _map(post(self._path + "/decode", body, DecodeAnswer), lambda a: a.text or "")

    def decode_bytes(self, ids: Sequence[int]) -> Call[bytes]:
        body = {"ids": list(ids), "output": "base64"}
        return _map(post(self._path + "/decode", body, DecodeAnswer), lambda a: a.base64 or b"")

    def decode_each(self, ids: Sequence[int]) -> list[Call[list[bytes]]]:
        """Each id's bytes on its own (tiktoken's `decode_tokens_bytes`)."""
        calls = []
        for start in range(0, len(ids), BATCH_ITEMS):
            body = {"batch": [[i] for i in ids[start : start + BATCH_ITEMS]], "output": "base64"}
            calls.append(
                _map(
                    post(self._path + "/decode", body, DecodeAnswer),
                    lambda a: [r.base64 or b"" for r in a.results or []],
                )
            )
        return calls


# --- the model and text-budget routes -----------------------------------------------------------


def models() -> Call[list[ModelInfo]]:
    return _map(get("/v1/models", ModelList), lambda a: a.models)


def count_chat(
    model: str,
    messages: Sequence[Json],
    *,
    tools: Sequence[Json] | None,
    add_generation_prompt: bool,
    chat_template_kwargs: Json | None,
    breakdown: bool,
) -> Call[ChatCount]:
    body = {
        "messages": list(messages),
        "tools": None if tools is None else list(tools),
        "add_generation_prompt": add_generation_prompt,
        "chat_template_kwargs": chat_template_kwargs,
        "breakdown": breakdown,
    }
    return post(f"/v1/models/{segment(model)}/count", body, ChatCount)


def estimate_body(
    *,
    messages: Sequence[Json] | None,
    text: str | None,
    tools: Sequence[Json] | None,
    output_tokens: int | None,
    max_output_tokens: int | None,
    cached_input_tokens: int,
    chat_template_kwargs: Json | None,
) -> Json:
    return {
        "messages": None if messages is None else list(messages),
        "text": text,
        "tools": None if tools is None else list(tools),
        "output_tokens": output_tokens,
        "max_output_tokens": max_output_tokens,
        "cached_input_tokens": cached_input_tokens,
        "chat_template_kwargs": chat_template_kwargs,
    }


def estimate(model: str, body: Json) -> Call[Estimate]:
    return post(f"/v1/models/{segment(model)}/estimate", body, Estimate)


def truncate(ref: str, text: str, max_tokens: int, keep: str) -> Call[Truncation]:
    body = {"text": text, "max_tokens": max_tokens, "keep": keep}
    return post(f"/v1/tokenizers/{segment(ref)}/truncate", body, Truncation)


def chunk(ref: str, text: str, max_tokens: int, overlap: int) -> Call[list[Chunk]]:
    body = {"text": text, "max_tokens": max_tokens, "overlap": overlap}
    return _map(post(f"/v1/tokenizers/{segment(ref)}/chunk", body, ChunkList), lambda a: a.chunks)


def tokenizer(ref: str) -> Call[TokenizerInfo]:
    return get(f"/v1/tokenizers/{segment(ref)}", TokenizerInfo)


def tokenizers() -> Call[list[TokenizerInfo]]:
    return _map(get("/v1/tokenizers", TokenizerList), lambda a: a.tokenizers)


def _map(call: Call[A], then: Callable[[A], B]) -> Call[B]:
    parse = call.parse
    return Call(call.method, call.path, call.body, lambda body: then(parse(body)))


def _batches(texts: Sequence[str]) -> Iterator[Sequence[str]]:
    start = chars = 0
    for end, text in enumerate(texts):
        if end > start and (end - start >= BATCH_ITEMS or chars + len(text) > BATCH_CHARS):
            yield texts[start:end]
            start, chars = end, 0
        chars += len(text)
    if start < len(texts):
        yield texts[start:]


def _scalar_values(text: str) -> str:
    """Lone surrogates become U+FFFD, as tiktoken's encode does (JSON could not carry them)."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


@lru_cache(maxsize=64)
def _finder(literals: frozenset[str]) -> re.Pattern[str]:
    return re.compile("|".join(map(re.escape, sorted(literals, key=lambda s: (-len(s), s)))))


def _disallowed(token: str, position: int) -> DisallowedSpecialTokenError:
    """The error the service would answer, raised before any request."""
    detail = (
        f"text contains the special token {token!r} at character {position}; pass it in "
        "allowed_special to encode it as a special id, or disallowed_special=() to "
        "encode it as ordinary text"
    )
    return DisallowedSpecialTokenError(
        {
            "type": TYPE_BASE + "disallowed-special-token",
            "title": "Disallowed special token",
            "status": 422,
            "detail": detail,
            "token": token,
            "position": position,
        }
    )
