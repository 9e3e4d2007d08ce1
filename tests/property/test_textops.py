"""truncate and chunk on every tokenizer: every count is the count of the returned text, within
the budget; cuts fall between characters; chunks cover the text (overlaps aside)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from service.bpe import Tokenizer
from service.bpe.deadline import Deadline
from service.bpe.text.budgets import chunk, truncate
from service.errors import InputError, LimitExceededError, WorkStoppedError
from service.store.registry import Registry
from tests.conftest import EVERY_TOKENIZER

PIECES = st.sampled_from(
    ["你好", "🎉", "👩\u200d💻", " the", "\n", "<|endoftext|>", "  ", " ", "▁"]
)
TEXTS = st.lists(
    st.text(st.characters(codec="utf-8"), min_size=1, max_size=8) | PIECES, max_size=20
).map("".join)


def per_tokenizer(n: int) -> settings:
    return settings(
        max_examples=n, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )


@pytest.mark.parametrize("ref", EVERY_TOKENIZER)
@per_tokenizer(25)
@given(text=TEXTS, max_tokens=st.integers(0, 40), keep=st.sampled_from(["start", "end"]))
def test_truncate(
    tokenizer_of: Callable[[str], Tokenizer], ref: str, text: str, max_tokens: int, keep: str
) -> None:
    tok = tokenizer_of(ref)

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


@pytest.mark.parametrize("ref", EVERY_TOKENIZER)
@per_tokenizer(15)
@given(text=TEXTS, max_tokens=st.integers(4, 30), overlap=st.integers(0, 3))
def test_chunk(
    tokenizer_of: Callable[[str], Tokenizer], ref: str, text: str, max_tokens: int, overlap: int
) -> None:
    tok = tokenizer_of(ref)
    try:
        chunks = chunk(tok, text, max_tokens, overlap)
    except InputError:  # `▁` and four byte-fallback tokens: one character, five tokens
        assert any(tok.count(ch, disallowed_special=frozenset()) > max_tokens for ch in text)
        return
    rebuilt = ""
    for c in chunks:
        assert c.count == tok.count(c.text, disallowed_special=frozenset()) <= max_tokens
        assert c.text == text[c.start : c.end]
        assert c.start <= len(rebuilt)  # no gap; what overlaps is the previous chunk's end
        rebuilt = rebuilt[: c.start] + c.text
    assert rebuilt == text
    assert [c.start for c in chunks] == sorted({c.start for c in chunks})  # strict progress


def _fits_up_to(counts: list[int], limit: int) -> int:
    """Brute force: the largest k such that every prefix count[0..k] fits."""
    k = 0
    while k + 1 < len(counts) and counts[k + 1] <= limit:
        k += 1
    return k


@pytest.mark.parametrize("ref", EVERY_TOKENIZER)
@per_tokenizer(10)
@given(text=TEXTS, max_tokens=st.integers(1, 12), overlap=st.integers(0, 3))
def test_against_a_brute_force_reference(
    tokenizer_of: Callable[[str], Tokenizer], ref: str, text: str, max_tokens: int, overlap: int
) -> None:
    """Every cut is at least as long as the brute force's (every prefix up to it counted), and
    one more character does not fit (issue 23, high 5: one encode and a walk, not a search of
    counts from scratch; the answer is still exact)."""
    tok = tokenizer_of(ref)

    def count(s: str) -> int:
        return tok.count(s, disallowed_special=frozenset())

    prefixes = [count(text[:k]) for k in range(len(text) + 1)]
    cut = truncate(tok, text, max_tokens)
    assert cut.end >= _fits_up_to(prefixes, max_tokens) and cut.count == prefixes[cut.end]
    suffixes = [count(text[len(text) - k :]) for k in range(len(text) + 1)]
    cut = truncate(tok, text, max_tokens, "end")
    assert len(cut.text) >= _fits_up_to(suffixes, max_tokens)
    assert cut.count == suffixes[len(cut.text)]
    overlap = min(overlap, max_tokens - 1)
    try:
        chunks = chunk(tok, text, max_tokens, overlap)
    except InputError:  # a character needs more than max_tokens tokens: brute force agrees
        assert any(count(ch) > max_tokens for ch in text)
        return
    for c in chunks:
        rest = [count(text[c.start : c.start + k]) for k in range(len(text) - c.start + 1)]
        assert c.end - c.start >= _fits_up_to(rest, max_tokens) and c.count == rest[c.end - c.start]
        assert c.end == len(text) or rest[c.end - c.start + 1] > max_tokens


def test_work_stops_at_its_deadline_or_when_stopped(registry: Registry) -> None:
    tok = registry.resolve("cl100k_base").tokenizer
    text = "word " * 2000
    stopped = Deadline()
    stopped.stop()
    with pytest.raises(WorkStoppedError):
        chunk(tok, text, 1, deadline=stopped)
    with pytest.raises(LimitExceededError):
        truncate(tok, text, 5, deadline=Deadline(0))
    assert len(chunk(tok, text, 1, deadline=Deadline())) == tok.count(text)
