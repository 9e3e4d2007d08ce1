"""The C scanners of format v2 pre-tokenizer chains (service/store/formats/chains.py) against the
Python steps they replace (service/bpe/pipeline/pre_tokenizers.py, the `regex` module) and
against Hugging Face `tokenizers` running the same steps, on generated text and on every corpus
in tests/data; and a v2 tokenizer's ids with the scanner equal its ids through the Python steps."""

from __future__ import annotations

from functools import cache

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from tokenizers import Regex, pre_tokenizers
from tokenizers import Tokenizer as HFTokenizer

from service.bpe.engine import native
from service.bpe.engine.patterns import LLAMA3_PATTERN
from service.bpe.pipeline import pre_tokenizers as steps
from service.bpe.pipeline.pre_tokenizers import PreTokenize
from service.settings import BUNDLED_STORE
from service.store.formats.tokenizer import parse
from service.store.registry import Registry
from tests.support.testdata import CORPUS_NAMES, corpus_text, vocab_file

pytestmark = pytest.mark.skipif(not native.AVAILABLE, reason="the native engine is not built")

# the boundaries of every step: numbers (ASCII and not, runs past three), the CJK ranges and their
# marks, symbols and punctuation (・ U+30FB, ゛ U+309B), the range's unassigned U+3040 and the
# character after its end (U+9FA6), ASCII punctuation before letters, every kind of whitespace
# run, emoji with ZWJ, combining marks, format and control characters, unassigned code points
pieces = st.sampled_from(
    [
        "   ",
        "\t\t",
        "\n\n",
        " \r\n ",
        "\r",
        "\u3000",
        "\u00a0",
        "\x85",
        "\u2028",
        "12345678",
        "٣٤٥٦",
        "½",
        "中文汉字",
        "\u9fa5\u9fa6",
        "ひらがな",
        "カタカナ",
        "・",
        "ー",
        "\u3099",
        "\u309b",
        "\u3040",
        "한국어",
        "👨\u200d👩\u200d👧",
        "👍🏽",
        "e\u0301\u0302",
        "\u0301",
        "é",
        "\u0378",
        "\U000e0fff",
        "\U0010fffe",
        "\U000e0001",
        "\x00",
        "\x01",
        "\u200b",
        "▁",
        "<0x41>",
        "'s",
        "'LL",
        ",abc",
        "-x",
        "$",
        "^_",
        "~",
        "Hello",
        " world",
        "!!!",
        " !",
        "a" * 30,
        "ǅ",
        "\ue000",
    ]
)
# any code point (the scanners' classes and Hugging Face's Oniguruma are both Unicode 16)
any_text = st.lists(
    st.one_of(st.text(st.characters(exclude_categories=("Cs",)), max_size=10), pieces),
    max_size=16,
).map("".join)
# characters assigned by Unicode 14: the `regex` module (Unicode 17) classes them as the scanners
# do (characters assigned since split differently there, docs/format.md)
assigned_text = st.lists(
    st.one_of(st.text(st.characters(exclude_categories=("Cs", "Cn")), max_size=10), pieces),
    max_size=16,
).map("".join)
SETTINGS = settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
DEEPSEEK = "deepseek_v3_tokenizer.json"


@cache
def python_steps(scanner: str) -> list[PreTokenize]:
    if scanner == "llama3":
        return [steps.split(LLAMA3_PATTERN, "isolated", is_regex=True, invert=False)]
    tf = parse((BUNDLED_STORE / "deepseek-v3" / "1.json").read_bytes())
    return [p.build() for p in tf.pre_tokenizers or ()]


@cache
def hugging_face(scanner: str) -> pre_tokenizers.PreTokenizer:
    if scanner == "llama3":
        return pre_tokenizers.Split(Regex(LLAMA3_PATTERN), "isolated")
    pre = HFTokenizer.from_file(str(vocab_file(DEEPSEEK))).pre_tokenizer
    assert pre is not None
    return pre


def python_pieces(scanner: str, text: str) -> list[str]:
    return steps.run_pre_tokenizers(python_steps(scanner), text, True)


def reference_pieces(scanner: str, text: str) -> list[str]:
    return [text[a:b] for _, (a, b) in hugging_face(scanner).pre_tokenize_str(text)]


SCANNERS = ["deepseek", "llama3"]


@pytest.mark.parametrize("scanner", SCANNERS)
@SETTINGS
@given(text=assigned_text)
@example(text=" ,abc 12345 中文かな・カ  \n\n x\u0301y\x00a \x00\x01")
def test_the_scanner_cuts_what_the_python_steps_cut(scanner: str, text: str) -> None:
    assert native.split(scanner, text) == python_pieces(scanner, text), ascii(text)


@pytest.mark.parametrize("scanner", SCANNERS)
@SETTINGS
@given(text=any_text)
@example(text="\U0003d000 \U00016ea0a 1\U00011de0")  # letters and a digit new in Unicode 17
def test_the_scanner_cuts_what_hugging_face_cuts(scanner: str, text: str) -> None:
    assert native.split(scanner, text) == reference_pieces(scanner, text), ascii(text)


@pytest.mark.parametrize("scanner", SCANNERS)
@pytest.mark.parametrize("corpus", CORPUS_NAMES)
def test_the_scanner_on_every_corpus(scanner: str, corpus: str) -> None:
    text = corpus_text(corpus)
    got = native.split(scanner, text)
    assert "".join(got) == text
    assert got == python_pieces(scanner, text)
    assert got == reference_pieces(scanner, text)


@pytest.mark.parametrize("name", ["deepseek-v3", "deepseek-v4"])
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=assigned_text)
def test_a_tokenizer_with_its_scanner_gives_the_python_steps_ids(
    registry: Registry, name: str, text: str
) -> None:
    """The same tokenizer and engine, its added tokens and all: cut and merged in C, or cut by
    the Python steps and merged."""
    tok = registry.resolve(name).tokenizer
    assert tok.pipeline.scanner == "deepseek"
    steps = tok.pipeline.encode(text, frozenset(), tok.engine.encode_pieces)  # type: ignore[attr-defined]
    assert tok.encode_ordinary(text) == steps
