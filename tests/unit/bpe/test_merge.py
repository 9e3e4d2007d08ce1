import random

from service.bpe import PythonEngine, Tokenizer, Vocabulary
from service.bpe.merge import HEAP_FROM, merge_pairs, merge_ranks
from tests.support.oracle import naive_pairs, naive_ranks


def test_pairs_rule_vectors_from_the_definition() -> None:
    assert merge_pairs([5, 6, 6, 7, 9, 1], {(6, 7): 99}) == [5, 6, 99, 9, 1]
    assert merge_pairs([1, 1, 1], {(1, 1): 256}) == [256, 1]


def test_pairs_rule_takes_lowest_rank_not_longest_match() -> None:
    vocab = Vocabulary.build("pairs", [(98, 99, 256), (97, 98, 257), (257, 99, 258)])
    tok = Tokenizer(vocab, PythonEngine(vocab, None))
    assert tok.encode("abc") == [97, 256]
    assert tok.decode([258]) == "abc"


def test_ranks_rule_returns_a_piece_that_is_a_token_whole() -> None:
    # "abc" is a token although no pair of its bytes can merge: only the whole piece reaches it
    encoder = {bytes([b]): b for b in range(256)} | {b"abc": 300}
    assert merge_ranks(b"abc", encoder) == [300]
    assert merge_ranks(b"abcx", encoder) == [97, 98, 99, 120]


def test_ranks_rule_ties_go_leftmost() -> None:
    encoder = {bytes([b]): b for b in range(256)} | {b"aa": 256}
    assert merge_ranks(b"aaa", encoder) == [256, 97]
    assert merge_ranks(b"aaaaa", encoder) == [256, 256, 97]


def test_long_pieces_use_the_heap_path_and_agree_with_the_oracle() -> None:
    rng = random.Random(7)
    encoder = {bytes([b]): b for b in range(256)}
    merges: dict[tuple[int, int], int] = {}
    tokens = [bytes([b]) for b in b"abcd"]
    ids_of = {t: t[0] for t in tokens}
    for new in range(256, 320):
        left, right = rng.choice(tokens), rng.choice(tokens)
        if (ids_of[left], ids_of[right]) in merges or left + right in encoder:
            continue
        merges[ids_of[left], ids_of[right]] = new
        encoder[left + right] = new
        ids_of[left + right] = new
        tokens.append(left + right)
    for length in (HEAP_FROM - 1, HEAP_FROM, 3 * HEAP_FROM):
        for _ in range(20):
            piece = bytes(rng.choice(b"abcd") for _ in range(length))
            assert merge_ranks(piece, encoder) == naive_ranks(piece, encoder)
            assert merge_pairs(list(piece), merges) == naive_pairs(list(piece), merges)


def test_a_long_run_of_one_character_merges_correctly() -> None:
    # 200,000 bytes in one piece: the heap path must handle it (a quadratic loop would not finish)
    encoder = {bytes([b]): b for b in range(256)} | {b"aa": 256, b"aaaa": 257}
    ids = merge_ranks(b"a" * 200_001, encoder)
    assert ids == [257] * 50_000 + [97]
    merges = {(97, 97): 256, (256, 256): 257}
    assert merge_pairs([97] * 200_002, merges) == [257] * 50_000 + [256]
