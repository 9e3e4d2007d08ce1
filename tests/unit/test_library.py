"""The library as README "Library" shows it: `load_store` builds the native engine by default, and
`service.get_encoding(name)` behaves as tiktoken's Encoding built from the same upstream file."""

from __future__ import annotations

from typing import Any

import pytest
import tiktoken

import service
from service.bpe import PythonEngine
from service.bpe.engine import native
from service.errors import DisallowedSpecialError, TokenizerNotFoundError, UnknownIdError
from service.settings import BUNDLED_STORE
from service.store.loader import load_store
from service.store.registry import Registry
from tests.conftest import TIKTOKEN_SOURCES, tiktoken_oracle

TEXTS = ["Hello, world", "héllo 🙂 wörld\n\n  x", "<|endoftext|> <|fim_prefix|>", "", "a\ud800b"]


def test_load_store_builds_the_native_engine_by_default() -> None:
    registry = load_store(BUNDLED_STORE, only="gpt2")
    engine = registry.resolve("gpt2").tokenizer.engine
    expected = native.NativeEngine if native.AVAILABLE else PythonEngine
    assert type(engine) is expected


@pytest.mark.parametrize("name", sorted(TIKTOKEN_SOURCES))
def test_get_encoding_matches_tiktoken(name: str, registry: Registry) -> None:
    ours = service.get_encoding(name)
    oracle: tiktoken.Encoding = tiktoken_oracle(registry, name)
    assert ours.n_vocab == oracle.n_vocab and ours.max_token_value == oracle.max_token_value
    assert ours.special_tokens_set == oracle.special_tokens_set
    assert _eot(ours) == _eot(oracle)  # a KeyError for both where there is no <|endoftext|>
    for text in TEXTS:
        assert ours.encode_ordinary(text) == oracle.encode_ordinary(text)
        every = {"allowed_special": "all"}
        assert ours.encode(text, **every) == oracle.encode(text, **every)  # type: ignore[arg-type]
        ids = oracle.encode(text, disallowed_special=())
        assert ours.decode(ids) == oracle.decode(ids)
        assert ours.decode_bytes(ids) == oracle.decode_bytes(ids)
        assert ours.decode_tokens_bytes(ids) == oracle.decode_tokens_bytes(ids)
    assert ours.encode_batch(TEXTS[:2]) == oracle.encode_batch(TEXTS[:2])
    assert ours.count(TEXTS[1]) == len(oracle.encode(TEXTS[1]))


def test_special_token_policy_is_tiktokens(registry: Registry) -> None:
    ours, oracle = service.get_encoding("cl100k_base"), tiktoken_oracle(registry, "cl100k_base")
    text = "a <|endoftext|> b"
    with pytest.raises(ValueError):
        oracle.encode(text)
    with pytest.raises(DisallowedSpecialError):
        ours.encode(text)
    for allowed in ({"<|endoftext|>"}, {"<|endoftext|>", "<|not-a-token|>"}):
        assert ours.encode(text, allowed_special=allowed) == oracle.encode(
            text, allowed_special=allowed
        )
    assert ours.encode(text, disallowed_special=()) == oracle.encode(text, disallowed_special=())
    # only the listed literal is refused; another special literal is ordinary text
    other = "x <|fim_prefix|>"
    kwargs = {"disallowed_special": {"<|endoftext|>"}}
    assert ours.encode(other, **kwargs) == oracle.encode(other, **kwargs)  # type: ignore[arg-type]


def test_unknown_ids_and_names_are_typed_errors(registry: Registry) -> None:
    ours, oracle = service.get_encoding("cl100k_base"), tiktoken_oracle(registry, "cl100k_base")
    with pytest.raises(KeyError):
        oracle.decode([100261])  # a gap below the special tokens
    with pytest.raises(UnknownIdError):
        ours.decode([100261])
    with pytest.raises(TokenizerNotFoundError) as caught:
        service.get_encoding("no_such_encoding")
    assert {"cl100k_base@1", "cl100k_base"} <= set(caught.value.available)  # plain names work
    assert "cl100k_base" in service.list_encoding_names()
    assert service.get_encoding("cl100k_base@1").ref == "cl100k_base@1"


def _eot(encoding: Any) -> int | None:
    try:
        return int(encoding.eot_token)
    except KeyError:
        return None
