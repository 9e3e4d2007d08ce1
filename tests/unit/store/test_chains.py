"""Which v2 pre-tokenizer chains a C scanner takes over: the exact pattern strings of a known
chain, `isolated`, not inverted, at most a plain `ByteLevel` after them; nothing else."""

from __future__ import annotations

import pytest

from service.bpe.engine import native
from service.bpe.engine.native import NativeEngine
from service.bpe.engine.patterns import DEEPSEEK_CHAIN, LLAMA3_PATTERN
from service.settings import BUNDLED_STORE
from service.store.formats.chains import chain_scanner
from service.store.formats.tokenizer import parse
from service.store.pipeline.pre_tokenizers import ByteLevel, Digits, PreTokenizer, Split
from service.store.registry import Registry

pytestmark = pytest.mark.skipif(not native.AVAILABLE, reason="the native engine is not built")
PLAIN = ByteLevel(add_prefix_space=False, use_regex=False)


def deepseek(*tail: PreTokenizer) -> list[PreTokenizer]:
    return [*(Split(pattern=p) for p in DEEPSEEK_CHAIN), *tail]


@pytest.mark.parametrize("name", ["deepseek-v3", "deepseek-v4"])
def test_the_shipped_deepseek_files_are_scanned(registry: Registry, name: str) -> None:
    tf = parse((BUNDLED_STORE / name / "1.json").read_bytes())
    assert chain_scanner(tf.pre_tokenizers or ()) == "deepseek"
    tok = registry.resolve(name).tokenizer
    assert isinstance(tok.engine, NativeEngine) and tok._cut is not None


def test_the_reference_engine_keeps_the_python_steps(reference: Registry) -> None:
    tok = reference.resolve("deepseek-v3").tokenizer
    assert tok.pipeline.scanner == "deepseek"
    assert tok._cut is None


@pytest.mark.parametrize(
    ("steps", "scanner"),
    [
        (deepseek(PLAIN), "deepseek"),
        (deepseek(), "deepseek"),
        ([Split(pattern=LLAMA3_PATTERN), PLAIN], "llama3"),
        ([Split(pattern=LLAMA3_PATTERN)], "llama3"),
        # anything else: the Python steps
        ([], None),
        ([PLAIN], None),
        (deepseek(ByteLevel(add_prefix_space=True, use_regex=False)), None),
        (deepseek(ByteLevel(add_prefix_space=False, use_regex=True)), None),
        (deepseek()[:2], None),
        (deepseek()[::-1], None),
        ([*deepseek()[:2], Split(pattern=DEEPSEEK_CHAIN[2] + "|x")], None),
        ([Split(pattern=r"\p{N}{1,3}", behavior="merged_with_next"), *deepseek()[1:]], None),
        ([Split(pattern=r"\p{N}{1,3}", invert=True), *deepseek()[1:]], None),
        ([Split(pattern=r"\p{N}{1,3}", regex=False), *deepseek()[1:]], None),
        ([Digits(individual_digits=False), *deepseek()[1:]], None),
        ([PLAIN, Split(pattern=LLAMA3_PATTERN)], None),
        ([Split(pattern=LLAMA3_PATTERN, behavior="removed")], None),
    ],
)
def test_a_chain_is_recognised_by_its_exact_steps(
    steps: list[PreTokenizer], scanner: str | None
) -> None:
    assert chain_scanner(steps) == scanner
