"""The constructions of Gemma 3 (SentencePiece-style BPE with byte fallback, `▁`, a Strip
decoder) and Llama 3 (`ignore_merges` on tiktoken-converted merges), built with Hugging Face
`tokenizers` (tests/unit/store/test_hf_pipeline.py), against that reference on generated text with
both
engines; their streams equal their full decodes."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from pathlib import Path
from tempfile import mkdtemp
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer

from service.bpe import StreamDecoder
from tests.property.test_hf_families import texts
from tests.unit.store.test_hf_pipeline import sentencepiece_bpe, served, tiktoken_converted

BUILDERS: dict[str, Callable[[], Tokenizer]] = {
    "gemma-construction": sentencepiece_bpe,
    "llama3-construction": tiktoken_converted,
}
SETTINGS = settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@cache
def built(name: str) -> tuple[Tokenizer, dict[str, Any]]:
    tok = BUILDERS[name]()
    return tok, dict(served(Path(mkdtemp(prefix="toksvc-hf-")), tok))


@pytest.mark.parametrize("engine", ["auto", "python"])
@pytest.mark.parametrize("name", sorted(BUILDERS))
@SETTINGS
@given(text=texts)
def test_same_ids_and_decode_as_hugging_face(engine: str, name: str, text: str) -> None:
    tok, ours_by_engine = built(name)
    ours = ours_by_engine[engine]
    ids = ours.encode(text, allowed_special="all")
    assert ids == tok.encode(text, add_special_tokens=False).ids, ascii(text)
    assert ours.decode(ids) == tok.decode(ids, skip_special_tokens=False)


@pytest.mark.parametrize("name", sorted(BUILDERS))
@SETTINGS
@given(text=texts, cuts=st.lists(st.integers(1, 4), max_size=30))
def test_the_stream_equals_the_full_decode(name: str, text: str, cuts: list[int]) -> None:
    ours = built(name)[1]["auto"]
    ids = ours.encode(text, allowed_special="all")
    stream = StreamDecoder(ours.decode_bytes, "strict", text_step=ours.text_step)
    out, at = [], 0
    for size in cuts:
        out.append(stream.decode(ids[at : at + size]))
        at += size
    out += [stream.decode(ids[at:]), stream.flush()]
    assert "".join(out) == ours.decode(ids)
