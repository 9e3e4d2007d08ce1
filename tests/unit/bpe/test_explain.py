"""Merge steps: replaying them gives exactly the ids the encoder gives, under both rules."""

from __future__ import annotations

import random

import pytest

from service.bpe import PythonEngine, Tokenizer, Vocabulary, train
from service.bpe.engine.patterns import GPT2_PATTERN
from service.bpe.text.explain import (
    MAX_EXPLAIN_CHARS,
    MAX_INLINE_MERGES,
    explain_piece,
    explain_text,
    inline_vocabulary,
    replay,
)
from service.errors import InputError, LimitExceededError
from service.store.registry import Registry

TEXTBOOK = [[98, 99, 256], [97, 98, 257], [257, 99, 258]]
SAMPLES = [
    "Hello, world! The merge stepper shows every step.",
    "  indented\n\tcode(x) = 42 + 1234567;",
    "emoji 🙂👍🏽 and 中文字符, café, naïve",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa bbbbbbbbbb",
    "<|endoftext|> is ordinary text here",
    "",
]


def test_textbook_counterexample_differs_between_the_rules() -> None:
    pairs = explain_text(inline_vocabulary("pairs", TEXTBOOK), None, "abc")
    ranks = explain_text(inline_vocabulary("ranks", TEXTBOOK), None, "abc")
    # pairs: b+c (rank 256) first; then (97, 256) is no listed pair, so merging stops
    assert [(s.left, s.right, s.id) for s in pairs[0].steps] == [(98, 99, 256)]
    assert pairs[0].ids == [97, 256]
    # ranks: b+c first too, then the bytes "a" + "bc" = "abc" are token 258, a pair never listed
    assert [(s.left, s.right, s.id, s.data) for s in ranks[0].steps] == [
        (98, 99, 256, b"bc"),
        (97, 256, 258, b"abc"),
    ]
    assert ranks[0].ids == [258]


def test_steps_replay_to_the_merge_rule_result_of_each_piece() -> None:
    for rule in ("pairs", "ranks"):
        vocab = inline_vocabulary(rule, TEXTBOOK)
        for text in ("abcabc", "aabbcc", "cab", "abca"):
            piece = explain_piece(vocab, text)
            assert replay(piece) == piece.ids == vocab.merge_piece(text.encode())
            assert piece.start == list(text.encode())


def test_ranks_piece_that_is_a_token_ends_with_a_whole_step() -> None:
    # "abc" is a token, but neither "ab" nor "bc" is: only the whole-piece look-up reaches it
    vocab = Vocabulary.build("ranks", [], extra_tokens={300: b"abc"})
    piece = explain_piece(vocab, "abc")
    assert [s.kind for s in piece.steps] == ["whole"]
    assert piece.ids == [300] == vocab.merge_piece(b"abc") == replay(piece)
    assert replay(piece, 0) == [97, 98, 99]


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base", "gpt2", "qwen2", "qwen3", "bard"])
def test_final_ids_equal_encode_for_shipped_tokenizers(reference: Registry, name: str) -> None:
    t = reference.resolve(name)
    for text in SAMPLES:
        pieces = explain_text(t.tokenizer.vocab, t.pattern, text, t.normalization)
        assert [i for p in pieces for i in p.ids] == t.tokenizer.encode_ordinary(text)
        for p in pieces:
            assert replay(p) == p.ids
            # every step merges two neighbours into the token of their joined bytes
            ids = list(p.start)
            for s in p.steps:
                if s.kind == "merge":
                    assert ids[s.at : s.at + 2] == [s.left, s.right]
                    ids[s.at : s.at + 2] = [s.id]
                assert t.tokenizer.decode_bytes([s.id]) == s.data


def test_trained_vocabulary_explains_like_it_encodes() -> None:
    rng = random.Random(3)
    words = ["low", "lower", "newest", "widest", "tokens", "token", "merge", "merged"]
    corpus = " ".join(rng.choice(words) for _ in range(400))
    model = train([corpus], 256 + 40, GPT2_PATTERN)
    for rule in ("pairs", "ranks"):
        vocab = inline_vocabulary(rule, [list(m) for m in model.merges])
        tok = Tokenizer(vocab, PythonEngine(vocab, GPT2_PATTERN))
        text = "the lowest newer tokens merged widely"
        got = [i for p in explain_text(vocab, GPT2_PATTERN, text) for i in p.ids]
        assert got == tok.encode_ordinary(text)


def test_text_length_is_bounded() -> None:
    vocab = inline_vocabulary("pairs", TEXTBOOK)
    assert explain_text(vocab, None, "a" * MAX_EXPLAIN_CHARS)
    with pytest.raises(LimitExceededError):
        explain_text(vocab, None, "a" * (MAX_EXPLAIN_CHARS + 1))


@pytest.mark.parametrize(
    ("merges", "reason"),
    [
        ([[97, 98, 300]], "must be 256"),
        ([[97, 98]], r"give \[left, right, new\]"),
        ([[97, 257, 256]], "not defined before"),
        ([[-1, 98, 256]], "not defined before"),
        ([[97, 98, 256], [97, 98, 257]], "merged twice"),
    ],
)
def test_inline_merges_are_validated(merges: list[list[int]], reason: str) -> None:
    with pytest.raises(InputError, match=reason):
        inline_vocabulary("pairs", merges)


def test_inline_ranks_refuses_two_tokens_with_the_same_bytes() -> None:
    # (a, bc) and (ab, c) both make "abc": fine as pairs, ambiguous for ranks
    merges = [[98, 99, 256], [97, 98, 257], [97, 256, 258], [257, 99, 259]]
    assert inline_vocabulary("pairs", merges).rule == "pairs"
    with pytest.raises(InputError, match="already token 258"):
        inline_vocabulary("ranks", merges)


def test_inline_tokens_are_no_longer_than_an_explainable_text() -> None:
    # each merge joins the last token with itself: token n is 2 ** (n + 1) bytes of "a"
    # (28 such merges would be a 256 MiB token); 256 characters are at most 1,024 UTF-8 bytes
    doubling = [[97 if n == 0 else 255 + n] * 2 + [256 + n] for n in range(28)]
    longest = max(n for n in range(28) if 2 ** (n + 1) <= 4 * MAX_EXPLAIN_CHARS)
    vocab = inline_vocabulary("pairs", doubling[: longest + 1])
    assert len(vocab.tokens[-1] or b"") == 4 * MAX_EXPLAIN_CHARS
    ids = [i for p in explain_text(vocab, None, "a" * MAX_EXPLAIN_CHARS) for i in p.ids]
    assert len(ids) == 1  # 256 "a" merge into one token: the longest one is still usable
    for rule in ("pairs", "ranks"):
        with pytest.raises(InputError, match=f"merge {longest + 1}: .* {2 ** (longest + 2)} bytes"):
            inline_vocabulary(rule, doubling[: longest + 2])
        with pytest.raises(InputError, match=f"merge {longest + 1}: "):
            inline_vocabulary(rule, doubling)


def test_inline_merges_are_bounded() -> None:
    chain = [[97 if n == 0 else 255 + n, 97, 256 + n] for n in range(MAX_INLINE_MERGES + 1)]
    assert len(inline_vocabulary("pairs", chain[:-1]).merges) == MAX_INLINE_MERGES
    with pytest.raises(LimitExceededError):
        inline_vocabulary("pairs", chain)
