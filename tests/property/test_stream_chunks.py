"""For every way of cutting ids into chunks, streaming decode equals the one-shot decode, on every
tokenizer (a decoder's text steps applied as the stream leaves)."""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from service.bpe import StreamDecoder, Tokenizer
from service.errors import UndecodableBytesError
from tests.conftest import EVERY_TOKENIZER

SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def id_streams(tok: Tokenizer) -> st.SearchStrategy[list[int]]:
    """Ids of real text (multi-byte characters, specials) mixed with raw bytes that split or
    break UTF-8 characters."""
    byte_ids = tok.vocab.byte_ids
    text_ids = st.text(max_size=20).map(lambda s: tok.encode(s, disallowed_special=frozenset()))
    specials = st.sampled_from(sorted(tok.special_tokens.values())).map(lambda i: [i])
    raw = st.lists(
        st.sampled_from([0x41, 0xE4, 0xB8, 0xAD, 0xF0, 0x9F, 0x98, 0x80, 0xFF, 0xC0]), max_size=4
    ).map(lambda bs: [byte_ids[b] for b in bs])
    return st.lists(st.one_of(text_ids, specials, raw), max_size=8).map(
        lambda parts: [i for p in parts for i in p]
    )


def chunked(ids: list[int], cuts: list[int]) -> list[list[int]]:
    points = sorted({c % (len(ids) + 1) for c in cuts})
    bounds = [0, *points, len(ids)]
    return [ids[a:b] for a, b in pairwise(bounds)]


@pytest.mark.parametrize("ref", EVERY_TOKENIZER)
@SETTINGS
@given(data=st.data())
def test_replace_mode_equals_one_shot(
    tokenizer_of: Callable[[str], Tokenizer], ref: str, data: st.DataObject
) -> None:
    tok = tokenizer_of(ref)
    ids = data.draw(id_streams(tok))
    cuts = data.draw(st.lists(st.integers(0, 10_000), max_size=10))
    resumable = data.draw(st.booleans())
    decoder = StreamDecoder(tok.decode_bytes, "replace", text_step=tok.text_step)
    out = []
    for chunk in chunked(ids, cuts):
        if resumable:  # the stateless form: a fresh decoder per step, carrying only the state
            decoder = StreamDecoder.resume(
                tok.decode_bytes, decoder.state(), "replace", tok.text_step
            )
        out.append(decoder.decode(chunk))
    out.append(decoder.flush())
    assert "".join(out) == tok.decode(ids, "replace")
    whole = tok.decode_bytes(ids)
    if "\ufffd" not in whole.decode("utf-8", "replace"):
        assert all("\ufffd" not in part for part in out)  # a split character is never replaced


@pytest.mark.parametrize("ref", EVERY_TOKENIZER)
@SETTINGS
@given(data=st.data())
def test_strict_mode_fails_exactly_when_one_shot_fails(
    tokenizer_of: Callable[[str], Tokenizer], ref: str, data: st.DataObject
) -> None:
    tok = tokenizer_of(ref)
    ids = data.draw(id_streams(tok))
    cuts = data.draw(st.lists(st.integers(0, 10_000), max_size=10))
    try:
        expected: str | UndecodableBytesError = tok.decode(ids, "strict")
    except UndecodableBytesError as exc:
        expected = exc
    decoder = StreamDecoder(tok.decode_bytes, "strict", text_step=tok.text_step)
    out = []
    try:
        for chunk in chunked(ids, cuts):
            out.append(decoder.decode(chunk))
        out.append(decoder.flush())
    except UndecodableBytesError as exc:
        assert isinstance(expected, UndecodableBytesError)
        assert exc.offset == expected.offset
        valid = tok.decode_bytes(ids)[: exc.offset].decode()  # what left before the error
        if tok.text_step is not None and valid:
            valid = tok.text_step(valid, tok.decode_bytes(ids[:1]))
        assert valid.startswith("".join(out))
        return
    assert "".join(out) == expected
