"""Encode's pieces and offsets on every tokenizer: the pieces join to the decoded text; each
token's span in that text is its piece (where the piece is text), or holds its bytes; the spans
cover the text in order; UTF-16 offsets are the code point ones converted; and the answer's JSON
size is what `wire_size` said before building it, or less."""

from __future__ import annotations

import base64
from collections.abc import Callable

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from service.api.pieces import extras, wire_size
from service.bpe import Tokenizer
from service.bpe.text.pieces import character_starts, offsets, pieces, walk
from service.store.registry import Registry
from tests.conftest import EVERY_TOKENIZER, bundled_refs
from tests.property.test_stream_chunks import id_streams

TEXTS = st.lists(
    st.text(st.characters(codec="utf-8"), min_size=1, max_size=6)
    | st.sampled_from(
        [
            "你好",
            "🎉",
            "👩\u200d💻",
            " the",
            "\n",
            "naïve",
            "  ",
            " ",
            "▁",
            "\U0001d160",  # three code points under NFC (Qwen): the decoded text is longer
        ]
    ),
    max_size=20,
).map("".join)
SETTINGS = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def utf16_len(s: str) -> int:
    return len(s.encode("utf-16-le")) // 2


@pytest.mark.parametrize("ref", EVERY_TOKENIZER)
@SETTINGS
@given(text=TEXTS)
def test_pieces_and_offsets(tokenizer_of: Callable[[str], Tokenizer], ref: str, text: str) -> None:
    tok = tokenizer_of(ref)
    ids = tok.encode_ordinary(text)
    decoded = tok.decode(ids)
    ps = pieces(tok, ids)
    assert len(ps) == len(ids)
    joined = b"".join(p.encode() if isinstance(p, str) else p for p in ps)
    assert joined.decode() == decoded
    for p in ps:
        if isinstance(p, bytes):
            try:
                p.decode("utf-8")
            except UnicodeDecodeError:
                continue
            raise AssertionError(f"{p!r} is valid UTF-8 but was given as bytes")
    spans = offsets(tok, ids)
    assert len(spans) == len(ids)
    end = 0
    for (s, e), p in zip(spans, ps, strict=True):
        assert 0 <= s <= e <= len(decoded)
        assert end - 1 <= s <= end <= e  # in order, no gap, overlapping by one character at most
        end = e
        if isinstance(p, str):
            assert decoded[s:e] == p
        else:  # part of a character: the span has the whole character
            assert p in decoded[s:e].encode()
    assert end == len(decoded) and (not spans or spans[0][0] == 0)
    units = [(utf16_len(decoded[:s]), utf16_len(decoded[:e])) for s, e in spans]
    assert offsets(tok, ids, "utf16") == units
    ends = [e for _, e in spans]
    assert character_starts(tok, ids) == [b - a for a, b in zip([0, *ends], ends, strict=False)]


@pytest.mark.parametrize("ref", EVERY_TOKENIZER)
@SETTINGS
@given(text=TEXTS, want_pieces=st.booleans(), unit=st.sampled_from(["none", "codepoints", "utf16"]))
def test_wire_size_bounds_the_answer(
    tokenizer_of: Callable[[str], Tokenizer], ref: str, text: str, want_pieces: bool, unit: str
) -> None:
    """What `wire_size` says before anything is built bounds the JSON of what is built; the
    pieces' share is exact but for a byte of each base64 piece."""
    tok = tokenizer_of(ref)
    ids = tok.encode_ordinary(text)
    p, o = extras(tok, ids, want_pieces, unit)
    size = wire_size(tok, ids, want_pieces, unit)
    built = sum(len(msgspec.json.encode(x)) - 1 for x in (p, o) if x)  # less one bracket each
    assert built <= size
    if want_pieces and unit == "none" and p:
        assert size - built <= sum(not isinstance(x, str) for x in p)


@pytest.mark.parametrize("ref", EVERY_TOKENIZER)
@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_any_ids_walk_to_their_decoded_text(
    tokenizer_of: Callable[[str], Tokenizer], ref: str, data: st.DataObject
) -> None:
    """Ids no encoding gives (raw bytes that split or break characters) walk to the one-shot
    decode, with spans in order inside it."""
    tok = tokenizer_of(ref)
    ids = data.draw(id_streams(tok))
    text, starts, ends = walk(tok, ids)
    assert text == tok.decode(ids, "replace")
    assert starts == sorted(starts) and ends == sorted(ends)
    assert all(0 <= s <= e <= len(text) for s, e in zip(starts, ends, strict=True))
    assert all(s <= e for s, e in zip(starts[1:], ends, strict=False))  # no gap
    assert len(pieces(tok, ids)) == len(ids)


def test_every_bundled_tokenizer_is_sampled(registry: Registry) -> None:
    assert sorted(bundled_refs()) == sorted(t.ref for t in registry)


def test_split_character_is_base64(registry: Registry) -> None:
    tok = registry.resolve("cl100k_base").tokenizer
    ids = tok.encode("🙂")
    ps = pieces(tok, ids)
    assert len(ids) == 2 and all(isinstance(p, bytes) for p in ps)
    assert base64.b64encode(b"".join(ps)) == base64.b64encode("🙂".encode())  # type: ignore[arg-type]
    assert offsets(tok, ids) == [(0, 1), (0, 1)]
    assert offsets(tok, ids, "utf16") == [(0, 2), (0, 2)]
