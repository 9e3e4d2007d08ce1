"""truncate and chunk: every count is the count of the returned text, within the budget; cuts
fall between characters; chunks cover the text (overlaps aside)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from service.bpe.textops import chunk, truncate
from service.store.registry import Registry

PIECES = st.sampled_from(["你好", "🎉", "👩\u200d💻", " the", "\n", "<|endoftext|>", "  "])
TEXTS = st.lists(
    st.text(st.characters(codec="utf-8"), min_size=1, max_size=8) | PIECES, max_size=20
).map("".join)


@settings(max_examples=150, deadline=None)
@given(text=TEXTS, max_tokens=st.integers(0, 40), keep=st.sampled_from(["start", "end"]),
       name=st.sampled_from(["cl100k_base", "o200k_base", "qwen3"]))  # fmt: skip
def test_truncate(registry: Registry, text: str, max_tokens: int, keep: str, name: str) -> None:
    tok = registry.resolve(name).tokenizer

    def count(s: str) -> int:
        return tok.count(s, disallowed_special=frozenset())

    cut = truncate(tok, text, max_tokens, keep)  # type: ignore[arg-type]
    assert cut.count == count(cut.text) <= max_tokens
    assert cut.text == text[cut.start : cut.end]
    assert cut.truncated == (cut.text != text)
    if keep == "start":
        assert cut.start == 0
        if cut.truncated:  # one more character would not fit
            assert count(text[: cut.end + 1]) > max_tokens
    else:
        assert cut.end == len(text)
        if cut.truncated:
            assert count(text[cut.start - 1 :]) > max_tokens


@settings(max_examples=100, deadline=None)
@given(text=TEXTS, max_tokens=st.integers(4, 30), overlap=st.integers(0, 3),
       name=st.sampled_from(["cl100k_base", "qwen3"]))  # fmt: skip
def test_chunk(registry: Registry, text: str, max_tokens: int, overlap: int, name: str) -> None:
    tok = registry.resolve(name).tokenizer
    chunks = chunk(tok, text, max_tokens, overlap)
    rebuilt = ""
    for c in chunks:
        assert c.count == tok.count(c.text, disallowed_special=frozenset()) <= max_tokens
        assert c.text == text[c.start : c.end]
        assert c.start <= len(rebuilt)  # no gap; what overlaps is the previous chunk's end
        rebuilt = rebuilt[: c.start] + c.text
    assert rebuilt == text
    assert [c.start for c in chunks] == sorted({c.start for c in chunks})  # strict progress
