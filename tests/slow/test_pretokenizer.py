"""The native pre-tokenizers split exactly as tiktoken's regex engine does, for every code point
(U+0000..U+10FFFF, surrogates excluded) in several contexts: after a space and before an apostrophe
suffix, after a letter and before a digit, inside digits, after an apostrophe and before a line end
(and, through the next segment, after one). Compared on the ids of the real vocabulary (tiktoken
does not expose its splits): many code points per call, and where a block differs, each code point
of it alone, to name the first one that differs."""

from __future__ import annotations

import pytest
import regex
from tokenizers import Tokenizer as HFTokenizer

from service.bpe.engine.native import SCANNERS, NativeEngine, split
from service.bpe.engine.patterns import PATTERNS
from service.store.registry import Registry
from tests.conftest import tiktoken_oracle
from tests.support.testdata import CORPUS_NAMES, corpus_text, vocab_file

SCANNED = {
    "gpt2": "gpt2",
    "cl100k_base": "cl100k",
    "o200k_base": "o200k",
    "qwen2": "qwen2",
    "phi-4": "llama3",
    "qwen3.6": "qwen3.5",
    "tekken": "tekken",
}
BLOCK = 0x10000
# the scanners of one pattern (those of v2 chains: tests/property/test_chains.py and below)
PATTERNED = sorted(scanner for scanner in SCANNERS if scanner in PATTERNS)


def segment(cp: int) -> str:
    c = chr(cp)
    return f" {c}'s a{c}1{c}2'{c}\n"


def code_points(lo: int, hi: int) -> list[int]:
    return [cp for cp in range(lo, hi) if not 0xD800 <= cp <= 0xDFFF]


@pytest.mark.parametrize("name", sorted(SCANNED))
def test_every_code_point_splits_as_tiktoken(registry: Registry, name: str) -> None:
    engine = registry.resolve(name).tokenizer.engine
    assert isinstance(engine, NativeEngine)
    oracle = tiktoken_oracle(registry, name)
    for lo in range(0, 0x110000, BLOCK):
        cps = code_points(lo, lo + BLOCK)
        text = "".join(map(segment, cps))
        if engine.encode_ordinary(text) != oracle.encode_ordinary(text):
            bad = next(
                cp
                for cp in cps
                if engine.encode_ordinary(segment(cp)) != oracle.encode_ordinary(segment(cp))
            )
            pytest.fail(f"{name}: U+{bad:04X} in {segment(bad)!r} splits unlike tiktoken")


@pytest.mark.parametrize("scanner", PATTERNED)
def test_scanners_split_the_corpora_as_the_regex_module(scanner: str) -> None:
    pattern = regex.compile(PATTERNS[scanner])
    for name in CORPUS_NAMES:
        text = corpus_text(name)
        assert split(scanner, text) == pattern.findall(text), name


@pytest.mark.parametrize("scanner", PATTERNED)
def test_whitespace_and_suffix_corners(scanner: str) -> None:
    pattern = regex.compile(PATTERNS[scanner])
    for text in [
        "",
        " ",
        "  ",
        "a  ",
        "a \n",
        " \n \n ",
        "\r\n\r\n x",
        "  \t\u3000b",
        "'s",
        "'S",
        "'\u017f",
        "x'LL'Ve'rE",
        "ABCd'm",
        "\u0301Ab",
        " \u0301AB",
        "1234567",
        "a//\n/",
        "??\r\n\n!",
        "\u00a0\u2028x",
        "ǅǅa",
        "ᾈb",
        "ʰʰ",
        "٣٤٥٦",
        " 😀 😀\n",
    ]:
        assert split(scanner, text) == pattern.findall(text), repr(text)


def test_the_deepseek_chain_splits_every_code_point_as_hugging_face() -> None:
    """Every code point between the boundaries of each step of DeepSeek's chain (numbers, the CJK
    ranges, ASCII punctuation before letters, space before symbols, line ends), cut by its C
    scanner and by Hugging Face's pre-tokenizer (both on Unicode 16's classes)."""
    pre = HFTokenizer.from_file(str(vocab_file("deepseek_v3_tokenizer.json"))).pre_tokenizer
    assert pre is not None

    def around(cp: int) -> str:
        c = chr(cp)
        return f" {c}'s a{c}1{c}\u4e2d{c}\u30fb{c},x{c} ,{c}\r\n{c}"

    for lo in range(0, 0x110000, BLOCK):
        text = "".join(map(around, code_points(lo, lo + BLOCK)))
        want = [text[a:b] for _, (a, b) in pre.pre_tokenize_str(text)]
        assert split("deepseek", text) == want, f"block U+{lo:04X}"
