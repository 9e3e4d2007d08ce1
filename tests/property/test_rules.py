"""The fast merge loops and the incremental trainer agree with the naive oracles."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from service.bpe import Vocabulary, train
from service.bpe.engine import native
from service.bpe.merge import merge_pairs, merge_ranks
from service.store.engines import default_engine
from tests.support.oracle import naive_pairs, naive_ranks, naive_train

ALPHABET = b"abcde"


@st.composite
def merge_tables(draw: st.DrawFn) -> tuple[dict[tuple[int, int], int], dict[bytes, int]]:
    """A random pairs table over a small alphabet, and the ranks encoder of the same tokens."""
    ids_of = {bytes([b]): b for b in range(256)}
    merges: dict[tuple[int, int], int] = {}
    tokens = [bytes([b]) for b in ALPHABET]
    for _ in range(draw(st.integers(0, 40))):
        left = draw(st.sampled_from(tokens))
        right = draw(st.sampled_from(tokens))
        if (ids_of[left], ids_of[right]) in merges or left + right in ids_of:
            continue
        merges[ids_of[left], ids_of[right]] = len(merges) + 256
        ids_of[left + right] = len(merges) + 255
        tokens.append(left + right)
    return merges, ids_of


pieces = st.binary(max_size=300).map(lambda b: bytes(ALPHABET[x % 5] for x in b))


@settings(max_examples=300, deadline=None)
@given(table=merge_tables(), piece=pieces)
def test_merge_loops_agree_with_the_naive_rules(table, piece: bytes) -> None:  # type: ignore[no-untyped-def]
    merges, encoder = table
    assert merge_pairs(list(piece), merges) == naive_pairs(list(piece), merges)
    assert merge_ranks(piece, encoder) == naive_ranks(piece, encoder)


@settings(max_examples=100, deadline=None)
@given(
    words=st.lists(st.text("abc d", max_size=12), max_size=30),
    n=st.integers(0, 30),
    min_frequency=st.integers(1, 3),
)
def test_trainer_agrees_with_recounting(words: list[str], n: int, min_frequency: int) -> None:
    model = train(words, 256 + n, None, min_frequency=min_frequency)
    expected = naive_train([w.encode() for w in words if w], n, min_frequency)
    assert model.merges == expected


@st.composite
def vocabularies(draw: st.DrawFn) -> Vocabulary:
    """A random `pairs` vocabulary: a merge table as above, and sometimes tokens no merge makes
    (format v2's `tokens`: of one to three bytes, maybe the bytes of another token)."""
    merges, _ = draw(merge_tables())
    extra = draw(
        st.dictionaries(
            st.integers(400, 420),
            st.binary(min_size=1, max_size=3).map(lambda b: bytes(ALPHABET[x % 5] for x in b)),
            max_size=2,
        )
    )
    return Vocabulary.build(
        "pairs", [(a, b, new) for (a, b), new in merges.items()], extra_tokens=extra
    )


@settings(max_examples=1500, deadline=None)
@given(vocab=vocabularies(), piece=pieces)
def test_a_self_consistent_pairs_vocabulary_gives_the_ranks_rules_ids(
    vocab: Vocabulary, piece: bytes
) -> None:
    """What lets a native engine run a self-consistent `pairs` vocabulary under the faster
    `ranks` rule (service/store/engines.py); one that is not consistent may differ (a token no
    merge makes is one the ranks rule would give and the pairs rule never does). The check
    in C, where it is built, answers as the reference does."""
    consistent = vocab.self_consistent()
    if native.AVAILABLE:
        assert vocab.self_consistent(native.pairs_all_whole) == consistent
    if consistent:
        encoder = {data: tid for tid, data in vocab.items()}
        assert vocab.merge_piece(piece) == merge_ranks(piece, encoder)


@pytest.mark.parametrize(
    ("merges", "extra", "text"),
    [
        ([(98, 99, 256)], {300: b"ab"}, b"xaby"),  # a two-byte token no merge makes
        ([(97, 98, 256)], {300: b"a"}, b"a"),  # one byte, the bytes of a byte's own id
        ([(97, 98, 256)], {300: b"ab"}, b"ab"),  # the bytes of a merge's token
    ],
)
def test_a_token_no_merge_makes_keeps_the_pairs_rule(
    merges: list[tuple[int, int, int]], extra: dict[int, bytes], text: bytes
) -> None:
    """Such a vocabulary is not self-consistent, so the default engine (native where built)
    runs the pairs rule and gives the reference's ids, not the extra token."""
    vocab = Vocabulary.build("pairs", merges, extra_tokens=extra)
    assert not vocab.self_consistent()
    engine = default_engine(vocab, None, vocab.self_consistent())
    want = vocab.merge_piece(text)
    assert 300 not in want
    assert engine.encode_ordinary(text.decode()) == want
