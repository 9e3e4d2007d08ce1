"""The ranks families beyond OpenAI's and Qwen2's: Mistral's tekken files against mistral-common
itself, and the Kimi preset (its pattern rewritten for the `regex` module) against tiktoken running
Kimi's original pattern. The shipped qwen3.6, phi-4 and tekken are also in TIKTOKEN_SOURCES, so
the corpus, code-point and hypothesis tests of the other files cover them on both engines."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest
import tiktoken
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mistral_common.tokens.tokenizers.base import SpecialTokenPolicy

from service.bpe.engine.native import NativeEngine
from service.bpe.engine.patterns import KIMI_PATTERN
from service.errors import DisallowedSpecialError, StoreError
from service.runtime import engine_factory
from service.settings import BUNDLED_STORE
from service.store.formats.presets import PRESETS
from service.store.importers.imports import import_files
from service.store.importers.sources import Naming
from service.store.loader import load_store
from service.store.manifest import add_to_store
from service.store.registry import Registry
from tests.conftest import tekken
from tests.property.test_roundtrip import pieces
from tests.slow.test_pretokenizer import BLOCK, code_points, segment
from tests.support.testdata import CORPUS_NAMES, corpus_text, tiktoken_ranks, vocab_file

TEKKEN = "tekken_240911.json"
# Kimi K2's pat_str as tokenization_kimi.py writes it (class intersection, which tiktoken reads)
KIMI_UPSTREAM = "|".join(
    [
        r"""[\p{Han}]+""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*"""
        r"""[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+"""
        r"""[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
texts = st.lists(
    st.one_of(
        st.text(max_size=12),
        pieces,
        st.sampled_from(
            ["中文字", "々〇", "Ab中c", "\u0301中", "ǅ中'S", "x\u4e00'll", "\U00020000a", "⺀x"]
        ),
    ),
    max_size=12,
).map("".join)
SETTINGS = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@cache
def kimi_oracle(specials: tuple[tuple[str, int], ...] = ()) -> tiktoken.Encoding:
    return tiktoken.Encoding(
        "kimi",
        pat_str=KIMI_UPSTREAM,
        mergeable_ranks=tiktoken_ranks("cl100k_base"),
        special_tokens=dict(specials),
    )


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Registry]:
    """tekken_240911.json imported now, and cl100k's ranks with the kimi preset, on both
    engines."""
    store = tmp_path_factory.mktemp("families")
    add_to_store(store, import_files("tekken", [vocab_file(TEKKEN)], Naming("tekken", "new")))
    cl100k = vocab_file("cl100k_base.tiktoken")
    add_to_store(store, import_files("tiktoken", [cl100k], Naming("kimi", "1"), preset="kimi"))
    return {e: load_store(store, engine_factory(e)) for e in ("auto", "python")}


@pytest.mark.parametrize("engine", ["auto", "python"])
@pytest.mark.parametrize("corpus", CORPUS_NAMES, ids=lambda n: n.removesuffix(".txt"))
def test_tekken_ids_and_decode_are_mistral_commons(
    imported: dict[str, Registry], engine: str, corpus: str
) -> None:
    tok = imported[engine].resolve("tekken@new").tokenizer
    oracle = tekken(TEKKEN)
    text = corpus_text(corpus)
    ids = tok.encode(text, disallowed_special=frozenset())  # mistral-common: text is text
    assert ids == oracle.encode(text, bos=False, eos=False)
    assert tok.decode(ids) == oracle.decode(ids) == text


def test_the_shipped_tekken_is_the_import(
    registry: Registry, imported: dict[str, Registry]
) -> None:
    shipped, new = registry.resolve("tekken@240911"), imported["auto"].resolve("tekken@new")
    assert shipped.tokenizer.special_tokens == new.tokenizer.special_tokens
    assert shipped.tokenizer.vocab.tokens == new.tokenizer.vocab.tokens


def test_tekken_special_tokens_are_mistral_commons(registry: Registry) -> None:
    """The 1,000 special tokens at the low ids (twenty named, the rest `<SPECIAL_k>`), the
    vocabulary cut to `default_vocab_size`, and special ids decoding as mistral-common's KEEP."""
    tok, oracle = registry.resolve("tekken").tokenizer, tekken(TEKKEN)
    assert tok.special_tokens == {oracle.id_to_piece(k): k for k in range(1000)}
    assert tok.n_vocab == oracle.n_words == 131072
    ids = [oracle.bos_id, *oracle.encode("[INST] hi", bos=False, eos=False), 3, 999, 131071]
    assert tok.decode(ids) == oracle.decode(ids, special_token_policy=SpecialTokenPolicy.KEEP)
    text = "[INST]Hello[/INST]"
    assert tok.encode(text, allowed_special="all") == [
        oracle.get_special_token("[INST]"),
        *oracle.encode("Hello", bos=False, eos=False),
        oracle.get_special_token("[/INST]"),
    ]
    with pytest.raises(DisallowedSpecialError):  # our policy: refused unless allowed
        tok.encode(text)


def _tekken_file(tmp_path: Path, **changes: object) -> Path:
    data = json.loads(vocab_file(TEKKEN).read_bytes())
    data["vocab"] = data["vocab"][:300]
    data["config"].update(default_vocab_size=1300, num_vocab_tokens=300)
    for key, value in changes.items():
        data[key] = value
    path = tmp_path / "tekken_small.json"
    path.write_text(json.dumps(data))
    return path


def test_tekken_file_forms(tmp_path: Path) -> None:
    """A listed `special_tokens` comes first, fillers after; a later version must list them; the
    ranks 0..255 must be the single bytes; default_vocab_size cannot exceed what the file has."""
    listed = [
        {"rank": 0, "token_str": "<unk>", "is_control": True},
        {"rank": 1, "token_str": "<s>", "is_control": True},
    ]
    path = _tekken_file(tmp_path, special_tokens=listed)
    found = import_files("tekken", [path], Naming("t", "1"))
    assert list(found.special_tokens.items())[:3] == [("<unk>", 0), ("<s>", 1), ("<SPECIAL_2>", 2)]
    assert len(found.special_tokens) == 1000 and found.byte_ids == [1000 + b for b in range(256)]
    config = json.loads(path.read_text())["config"]
    vocab = json.loads(path.read_text())["vocab"]
    vocab[7] = {**vocab[7], "token_bytes": "AQ=="}
    bad = [
        ({"config": {**config, "version": "v13"}}, "special_tokens"),
        ({"config": {**config, "default_vocab_size": 1301}}, "default_vocab_size"),
        ({"vocab": vocab}, "vocab[7]"),
        ({"config": {**config, "pattern": 5}}, "pattern"),
    ]
    for changes, named in bad:
        with pytest.raises(StoreError, match=named.replace("[", r"\[")):
            import_files("tekken", [_tekken_file(tmp_path, **changes)], Naming("t", "1"))


@pytest.mark.parametrize("engine", ["auto", "python"])
def test_kimi_pattern_splits_as_tiktoken_on_kimis_original(
    imported: dict[str, Registry], engine: str
) -> None:
    tok = imported[engine].resolve("kimi").tokenizer
    assert imported[engine].resolve("kimi").pattern == KIMI_PATTERN == PRESETS["kimi"].pattern
    oracle = kimi_oracle(tuple(tok.special_tokens.items()))
    for corpus in CORPUS_NAMES:
        text = corpus_text(corpus)
        assert tok.encode(text) == oracle.encode_ordinary(text), corpus
    assert tok.encode("[BOS]x", allowed_special="all") == oracle.encode(
        "[BOS]x", allowed_special="all"
    )


@SETTINGS
@given(text=texts)
def test_kimi_pattern_on_generated_text(imported: dict[str, Registry], text: str) -> None:
    expected = kimi_oracle().encode_ordinary(text)
    for engine in ("auto", "python"):
        tok = imported[engine].resolve("kimi").tokenizer
        assert tok.encode(text, disallowed_special=frozenset()) == expected


def test_tekken_pattern_can_be_overridden(tmp_path: Path) -> None:
    found = import_files("tekken", [_tekken_file(tmp_path)], Naming("t", "1"), pattern="o200k")
    assert found.pattern == PRESETS["o200k_base"].pattern


def test_first_use_knows_what_the_built_store_says(registry: Registry) -> None:
    """Start-up's head-only facts of every shipped file (format v1 and v2) are the built ones."""
    lazy = load_store(BUNDLED_STORE, engine_factory("auto"), first_use=True)
    assert not lazy.failures and [t.ref for t in lazy] == [t.ref for t in registry]
    for t in lazy:
        built = registry.resolve(t.ref)
        assert t.built.built is None, t.ref
        facts = (built.defined_ids, built.tokenizer.special_tokens)
        assert (t.defined_ids, t.special_tokens) == facts
        assert t.special_tokens == built.special_tokens and t.metadata == built.metadata


def test_kimi_scanner_splits_every_code_point_as_tiktoken(imported: dict[str, Registry]) -> None:
    """The C scanner of the kimi preset against tiktoken running Kimi's original pattern, every
    code point in the contexts of tests/slow/test_pretokenizer.py (Han ones included)."""
    engine = imported["auto"].resolve("kimi").tokenizer.engine
    assert isinstance(engine, NativeEngine) and engine._split is None  # the C scanner splits
    oracle = kimi_oracle()
    for lo in range(0, 0x110000, BLOCK):
        cps = code_points(lo, lo + BLOCK)
        text = "".join(map(segment, cps))
        if engine.encode_ordinary(text) != oracle.encode_ordinary(text):
            bad = next(
                c
                for c in cps
                if engine.encode_ordinary(segment(c)) != oracle.encode_ordinary(segment(c))
            )
            pytest.fail(f"U+{bad:04X} in {segment(bad)!r} splits unlike tiktoken")
