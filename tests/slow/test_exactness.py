"""Every imported tokenizer gives exactly the reference ids on every corpus slice in tests/data."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pytest
from tokenizers import Tokenizer as HFTokenizer

from service.bpe import PythonEngine
from service.bpe.engine.native import NativeEngine
from service.runtime import engine_factory
from service.store.formats.presets import PRESETS
from service.store.formats.tokenizer import TokenizerFile
from service.store.importers.imports import import_files
from service.store.importers.sources import Naming
from service.store.loader import load_store
from service.store.manifest import add_to_store
from service.store.registry import Registry
from tests.conftest import TIKTOKEN_SOURCES, tiktoken_oracle
from tests.support.testdata import CORPUS_NAMES as CORPORA
from tests.support.testdata import corpus_text as text_of
from tests.support.testdata import vocab_bytes, vocab_file


@pytest.mark.parametrize("engine", ["registry", "reference"])
@pytest.mark.parametrize("name", sorted(TIKTOKEN_SOURCES))
@pytest.mark.parametrize("corpus", CORPORA, ids=lambda n: n.removesuffix(".txt"))
def test_same_ids_as_tiktoken(
    request: pytest.FixtureRequest, registry: Registry, engine: str, name: str, corpus: str
) -> None:
    """Both engines: the fast one the service runs, and the pure-Python reference."""
    loaded = request.getfixturevalue(engine).resolve(name)
    text = text_of(corpus)
    oracle = tiktoken_oracle(registry, name)
    expected_input = text
    if loaded.normalization != "none":
        expected_input = unicodedata.normalize(loaded.normalization, text)
    ours = loaded.tokenizer.encode(text, disallowed_special=frozenset())
    assert ours == oracle.encode_ordinary(expected_input)
    assert loaded.tokenizer.count(text, disallowed_special=frozenset()) == len(ours)


@pytest.mark.parametrize("name", sorted(TIKTOKEN_SOURCES))
def test_special_tokens_match_tiktoken(registry: Registry, name: str) -> None:
    loaded = registry.resolve(name)
    oracle = tiktoken_oracle(registry, name)
    specials = sorted(loaded.tokenizer.special_tokens)
    text = "Hello" + "".join(f"{s} mid {i}" for i, s in enumerate(specials)) + " end"
    assert loaded.tokenizer.encode(text, allowed_special="all") == oracle.encode(
        text, allowed_special="all"
    )
    with pytest.raises(ValueError):
        oracle.encode(text)


@pytest.mark.parametrize("corpus", CORPORA, ids=lambda n: n.removesuffix(".txt"))
def test_qwen_matches_hugging_face_tokenizers(registry: Registry, corpus: str) -> None:
    hf = HFTokenizer.from_file(str(vocab_file("qwen3_tokenizer.json")))
    text = text_of(corpus)
    expected = hf.encode(text, add_special_tokens=False).ids
    assert registry.resolve("qwen3").tokenizer.encode(text) == expected
    assert registry.resolve("qwen2").tokenizer.encode(text) == expected


def test_qwen_preset_lists_the_added_tokens_of_tokenizer_json(registry: Registry) -> None:
    assert registry.resolve("qwen3").tokenizer.special_tokens == PRESETS["qwen2"].special_tokens


def test_nonspecial_tokens_are_the_added_tokens_tokenizer_json_marks_not_special(
    registry: Registry,
) -> None:
    """What skip_special_tokens keeps: the store, the importer and the qwen2 preset agree with
    the `"special": false` flags of Qwen's own tokenizer.json files."""
    naming = Naming(name="x", version="1")
    for ref, name in (("qwen3", "qwen3_tokenizer.json"), ("qwen2.5", "qwen2_5_tokenizer.json")):
        added = json.loads(vocab_bytes(name))["added_tokens"]
        want = {t["content"] for t in added if t["special"] is False}
        tok = registry.resolve(ref).tokenizer
        assert {t for t, i in tok.special_tokens.items() if i not in tok.skipped_ids} == want
        # the v1 import (a pattern chosen), as the bundled qwen files were made; a v2 import
        # keeps the flags on its added tokens instead (tests/unit/store/test_hf_pipeline.py)
        v1 = import_files("hf", [vocab_file(name)], naming, pattern="qwen2")
        assert set(v1.nonspecial_tokens) == want
        if ref == "qwen3":
            assert set(PRESETS["qwen2"].nonspecial_tokens) == want


def test_gpt2_encoder_json_and_vocab_bpe_import_to_r50k_ids(
    registry: Registry, tmp_path: Path
) -> None:
    files = [vocab_file("encoder.json"), vocab_file("vocab.bpe")]
    tf = import_files("gpt2", files, Naming("gpt2", "orig"), preset="gpt2")
    add_to_store(tmp_path, tf)
    imported = load_store(tmp_path, engine_factory("python")).resolve("gpt2@orig")
    assert imported.rule == "pairs" and imported.self_consistent
    shipped = registry.resolve("gpt2").tokenizer
    for corpus in CORPORA:
        text = text_of(corpus)
        assert imported.tokenizer.encode(text) == shipped.encode(text), corpus


@pytest.mark.parametrize("corpus", CORPORA, ids=lambda n: n.removesuffix(".txt"))
@pytest.mark.parametrize("ref", ["bard@1", "bard@2"])
def test_fast_engine_equals_reference_on_trained_tokenizers(
    registry: Registry, reference: Registry, ref: str, corpus: str
) -> None:
    text = text_of(corpus)
    fast = registry.resolve(ref).tokenizer.encode(text)
    assert fast == reference.resolve(ref).tokenizer.encode(text)


def test_engine_choice(registry: Registry, reference: Registry, tmp_path: Path) -> None:
    for t in registry:
        assert isinstance(t.tokenizer.engine, NativeEngine), t.ref  # every shipped one, both rules
    for t in reference:
        assert isinstance(t.tokenizer.engine, PythonEngine)
    # not self-consistent: the pairs rule itself (not lowest-rank bytes) runs natively
    odd = TokenizerFile(
        name="odd",
        version="1",
        rule="pairs",
        pattern=r"\w+|\W+",
        merges=[(98, 99, 256), (97, 98, 257), (257, 99, 258)],
    )
    add_to_store(tmp_path, odd)
    loaded = load_store(tmp_path, engine_factory("auto")).resolve("odd")
    assert not loaded.self_consistent and isinstance(loaded.tokenizer.engine, NativeEngine)
    assert loaded.tokenizer.encode("abc") == [97, 256]


def test_a_custom_pattern_splits_in_python_and_merges_natively(tmp_path: Path) -> None:
    # `regex` knows \X (one grapheme per piece); no C scanner does: the regex module splits
    tf = TokenizerFile(
        name="custom", version="1", rule="pairs", pattern=r"\X|\w+", merges=[(97, 98, 256)]
    )
    add_to_store(tmp_path, tf)
    loaded = load_store(tmp_path, engine_factory("auto")).resolve("custom")
    assert isinstance(loaded.tokenizer.engine, NativeEngine)
    assert loaded.tokenizer.encode("ab e\u0301") == [97, 98, 32, 101, 204, 129]
    assert loaded.tokenizer.count("ab e\u0301") == 6
