"""The shipped tokenizer.json families (DeepSeek V3 and V4) give Hugging Face `tokenizers`' ids
and decode on every corpus slice in tests/data, with both engines; the bundled file says which
upstream file it was made from."""

from __future__ import annotations

import hashlib

import pytest
from tokenizers import Tokenizer as HFTokenizer

from service.store.registry import Registry
from tests.support.testdata import CORPUS_NAMES as CORPORA
from tests.support.testdata import corpus_text as text_of
from tests.support.testdata import vocab_bytes, vocab_file

FAMILIES = {
    "deepseek-v3": "deepseek_v3_tokenizer.json",
    "deepseek-v4": "deepseek_v4_tokenizer.json",
}


@pytest.mark.parametrize("engine", ["registry", "reference"])
@pytest.mark.parametrize("name", sorted(FAMILIES))
@pytest.mark.parametrize("corpus", CORPORA, ids=lambda n: n.removesuffix(".txt"))
def test_same_ids_and_decode_as_hugging_face(
    request: pytest.FixtureRequest, engine: str, name: str, corpus: str
) -> None:
    ours = request.getfixturevalue(engine).resolve(name).tokenizer
    hf = HFTokenizer.from_file(str(vocab_file(FAMILIES[name])))
    text = text_of(corpus)
    ids = ours.encode(text)
    assert ids == hf.encode(text, add_special_tokens=False).ids
    assert ours.decode(ids) == hf.decode(ids, skip_special_tokens=False)
    assert ours.count(text) == len(ids)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_the_bundled_file_names_its_upstream_file(registry: Registry, name: str) -> None:
    digest = hashlib.sha256(vocab_bytes(FAMILIES[name])).hexdigest()
    loaded = registry.resolve(name)
    assert f"sha256:{digest}" in loaded.metadata.source
    assert loaded.metadata.license
