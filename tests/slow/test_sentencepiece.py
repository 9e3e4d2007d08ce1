"""`toksvc import sentencepiece`: Mistral's BPE `.model` files give the `sentencepiece` library's
ids and decode on every corpus and on generated text, with both engines; unsupported models are
refused naming the field."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest
import sentencepiece as spm
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from service.errors import DisallowedSpecialError, StoreError
from service.runtime import engine_factory
from service.store.importers.imports import import_files
from service.store.importers.sources import Naming
from service.store.loader import load_store
from service.store.manifest import add_to_store
from service.store.registry import Registry
from tests.support.testdata import CORPUS_NAMES, corpus_text, vocab_file

MODELS = {
    "v1": "tokenizer.model.v1",
    "v3": "mistral_instruct_tokenizer_240323.model.v3",
    "v7": "mistral_instruct_tokenizer_241114.model.v7",
}
pieces = st.sampled_from(
    [
        "   ",
        "\t",
        "\n\n",
        " \u3000 ",
        "12345",
        "中文字",
        "日本語",
        "😀",
        "👩‍👩‍👧",
        "👍🏽",
        "e\u0301",
        "\u0301",
        "\x00",
        "\U000e0001",
        "\U0010ffff",
        "\U0003d000",
        "▁",
        "▁▁x",
        "<0x41>",
        "<s>",
        "[INST]",
        "हिन्दी",
        "ǅ",
        "a  b",
        " ",
        "[RE",
        "F]",
    ]
)
texts = st.lists(st.one_of(st.text(max_size=10), pieces), max_size=12).map("".join)
USER_DEFINED = ["[REF]", "[/REF]", "[REFERENCE_DOC_"]  # the user-defined pieces of v3 and v7
SETTINGS = settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@cache
def oracle(version: str) -> spm.SentencePieceProcessor:
    return spm.SentencePieceProcessor(model_file=str(vocab_file(MODELS[version])))


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Registry]:
    store = tmp_path_factory.mktemp("sentencepiece")
    for version, name in MODELS.items():
        tf = import_files("sentencepiece", [vocab_file(name)], Naming("mistral", version))
        add_to_store(store, tf)
    return {e: load_store(store, engine_factory(e)) for e in ("auto", "python")}


@pytest.mark.parametrize("engine", ["auto", "python"])
@pytest.mark.parametrize("version", sorted(MODELS))
@pytest.mark.parametrize("corpus", CORPUS_NAMES, ids=lambda n: n.removesuffix(".txt"))
def test_ids_and_decode_are_sentencepieces(
    imported: dict[str, Registry], engine: str, version: str, corpus: str
) -> None:
    tok = imported[engine].resolve(f"mistral@{version}").tokenizer
    text = corpus_text(corpus)
    ids = tok.encode(text, disallowed_special=frozenset())  # code_python has "[PREFIX]"
    assert ids == oracle(version).encode(text)
    assert tok.decode(ids) == oracle(version).decode(ids) == text


@pytest.mark.parametrize("version", sorted(MODELS))
@SETTINGS
@given(text=texts)
def test_generated_text(imported: dict[str, Registry], version: str, text: str) -> None:
    """Special literals (control pieces: `<s>`, `[INST]`) are text to sentencepiece: ours too
    with disallowed_special=[]. Texts with a user-defined piece (`[REF]`) are left out: those
    follow Hugging Face's tokenizer.json, not sentencepiece
    (service/store/importers/sentencepiece.py, and
    test_user_defined_pieces_follow_hugging_face)."""
    assume(not any(p in text for p in USER_DEFINED))
    expected = oracle(version).encode(text)
    for engine in ("auto", "python"):
        tok = imported[engine].resolve(f"mistral@{version}").tokenizer
        ids = tok.encode(text, disallowed_special=frozenset())
        assert ids == expected, engine
        assert tok.decode(ids) == oracle(version).decode(expected)


@pytest.mark.parametrize("version", sorted(MODELS))
def test_control_pieces_are_special_tokens(imported: dict[str, Registry], version: str) -> None:
    tok, sp = imported["auto"].resolve(f"mistral@{version}").tokenizer, oracle(version)
    controls = {sp.id_to_piece(i): i for i in range(sp.get_piece_size()) if sp.is_control(i)}
    assert {t: i for t, i in tok.special_tokens.items() if t != "<unk>"} == controls
    with pytest.raises(DisallowedSpecialError):
        tok.encode("<s>hi")
    assert tok.encode("<s>hi", allowed_special="all") == [sp.bos_id(), *sp.encode("hi")]


def _protobuf(model_type: int) -> bytes:
    """A minimal ModelProto: two pieces and a trainer_spec with the given model_type."""

    def field(number: int, payload: bytes) -> bytes:
        return bytes([number << 3 | 2, len(payload)]) + payload

    piece = field(1, b"a") + bytes([2 << 3 | 5]) + b"\x00\x00\x00\x00"
    return field(1, piece) + field(1, field(1, b"b")) + field(2, bytes([3 << 3, model_type]))


@pytest.mark.parametrize(
    ("model_type", "named"), [(1, "unigram"), (3, "word"), (2, "byte_fallback")]
)
def test_unsupported_models_are_refused(tmp_path: Path, model_type: int, named: str) -> None:
    path = tmp_path / "m.model"
    path.write_bytes(_protobuf(model_type))
    with pytest.raises(StoreError, match=named):
        import_files("sentencepiece", [path], Naming("m", "1"))
    path.write_bytes(b"\x0a\xff")
    with pytest.raises(StoreError, match="not a SentencePiece model"):
        import_files("sentencepiece", [path], Naming("m", "1"))


def test_user_defined_pieces_follow_hugging_face(imported: dict[str, Registry]) -> None:
    """`[REF]` is split out of the raw text and the text on each side is normalized on its own
    (a `▁` in front of each), as Hugging Face tokenizers does with the legacy tokenizer.json of
    these models; sentencepiece matches it in the normalized text (one `▁` in front of the
    whole text). The pieces between agree."""
    tok, sp = imported["auto"].resolve("mistral@v7").tokenizer, oracle("v7")
    ref = sp.piece_to_id("[REF]")
    assert tok.encode("x [REF]y", disallowed_special=frozenset()) == [
        *sp.encode("x "),
        ref,
        *sp.encode("y"),
    ]
    assert sp.encode("x [REF]y") == [*sp.encode("x "), ref, sp.piece_to_id("y")]
