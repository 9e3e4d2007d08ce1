"""Files that differ only in their special tokens share one vocabulary and engine per load; with
another pattern they share the vocabulary and the native tables; with the other rule, the token
bytes (service/store/sharing.py). Every file still gives the ids and decode it gives alone."""

import gc
import sys
from pathlib import Path

import msgspec
import pytest

from service.bpe import PythonEngine, Vocabulary, train
from service.bpe.engine import native
from service.bpe.engine.native import NativeEngine
from service.runtime import engine_factory
from service.settings import BUNDLED_STORE
from service.store.formats.tokenizer import TokenizerFile
from service.store.loader import listed_refs, load_store
from service.store.manifest import add_to_store
from service.store.registry import Registry
from tests.support.testdata import CORPUS_NAMES, corpus_text

TEXT = "Shared vocabularies: the same merges, other special tokens <|a|> <|b|>."


def trained(name: str, specials: dict[str, int]) -> TokenizerFile:
    model = train([Path(__file__).read_text("utf-8")], 330, r" ?\w+| ?[^\w\s]+|\s+")
    return TokenizerFile(
        name=name,
        version="1",
        rule="pairs",
        pattern=model.pattern,
        special_tokens=specials,
        merges=model.merges,
    )


def test_files_differing_only_in_special_tokens_share_and_keep_their_own_specials(
    tmp_path: Path,
) -> None:
    base = trained("base", {"<|a|>": 400})
    add_to_store(tmp_path, base)
    add_to_store(
        tmp_path, msgspec.structs.replace(base, name="chat", special_tokens={"<|b|>": 401})
    )
    add_to_store(tmp_path, msgspec.structs.replace(base, name="other", pattern=r"\w+|\W+"))
    reg = load_store(tmp_path, engine_factory())
    assert not reg.failures
    a, b, other = (reg.resolve(n).tokenizer for n in ("base", "chat", "other"))
    assert a.vocab is b.vocab and a.engine is b.engine
    # another pattern: the same vocabulary (and native tables), its own engine to split with
    assert other.vocab is a.vocab and other.engine is not a.engine
    ids_a, ids_b = (t.encode(TEXT, allowed_special="all") for t in (a, b))
    assert 400 in ids_a and 401 not in ids_a
    assert 401 in ids_b and 400 not in ids_b
    # each one gives the ids it gives when loaded alone
    for name in ("base", "chat", "other"):
        alone = load_store(tmp_path, engine_factory(), only=name).resolve(name).tokenizer
        assert alone.vocab is not a.vocab
        ours = reg.resolve(name).tokenizer
        assert ours.encode(TEXT, allowed_special="all") == alone.encode(TEXT, allowed_special="all")


def test_another_rule_or_other_merges_share_no_engine(tmp_path: Path) -> None:
    base = trained("base", {"<|a|>": 400})
    add_to_store(tmp_path, base)
    add_to_store(tmp_path, msgspec.structs.replace(base, name="ranked", rule="ranks"))
    add_to_store(tmp_path, msgspec.structs.replace(base, name="fewer", merges=base.merges[:-1]))
    reg = load_store(tmp_path, engine_factory())
    assert not reg.failures
    a, ranked, fewer = (reg.resolve(n).tokenizer for n in ("base", "ranked", "fewer"))
    assert ranked.vocab is not a.vocab and ranked.engine is not a.engine
    assert ranked.vocab.tokens is a.vocab.tokens  # the same bytes under the other rule: one list
    assert fewer.vocab is not a.vocab and fewer.vocab.tokens is not a.vocab.tokens
    for name in ("ranked", "fewer"):
        alone = load_store(tmp_path, engine_factory(), only=name).resolve(name).tokenizer
        ours = reg.resolve(name).tokenizer
        assert ours.encode(TEXT, allowed_special="all") == alone.encode(TEXT, allowed_special="all")


def test_twins_under_the_two_rules_share_an_engine_only_when_self_consistent(
    tmp_path: Path,
) -> None:
    """ "abc" is made from "a" + "bc": under `pairs` "abc" stays a, bc (not self-consistent), under
    `ranks` it is one token; each keeps its own engine and ids. A consistent pair shares."""
    odd = TokenizerFile(
        name="odd",
        version="1",
        rule="pairs",
        pattern=r"\w+|\W+",
        merges=[(98, 99, 256), (97, 98, 257), (257, 99, 258)],
    )
    fine = TokenizerFile(
        name="fine",
        version="1",
        rule="pairs",
        pattern=r"\w+|\W+",
        merges=[(97, 98, 256), (256, 99, 257), (98, 99, 258)],
    )
    for tf in (odd, fine):
        add_to_store(tmp_path, tf)
        add_to_store(tmp_path, msgspec.structs.replace(tf, name=f"{tf.name}-ranks", rule="ranks"))
    reg = load_store(tmp_path, engine_factory())
    assert not reg.failures
    assert reg.resolve("odd").self_consistent is False and reg.resolve("fine").self_consistent
    for name in ("odd", "odd-ranks", "fine", "fine-ranks"):
        alone = load_store(tmp_path, engine_factory(), only=name).resolve(name).tokenizer
        ours = reg.resolve(name).tokenizer
        for text in ("abc", "abcabc bcab", "cab abca"):
            assert ours.encode(text) == alone.encode(text), (name, text)
    assert reg.resolve("odd").tokenizer.encode("abc") != reg.resolve("odd-ranks").tokenizer.encode(
        "abc"
    )
    odd_engines = {id(reg.resolve(n).tokenizer.engine) for n in ("odd", "odd-ranks")}
    assert len(odd_engines) == 2
    if native.AVAILABLE:
        lent = [reg.resolve(n).tokenizer.engine for n in ("fine", "fine-ranks")]
        assert sorted(getattr(e, "nbytes", -1) == 0 for e in lent) == [False, True]


def test_share_tables_only_when_equal() -> None:
    merges = [(97, 98, 256), (256, 99, 257)]
    pairs, ranks = Vocabulary.build("pairs", merges), Vocabulary.build("ranks", merges)
    other = Vocabulary.build("ranks", [(97, 98, 256), (256, 100, 257)])
    assert not other.share_tables(pairs) and other.tokens is not pairs.tokens
    assert ranks.share_tables(pairs) and ranks.tokens is pairs.tokens
    assert PythonEngine(ranks, None).encode_ordinary("abcd") == [257, 100]


@pytest.mark.skipif(not native.AVAILABLE, reason="the native engine is not built")
def test_a_native_engine_split_another_way_keeps_its_owner_alive_and_lets_it_go() -> None:
    vocab = Vocabulary.build("ranks", [(97, 98, 256), (256, 99, 257), (32, 97, 258)])
    owner = NativeEngine(vocab, r"\w+| ?[^\w\s]+|\s+")
    tables = owner._engine
    held = sys.getrefcount(tables)
    other = owner.split_by(None)  # one piece: no pattern
    assert other.nbytes == 0 and sys.getrefcount(tables) == held + 1
    want = [PythonEngine(vocab, None).encode_ordinary(t) for t in ("abc abc", "ab ca")]
    del owner
    gc.collect()
    assert [other.encode_ordinary(t) for t in ("abc abc", "ab ca")] == want
    assert other.count_ordinary("abc abc") == len(want[0])
    del other
    gc.collect()
    assert sys.getrefcount(tables) == held - 1  # the owner object is gone: only `tables` holds it


@pytest.fixture(scope="module")
def bundled() -> Registry:
    reg = load_store(BUNDLED_STORE, engine_factory("auto"))
    assert not reg.failures
    return reg


def test_bundled_files_share_what_they_have_in_common(bundled: Registry) -> None:
    cl100k, phi4 = (bundled.resolve(n).tokenizer for n in ("cl100k_base", "phi-4"))
    assert phi4.vocab is cl100k.vocab and phi4.engine is not cl100k.engine
    if isinstance(phi4.engine, NativeEngine):
        assert phi4.engine.nbytes == 0  # cl100k_base's tables
    qwen2, qwen25 = (bundled.resolve(n).tokenizer for n in ("qwen2", "qwen2.5"))
    assert (qwen2.vocab.rule, qwen25.vocab.rule) == ("ranks", "pairs")
    assert qwen2.vocab.tokens is qwen25.vocab.tokens
    assert bundled.resolve("qwen2.5").self_consistent  # so qwen2's native tables serve it too
    if isinstance(qwen25.engine, NativeEngine):
        assert qwen25.engine.nbytes == 0 and qwen25.engine is not qwen2.engine


@pytest.mark.parametrize("ref", listed_refs([BUNDLED_STORE]))
def test_every_bundled_tokenizer_gives_its_ids_and_decode_as_when_loaded_alone(
    bundled: Registry, ref: str
) -> None:
    """Loaded alone, nothing is shared: the ids and decode must be the same."""
    name = ref.partition("@")[0]
    alone = load_store(BUNDLED_STORE, engine_factory("auto"), only=name).resolve(ref).tokenizer
    ours = bundled.resolve(ref).tokenizer
    for corpus in CORPUS_NAMES:
        text = corpus_text(corpus)[:6000]
        ids = ours.encode(text)
        assert ids == alone.encode(text), corpus
        assert ours.decode(ids) == alone.decode(ids)
