"""decode(encode(s)) == s for every string, on every shipped tokenizer; and tiktoken's exact ids."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from service.store.registry import Registry
from tests.conftest import TIKTOKEN_SOURCES, tiktoken_oracle

SHIPPED = [
    "bard@1",
    "bard@2",
    "cl100k_base",
    "gpt2",
    "o200k_base",
    "p50k_base",
    "qwen2",
    "qwen3",
    "qwen3.6",
    "phi-4",
    "tekken",
]

# text rich in what breaks tokenizers: emoji (ZWJ, skin tones), both forms of accented letters,
# control characters, CJK, Devanagari, digits, whitespace runs, and special-token literals
pieces = st.sampled_from(
    [
        "😀",
        "👩‍👩‍👧",
        "👍🏽",
        "é",
        "e\u0301",
        "\x00",
        "\x1b",
        "\r\n",
        "   ",
        "\t",
        "中文",
        "日本語",
        "हिन्दी",
        "12345",
        "'s",
        "<|endoftext|>",
        "<|im_start|>",
        "<think>",
        "\ufeff",
        "\U0010ffff",
    ]
)
texts = st.lists(st.one_of(st.text(max_size=12), pieces), max_size=12).map("".join)
# Characters assigned by Unicode 14 (this Python's tables). Which characters are letters is read
# from each regex engine's own Unicode tables: the reference's `regex` module knows Unicode 17
# (U+3D000 is a letter there), tiktoken's fancy-regex an older version (it is not). On characters
# assigned since, the two engines split differently; the service runs tiktoken's core, so it
# follows tiktoken (test_new_characters_follow_tiktoken). Comparisons between engines use these.
assigned_texts = st.lists(
    st.one_of(st.text(st.characters(exclude_categories=("Cs", "Cn")), max_size=12), pieces),
    max_size=12,
).map("".join)
SETTINGS = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@pytest.mark.parametrize("ref", SHIPPED)
@SETTINGS
@given(text=texts)
@example(text="")
@example(text="a")
@example(text="<|endoftext|>")
def test_decode_encode_round_trips(registry: Registry, ref: str, text: str) -> None:
    loaded = registry.resolve(ref)
    tok = loaded.tokenizer
    ids = tok.encode(text, disallowed_special=frozenset())
    expected = text
    if loaded.normalization != "none":
        expected = unicodedata.normalize(loaded.normalization, text)
    assert tok.decode(ids) == expected
    assert tok.count(text, disallowed_special=frozenset()) == len(ids)


@pytest.mark.parametrize("name", sorted(TIKTOKEN_SOURCES))
@SETTINGS
@given(text=assigned_texts)
def test_same_ids_as_tiktoken_on_generated_text(registry: Registry, name: str, text: str) -> None:
    loaded = registry.resolve(name)
    oracle = tiktoken_oracle(registry, name)
    expected_input = text
    if loaded.normalization != "none":
        expected_input = unicodedata.normalize(loaded.normalization, text)
    assert loaded.tokenizer.encode(text, disallowed_special=frozenset()) == oracle.encode(
        expected_input, disallowed_special=()
    )


@pytest.mark.parametrize("name", sorted(TIKTOKEN_SOURCES))
def test_new_characters_follow_tiktoken(registry: Registry, name: str) -> None:
    """U+3D000 (assigned in Unicode 17) before a contraction: the served ids are tiktoken's."""
    text = "\U0003d000's \U0003d000x"
    oracle = tiktoken_oracle(registry, name)
    assert registry.resolve(name).tokenizer.encode(text) == oracle.encode_ordinary(text)
