"""Pieces and offsets where the decoder changes the text (mistral-v7: `▁` to a space, the first
one dropped), and what the answer's size is worked out from before it is built."""

from __future__ import annotations

import msgspec

from service.api.pieces import extras, wire_size
from service.bpe.text.budgets import chunk, truncate
from service.bpe.text.pieces import character_starts, offsets, pieces
from service.store.registry import Registry

TEXT = "Hello world, how are you"
WORDS = ["Hello", " world", ",", " how", " are", " you"]


def test_spans_are_what_each_token_adds_to_the_decoded_text(registry: Registry) -> None:
    tok = registry.resolve("mistral-v7").tokenizer
    ids = tok.encode(TEXT)
    assert [tok.decode_bytes([i]) for i in ids][:2] == ["▁Hello".encode(), "▁world".encode()]
    assert pieces(tok, ids) == WORDS
    spans = offsets(tok, ids)
    assert spans == [(0, 5), (5, 11), (11, 12), (12, 16), (16, 20), (20, 24)]
    assert [TEXT[s:e] for s, e in spans] == WORDS
    assert offsets(tok, ids, "utf16") == spans
    assert character_starts(tok, ids) == [5, 6, 1, 4, 4, 4]  # the bytes' count starts with 6


def test_utf16_offsets_count_astral_characters_twice(registry: Registry) -> None:
    tok = registry.resolve("mistral-v7").tokenizer
    text = " Hello 🎉 naïve 你好"
    ids = tok.encode(text)
    assert pieces(tok, ids) == ["", " Hello", " ", "🎉", " na", "ï", "ve", " ", "你", "好"]
    cp = offsets(tok, ids)
    assert [text[s:e] for s, e in cp] == pieces(tok, ids)
    assert cp[3:5] == [(7, 8), (8, 11)]
    assert offsets(tok, ids, "utf16")[3:5] == [(7, 9), (9, 12)]


def test_truncate_and_chunk_count_the_returned_text(registry: Registry) -> None:
    tok = registry.resolve("mistral-v7").tokenizer
    cut = truncate(tok, TEXT, 3)
    assert (cut.text, cut.count) == ("Hello world,", 3)
    cut = truncate(tok, TEXT, 2, "end")
    assert (cut.text, cut.count) == ("are you", 2)  # `▁are▁you`; ` are you` is `▁▁are▁you`
    assert tok.count(TEXT[cut.start - 1 :]) == 3
    chunks = chunk(tok, TEXT, 2)
    assert "".join(c.text for c in chunks) == TEXT
    assert all(c.count == tok.count(c.text) <= 2 for c in chunks)


def test_wire_size_counts_the_decoded_text_not_the_input(registry: Registry) -> None:
    """Under NFC (Qwen) each U+1D160 decodes to three code points: offsets over four of them
    reach 12, two digits, where the input's 4 characters gave a bound of one digit each."""
    tok = registry.resolve("qwen3").tokenizer
    ids = tok.encode("\U0001d160" * 4)
    built = len(msgspec.json.encode(extras(tok, ids, False, "codepoints")[1])) - 1
    assert len(tok.decode(ids)) == 12 and built == 154
    assert wire_size(tok, ids, False, "codepoints") >= built


def test_wire_size_of_pieces_is_exact_where_the_first_piece_differs(registry: Registry) -> None:
    tok = registry.resolve("mistral-v7").tokenizer
    ids = tok.encode(TEXT)
    built = len(msgspec.json.encode(extras(tok, ids, True, "none")[0])) - 1
    assert wire_size(tok, ids, True, "none") == built
