"""The word cut of SentencePiece-style text (service/bpe/pipeline/wordcut.py, csrc/wordcut.h) and
the
no-op steps left out at load (service/store/pipeline/build.py), against Hugging Face `tokenizers`
on a small file whose merges cross '▁' (so a cut before every '▁' would change ids), with both
engines; the fast path is checked to be the one in use. And the native pairs rule's first pass
over characters rebuilt from bytes, against the Python reference."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer, models, normalizers
from tokenizers import pre_tokenizers as pre

from service.bpe.engine import native
from service.bpe.engine.native import NativeEngine
from service.bpe.pipeline.byte_fallback import synthetic_merges
from service.bpe.pipeline.wordcut import MAX_CONTEXTS, contexts
from service.bpe.vocab import Vocabulary
from tests.unit.store.test_hf_pipeline import TEXTS, assert_same, sentencepiece_bpe, served

M = "▁"
# merges in rank order: a cross merge ranked before the one a cut would make ("a▁" before "▁b")
MERGES = [
    ("a", M),
    (M, "b"),
    ("<", "/"),
    (M, "</"),
    (">", M + "</"),
    (M, M),
    ("a", "b"),
    (M + M, "a"),
    ("b", M + M),
    (">", M),
    ("c", "d"),
    ("cd", "e"),
]


def crossing() -> Tokenizer:
    """Gemma 3's shape (Replace ' ' -> '▁', Split ' ', byte fallback) with merges across '▁'."""
    vocab = {"<unk>": 0} | {f"<0x{b:02X}>": b + 1 for b in range(256)}
    for token in ["a", "b", "c", "d", "e", ">", "<", "/", M] + [a + b for a, b in MERGES]:
        vocab.setdefault(token, len(vocab))
    tok = Tokenizer(models.BPE(vocab, MERGES, byte_fallback=True, unk_token="<unk>", fuse_unk=True))
    tok.normalizer = normalizers.Replace(" ", M)
    tok.pre_tokenizer = pre.Split(" ", "merged_with_previous")
    tok.add_tokens(["\n", "<x>"])
    doc = json.loads(tok.to_str())
    doc["decoder"] = {
        "type": "Sequence",
        "decoders": [
            {"type": "Replace", "pattern": {"String": M}, "content": " "},
            {"type": "ByteFallback"},
            {"type": "Fuse"},
        ],
    }
    return Tokenizer.from_str(json.dumps(doc))


CROSSING_TEXTS = [
    "a b",
    "a  b",
    "x> </y",
    "> </",
    ">  </",
    "a   ab  cde",
    " a",
    "a ",
    "  ",
    "ab\na b<x>a b",
    "a\u2581b",
    "é a 中 b",
    "cde cd e c de",
]


def test_contexts_are_the_places_a_token_spans_a_cut() -> None:
    tokens = [t.encode() for t in ["a", M, M + M, M + M + "a", "a" + M, ">" + M + "</", ">" + M]]
    tokens += [None, b"b\xe2\x96", b"\xe2\x96\x81x\xe2"]  # a mark's first bytes at a token's end
    want = {
        (b"a", M.encode()),
        (M.encode(), M.encode()),
        (b">", M.encode()),
        (b"b", b"\xe2\x96"),
        (M.encode() + b"x", b"\xe2"),
    }
    assert set(contexts(tokens, M) or ()) == want


def test_too_many_contexts_means_no_word_cut() -> None:
    tokens = [chr(0x4E00 + i).encode() + M.encode() for i in range(MAX_CONTEXTS + 1)]
    assert contexts(tokens, M) is None
    assert contexts(tokens[:MAX_CONTEXTS], M) is not None


def test_a_merge_across_the_mark_keeps_the_ids_of_the_reference(tmp_path: Path) -> None:
    tok = crossing()
    assert_same(tmp_path, tok, TEXTS + CROSSING_TEXTS)
    (tmp_path / "again").mkdir()
    for engine, ours in served(tmp_path / "again", tok):
        assert ours.pipeline.pre_tokenizers == ()  # the Split on ' ' is left out
        assert (ours._words is not None) == (engine == "auto" and native.AVAILABLE)


def test_a_cut_before_every_mark_would_differ() -> None:
    """The construction can fail the test above: without the contexts, ids change."""
    tok = crossing()
    text = "a b"
    cut = [p.replace(" ", M) for p in ("a", " b")]
    apart = [i for p in cut for i in tok.encode(p, add_special_tokens=False).ids]
    assert tok.encode(text, add_special_tokens=False).ids != apart


@pytest.mark.parametrize(
    ("split", "left_out"),
    [
        (pre.Split(" ", "removed"), True),
        (pre.Split(" ", "isolated", invert=True), False),  # no match, inverted: the text goes
        (pre.Split("x", "isolated"), False),
        (pre.Sequence([pre.Split(" ", "isolated"), pre.Digits()]), False),
    ],
)
def test_only_splits_that_cannot_match_are_left_out(
    tmp_path: Path, split: Any, left_out: bool
) -> None:
    tok = sentencepiece_bpe()
    tok.pre_tokenizer = split
    assert_same(tmp_path, tok, TEXTS + CROSSING_TEXTS)
    (tmp_path / "again").mkdir()
    for _, ours in served(tmp_path / "again", tok):
        assert (ours.pipeline.pre_tokenizers == ()) == left_out
        assert (ours.pipeline.words == M) == left_out


@pytest.mark.skipif(not native.AVAILABLE, reason="the word cut is the native engine's")
def test_encode_words_puts_ids_as_they_are_and_checks_its_arguments(tmp_path: Path) -> None:
    (_, ours), *_ = served(tmp_path, crossing())
    engine = ours.engine
    words = ours._words
    assert words is not None
    ab = engine.encode_pieces(["ab"])
    assert words(["", 7, "ab", 123456, ""]) == [7, *ab, 123456]
    with pytest.raises(ValueError, match="mark"):
        engine.encode_words(b"", [], ["a"])
    with pytest.raises(TypeError):
        engine.encode_words(M.encode(), [(b"a",)], ["a"])
    with pytest.raises(ValueError, match="contexts"):
        engine.encode_words(M.encode(), [(b"a", b"b")] * (MAX_CONTEXTS + 1), ["a"])


_built: dict[str, Any] = {}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.sampled_from(
            ["a", "b", "c", "d", "e", " ", "  ", ">", "<", "/", "</", M, "\n", "<x>", "é", "中"]
        ),
        max_size=24,
    ).map("".join)
)
def test_generated_text_gives_the_reference_ids(text: str) -> None:
    if not _built:
        _built["tok"] = tok = crossing()
        _built["ours"] = dict(served(Path(__import__("tempfile").mkdtemp()), tok))
    want = _built["tok"].encode(text, add_special_tokens=False).ids
    for engine, ours in _built["ours"].items():
        assert ours.encode(text, allowed_special="all") == want, (engine, text)


@pytest.mark.skipif(not native.AVAILABLE, reason="the character pass is the native engine's")
@settings(max_examples=300, deadline=None)
@given(
    data=st.lists(
        st.one_of(
            st.sampled_from(["é", "中", "▁", "😀", "è", "a", "b"]).map(str.encode),
            st.binary(min_size=1, max_size=3),  # stray continuation bytes, cut characters
        ),
        max_size=40,
    ).map(b"".join)
)
def test_characters_rebuilt_first_give_the_reference_merge(data: bytes) -> None:
    """The native pairs rule spends the synthetic character merges (ranked first) in one pass
    per character (merge.h pt_chars): on short and long pieces (64 bytes and more), valid UTF-8
    or not, the Python reference's merge gives the same ids. A lead+continuation merge ranked
    after the others ('è', 370, behind 'a' + its lead byte) is not part of that pass."""
    chars = {300: "é".encode(), 301: "中".encode(), 302: M.encode(), 303: "😀".encode()}
    merges, _ = synthetic_merges(chars, range(256), range(256), 1000)
    merges += [
        (302, ord("a"), 400),
        (300, 301, 350),
        (ord("a"), 303, 360),
        (ord("a"), 0xC3, 390),
        (0xC3, 0xA8, 370),
        (400, 350, 380),
        (ord("b"), ord("b"), 310),
    ]
    vocab = Vocabulary.build("pairs", merges)
    assert vocab.free_ids
    engine = NativeEngine(vocab, None)
    for piece in (data, data * 3):
        assert engine.merge_bytes(piece) == vocab.merge_piece(piece)
