"""Encode's pieces and offsets: pieces join to the text's bytes; offsets cover the text in order
and each token's span holds its bytes."""

from __future__ import annotations

import base64

from hypothesis import given, settings
from hypothesis import strategies as st

from service.bpe.text.pieces import offsets, pieces
from service.store.registry import Registry

TEXTS = st.lists(
    st.text(st.characters(codec="utf-8"), min_size=1, max_size=6)
    | st.sampled_from(["你好", "🎉", "👩\u200d💻", " the", "\n", "naïve"]),
    max_size=20,
).map("".join)


@settings(max_examples=150, deadline=None)
@given(
    text=TEXTS,
    name=st.sampled_from(["cl100k_base", "o200k_base", "gpt2"]),
    unit=st.sampled_from(["codepoints", "utf16"]),
)
def test_pieces_and_offsets(registry: Registry, text: str, name: str, unit: str) -> None:
    tok = registry.resolve(name).tokenizer
    ids = tok.encode_ordinary(text)
    ps = pieces(tok, ids)
    joined = b"".join(p.encode() if isinstance(p, str) else p for p in ps)
    assert joined == text.encode()
    for p in ps:
        if isinstance(p, bytes):
            try:
                p.decode("utf-8")
            except UnicodeDecodeError:
                continue
            raise AssertionError(f"{p!r} is valid UTF-8 but was given as bytes")
    units = text if unit == "codepoints" else text.encode("utf-16-le")
    size = len(units) if unit == "codepoints" else len(units) // 2
    spans = offsets(tok, ids, unit)  # type: ignore[arg-type]
    assert len(spans) == len(ids)
    end = 0
    for (s, e), tid in zip(spans, ids, strict=True):
        assert 0 <= s <= e <= size and s <= end  # in order, no gap
        end = max(end, e)
        if unit == "codepoints":
            assert tok.decode_bytes([tid]) in text[s:e].encode()
        else:
            piece = units[2 * s : 2 * e].decode("utf-16-le").encode()  # type: ignore[union-attr]
            assert tok.decode_bytes([tid]) in piece
    assert end == size


def test_split_character_is_base64(registry: Registry) -> None:
    tok = registry.resolve("cl100k_base").tokenizer
    ids = tok.encode("🙂")
    ps = pieces(tok, ids)
    assert len(ids) == 2 and all(isinstance(p, bytes) for p in ps)
    assert base64.b64encode(b"".join(ps)) == base64.b64encode("🙂".encode())  # type: ignore[arg-type]
    assert offsets(tok, ids) == [(0, 1), (0, 1)]
    assert offsets(tok, ids, "utf16") == [(0, 2), (0, 2)]
