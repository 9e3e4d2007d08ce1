from pathlib import Path

import pytest
import regex

from service.bpe import PythonEngine, Tokenizer, Vocabulary, train
from service.errors import ConfigError
from tests.support.oracle import naive_train


def tokenizer_of(merges: list[tuple[int, int, int]], pattern: str | None = None) -> Tokenizer:
    vocab = Vocabulary.build("pairs", merges)
    return Tokenizer(vocab, PythonEngine(vocab, pattern))


def test_training_vector_from_the_definition() -> None:
    model = train(["aaabdaaabac"], 256 + 3)
    tok = tokenizer_of(model.merges)
    ids = tok.encode("aaabdaaabac")
    assert [tok.decode([i]) for i in ids] == ["aaab", "d", "aaab", "a", "c"]


def test_ties_go_to_the_lexicographically_smallest_pair() -> None:
    # after (a, a) -> 256, (256, a) and (a, b) both occur twice; (97, 98) < (256, 97)
    model = train(["aaabdaaabac"], 256 + 2)
    assert model.merges[1] == (97, 98, 257)


def test_vocab_size_below_256_is_refused() -> None:
    with pytest.raises(ConfigError, match="256"):
        train(["abc"], 255)


def test_stops_early_below_min_frequency() -> None:
    model = train(["abcd"], 1000)
    assert model.merges == []
    model = train(["abab"], 1000, min_frequency=1)
    assert model.merges[0][:2] == (97, 98)
    assert len(model.merges) < 1000 - 256


def test_counts_with_overlap_and_replaces_without() -> None:
    # "aaaa" holds (a, a) three times with overlap; after the merge it is [256, 256]
    model = train(["aaaa"], 258, min_frequency=1)
    assert model.merges == [(97, 97, 256), (256, 256, 257)]


def test_merges_never_cross_pieces_or_special_tokens() -> None:
    model = train(["ab ab ab<|x|>ab", "ab"], 300, pattern=r"\w+| \w+|\S", special_tokens=["<|x|>"])
    tok = tokenizer_of(model.merges, r"\w+| \w+|\S")
    learned = [tok.decode([new]) for _, _, new in model.merges]
    assert "ab" in learned and " ab" in learned
    for token in learned:
        assert not set(token) & set("<|>x"), token  # nothing learned from the special literal
        assert " " not in token.lstrip(" "), token  # nothing spans two pieces
    assert model.special_tokens == {"<|x|>": 256 + len(model.merges)}


def test_incremental_counts_agree_with_recounting_every_round() -> None:
    text = Path(__file__).read_text("utf-8")
    pattern = r" ?\w+| ?[^\w\s]+|\s+"

    pieces = [p.encode() for p in regex.findall(pattern, text)]
    assert train([text], 256 + 60, pattern).merges == naive_train(pieces, 60)


def test_a_special_token_that_extends_another_is_cut_whole() -> None:
    # with `<s>` listed first, a shortest-first cut would leave the `x` of `<s>x` to be learned
    model = train(["<s>xx<s>xx<s>xx"], 300, special_tokens=["<s>", "<s>x"])
    assert model.merges == []  # only `x` stays between the literals: nothing to merge
    assert set(model.special_tokens) == {"<s>", "<s>x"}
