"""Differential, native engine: tiktoken's ids on arbitrary text (any code point but surrogates,
assigned or not: the scanners' classes come from tiktoken's own engine), and the reference's ids
on both rules; long runs of one character (the heap path) and every boundary kind mixed in."""

from __future__ import annotations

from array import array

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from service.bpe import PythonEngine
from service.bpe.engine.native import NativeEngine
from service.bpe.vocab import Vocabulary
from service.store.registry import Registry
from tests.conftest import TIKTOKEN_SOURCES, tiktoken_oracle
from tests.property.test_roundtrip import SHIPPED, pieces

any_char = st.characters(exclude_categories=("Cs",))
boundary = st.sampled_from(
    [
        " ",
        "\n",
        "\r\n",
        "\t",
        "'",
        "'s",
        "'LL",
        "1",
        "A",
        "a",
        "\u0301",
        "\u00a0",
        "/",
        "é",
        "中",
        "😀",
        "\u3000",
        "ǅ",
    ]
)
runs = st.tuples(st.one_of(boundary, any_char), st.integers(1, 600)).map(lambda t: t[0] * t[1])
texts = st.lists(
    st.one_of(
        st.text(any_char, max_size=16), st.lists(boundary, max_size=16).map("".join), runs, pieces
    ),
    max_size=10,
).map("".join)
unicode14 = st.characters(exclude_categories=("Cs", "Cn"))
assigned = st.lists(
    st.one_of(
        st.text(unicode14, max_size=16),
        st.lists(boundary, max_size=16).map("".join),
        pieces,
        st.tuples(st.one_of(boundary, unicode14), st.integers(1, 300)).map(lambda t: t[0] * t[1]),
    ),
    max_size=8,
).map("".join)
SLOW_FIXTURES = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@pytest.mark.parametrize("name", sorted(TIKTOKEN_SOURCES))
@SLOW_FIXTURES
@given(text=texts)
def test_native_gives_tiktokens_ids_on_any_text(
    registry: Registry, piece_cache: int, name: str, text: str
) -> None:
    """With the piece cache on, the later passes read the pieces the earlier ones put in it."""
    engine = registry.resolve(name).tokenizer.engine
    expected = tiktoken_oracle(registry, name).encode_ordinary(text)
    for _ in range(3):  # with the piece cache on: noted, kept, then read from it
        assert engine.encode_ordinary(text) == expected
        assert engine.count_ordinary(text) == len(expected)


@pytest.mark.parametrize("ref", SHIPPED)
@SLOW_FIXTURES
@given(text=assigned)
def test_native_equals_the_reference_with_long_runs(
    registry: Registry, reference: Registry, piece_cache: int, ref: str, text: str
) -> None:
    """Characters assigned by Unicode 14, where the reference's `regex` and tiktoken agree."""
    fast, slow = registry.resolve(ref).tokenizer.engine, reference.resolve(ref).tokenizer.engine
    expected = slow.encode_ordinary(text)
    for _ in range(3):  # with the piece cache on: noted, kept, then read from it
        assert fast.encode_ordinary(text) == expected


@pytest.mark.parametrize("ref", SHIPPED)
@SLOW_FIXTURES
@given(data=st.data())
def test_backtracking_merges_any_bytes_as_the_reference(
    registry: Registry, ref: str, data: st.DataObject
) -> None:
    """One piece of raw bytes (UTF-8 or not) made of real tokens back to back, mostly longer than
    the backtracking encoder's threshold: the reference's rule (service/bpe/merge.py)."""
    engine = registry.resolve(ref).tokenizer.engine
    assert isinstance(engine, NativeEngine) and engine.backtracking
    vocab = registry.resolve(ref).tokenizer.vocab
    ids = st.integers(0, len(vocab.tokens) - 1)
    chosen = data.draw(st.lists(ids, min_size=2, max_size=60))
    piece = b"".join(vocab.tokens[i] or b"" for i in chosen) + data.draw(st.binary(max_size=6))
    assert engine.merge_bytes(piece) == vocab.merge_piece(piece)


alphabets = st.sampled_from(["ab", "abc", "abcd"])


def random_merges(data: st.DataObject, alphabet: str) -> list[tuple[int, int, int]]:
    """Up to 40 merges, each joining two earlier ids (bytes of `alphabet` or merged tokens) into
    the next id from 256; no pair is merged twice."""
    ids = list(alphabet.encode())
    merges: list[tuple[int, int, int]] = []
    for _ in range(data.draw(st.integers(1, 40))):
        left, right = data.draw(st.sampled_from(ids)), data.draw(st.sampled_from(ids))
        if all(m[:2] != (left, right) for m in merges):
            merges.append((left, right, 256 + len(merges)))
            ids.append(merges[-1][2])
    return merges


@settings(max_examples=300, deadline=None)
@given(data=st.data(), alphabet=alphabets)
def test_backtracking_on_random_ranks_vocabularies(data: st.DataObject, alphabet: str) -> None:
    """Any `ranks` vocabulary (tokens in any rank order, not only trained ones) gives the
    reference's ids on pieces long enough to backtrack: a token ranked before a part it is merged
    from is left out of the backtracking encoder's trie, and a piece that holds one keeps
    merge.h's merges (random alphabets of two to four letters hold them often)."""
    words = st.text(alphabet, min_size=2, max_size=7)
    order = data.draw(st.lists(words, min_size=1, max_size=40, unique=True))
    tokens: list[bytes | None] = [bytes([b]) for b in range(256)]
    tokens += [w.encode() for w in order]
    vocab = Vocabulary("ranks", range(256), tokens, array("I"))
    fast, slow = NativeEngine(vocab, None), PythonEngine(vocab, None)
    assert fast.backtracking  # every token ranked before a part has three bytes or more
    for text in data.draw(st.lists(st.text(alphabet, min_size=16, max_size=150), max_size=8)):
        assert fast.encode_ordinary(text) == slow.encode_ordinary(text)


@settings(max_examples=300, deadline=None)
@given(data=st.data(), alphabet=alphabets)
def test_backtracking_on_random_pairs_vocabularies(data: st.DataObject, alphabet: str) -> None:
    """Random merge lists (each merge joins two earlier ids into the next id) under the `pairs`
    rule: the backtracking encoder gives the reference's ids."""
    merges = random_merges(data, alphabet)
    vocab = Vocabulary.build("pairs", merges)
    fast, slow = NativeEngine(vocab, None), PythonEngine(vocab, None)
    assert fast.backtracking
    for text in data.draw(st.lists(st.text(alphabet, min_size=16, max_size=150), max_size=8)):
        assert fast.encode_ordinary(text) == slow.encode_ordinary(text)


@settings(max_examples=300, deadline=None)
@given(data=st.data(), alphabet=alphabets)
def test_backtracking_on_pairs_vocabularies_with_tokens_no_merge_makes(
    data: st.DataObject, alphabet: str
) -> None:
    """A format v2 `pairs` file may list tokens that no merge makes (`toksvc import hf` writes
    one for each vocabulary entry without a merge): the pairs rule never outputs them, and the
    backtracking encoder, still on for such a file, gives the reference's ids."""
    merges = random_merges(data, alphabet)
    unmade = data.draw(st.lists(st.text(alphabet, min_size=2, max_size=9), max_size=12))
    extra = {256 + len(merges) + i: w.encode() for i, w in enumerate(unmade)}
    vocab = Vocabulary.build("pairs", merges, extra_tokens=extra)
    fast, slow = NativeEngine(vocab, None), PythonEngine(vocab, None)
    assert fast.backtracking
    for text in data.draw(st.lists(st.text(alphabet, min_size=16, max_size=150), max_size=8)):
        assert fast.encode_ordinary(text) == slow.encode_ordinary(text)


@settings(max_examples=200, deadline=None)
@given(data=st.data(), alphabet=alphabets)
def test_pieces_of_one_call_share_its_memo_of_pairs(data: st.DataObject, alphabet: str) -> None:
    """A call keeps whether each pair of tokens is valid (backtrack.h) across its pieces: many
    long pieces over a small alphabet in one call, so pairs recur in other contexts, give the
    reference's ids piece by piece, under either rule."""
    words = st.text(alphabet, min_size=2, max_size=7)
    order = data.draw(st.lists(words, min_size=1, max_size=40, unique=True))
    tokens: list[bytes | None] = [bytes([b]) for b in range(256)]
    tokens += [w.encode() for w in order]
    ranks = Vocabulary("ranks", range(256), tokens, array("I"))
    merges = random_merges(data, alphabet)
    pieces_ = data.draw(st.lists(st.text(alphabet, min_size=16, max_size=150), max_size=30))
    for vocab in (ranks, Vocabulary.build("pairs", merges)):
        fast, slow = NativeEngine(vocab, None), PythonEngine(vocab, None)
        expected = [i for p in pieces_ for i in slow.encode_ordinary(p)]
        assert fast.encode_pieces(pieces_) == expected


# Han characters: common ones (two-character tokens, pairs that recur) and rare ones (split into
# byte tokens); runs of them are the long pieces of Chinese text
han = st.one_of(
    st.sampled_from("的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年"),
    st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF),
)
between = st.sampled_from(["", "\uff0c", "。", " ", "\n"])
han_runs = st.lists(st.tuples(st.text(han, min_size=1, max_size=400), between), max_size=12).map(
    lambda runs: "".join(a + b for a, b in runs)
)


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
@SLOW_FIXTURES
@given(text=han_runs)
def test_long_han_runs_give_tiktokens_ids(
    registry: Registry, piece_cache: int, name: str, text: str
) -> None:
    engine = registry.resolve(name).tokenizer.engine
    expected = tiktoken_oracle(registry, name).encode_ordinary(text)
    for _ in range(3):  # with the piece cache on: noted, kept, then read from it
        assert engine.encode_ordinary(text) == expected
    assert engine.count_ordinary(text) == len(expected)


# byte lengths around the backtracking threshold (16) and its stack buffer (1024 bytes)
LIMITS = [15, 16, 17, 18, 1022, 1023, 1024, 1025, 1026, 3000]


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
@pytest.mark.parametrize("char", ["中", "a", "7", "é", "😀"])
def test_pieces_at_the_length_limits_give_tiktokens_ids(
    registry: Registry, name: str, char: str
) -> None:
    """One character repeated to every byte length around the limits (topped up with "a", one
    piece with a letter), and a text of all of them in one call, so its memo of pairs sees each
    again."""
    engine, oracle = registry.resolve(name).tokenizer.engine, tiktoken_oracle(registry, name)
    size = len(char.encode())
    texts = [char * (n // size) + "a" * (n % size) for n in LIMITS]
    for text in [*texts, " ".join(texts)]:
        assert engine.encode_ordinary(text) == oracle.encode_ordinary(text)


def test_more_pairs_than_the_memo_holds_give_tiktokens_ids(registry: Registry) -> None:
    """Runs over every Han character, so one call meets far more distinct pairs than the memo's
    slots (each slot is overwritten many times)."""
    chars = [chr(c) for c in range(0x4E00, 0xA000)]
    text = "。".join("".join(chars[i : i + 97]) for i in range(0, len(chars), 97))
    text += "\uff0c" + "".join(reversed(chars))
    for name in ("cl100k_base", "o200k_base"):
        engine = registry.resolve(name).tokenizer.engine
        assert engine.encode_ordinary(text) == tiktoken_oracle(registry, name).encode_ordinary(text)
