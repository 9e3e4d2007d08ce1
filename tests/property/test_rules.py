"""The fast merge loops and the incremental trainer agree with the naive oracles."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from service.bpe import train
from service.bpe.merge import merge_pairs, merge_ranks
from tests.oracle import naive_pairs, naive_ranks, naive_train

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


def _self_consistent(merges: dict[tuple[int, int], int], encoder: dict[bytes, int]) -> bool:
    return all(merge_pairs(list(t), merges) == [i] for t, i in encoder.items() if len(t) > 1)


@settings(max_examples=1500, deadline=None)
@given(table=merge_tables(), piece=pieces)
def test_a_self_consistent_pairs_table_gives_the_ranks_rules_ids(table, piece: bytes) -> None:  # type: ignore[no-untyped-def]
    """What lets a native engine run a self-consistent `pairs` vocabulary under the faster
    `ranks` rule (service/store/engines.py); a table that is not consistent may differ."""
    merges, encoder = table
    if _self_consistent(merges, encoder):
        assert merge_pairs(list(piece), merges) == merge_ranks(piece, encoder)
