"""A group in a pattern from a file captures nothing: the pieces are the pattern's whole matches,
on every path that applies a file's pattern (both engines, a v2 file's `pattern`, explain,
training, a tekken import)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from service.bpe import PythonEngine, Vocabulary
from service.bpe.engine import native
from service.bpe.pipeline.pre_tokenizers import matches
from service.bpe.text.explain import explain_text
from service.bpe.trainer import train
from service.runtime import engine_factory
from service.store.importers.imports import import_files
from service.store.importers.sources import Naming
from service.store.loader import load_store
from service.store.manifest import add_to_store

TEXT = "hello world, 42"
GROUPED, PLAIN = r"(\w+)|\s+|.", r"\w+|\s+|."
# "he", "ll", "hell", "wo", "world" on top of the bytes
VOCAB = Vocabulary.build(
    "ranks", [(104, 101, 256), (108, 108, 257), (256, 257, 258), (119, 111, 259), (259, 114, 260)]
)


def engines(pattern: str) -> list[object]:
    built: list[object] = [PythonEngine(VOCAB, pattern)]
    if native.AVAILABLE:
        built.append(native.NativeEngine(VOCAB, pattern))
    return built


@pytest.mark.parametrize("at", [0, 1], ids=["python", "native"])
def test_both_engines_cut_a_grouped_pattern_at_its_whole_matches(at: int) -> None:
    if at >= len(engines(PLAIN)):
        pytest.skip("the native engine is not built")
    grouped, plain = engines(GROUPED)[at], engines(PLAIN)[at]
    ids = plain.encode_ordinary(TEXT)  # type: ignore[attr-defined]
    assert grouped.encode_ordinary(TEXT) == ids  # type: ignore[attr-defined]
    assert grouped.count_ordinary(TEXT) == len(ids) == 10  # type: ignore[attr-defined]
    assert b"".join(VOCAB.tokens[i] for i in ids) == TEXT.encode()


def test_a_v2_pattern_explain_and_training_take_whole_matches() -> None:
    pieces, _ = matches("(a)|.")("hello world", True)
    assert "".join(pieces) == "hello world" and len(pieces) == 11
    assert "".join(p.text for p in explain_text(VOCAB, GROUPED, TEXT)) == TEXT
    assert train([TEXT] * 4, 300, GROUPED).merges == train([TEXT] * 4, 300, PLAIN).merges


def test_a_tekken_pattern_with_a_group_counts_every_character(tmp_path: Path) -> None:
    tokens = [bytes([b]) for b in range(256)] + [b"he", b"ll", b"hell"]
    doc = {
        "config": {"pattern": "(a)|.", "default_num_special_tokens": 3,
                   "default_vocab_size": 3 + len(tokens), "version": "v11"},
        "vocab": [{"rank": i, "token_bytes": base64.b64encode(t).decode()}
                  for i, t in enumerate(tokens)],
        "special_tokens": [{"rank": k, "token_str": s}
                           for k, s in enumerate(["<unk>", "<s>", "</s>"])],
    }  # fmt: skip
    source = tmp_path / "tekken.json"
    source.write_text(json.dumps(doc), "utf-8")
    add_to_store(tmp_path / "store", import_files("tekken", [source], Naming("t", "1")))
    for engine in ("auto", "python"):
        registry = load_store([tmp_path / "store"], engine_factory(engine))
        tok = registry.resolve("t").tokenizer
        assert tok.count("hello world") == 11, engine  # one character a piece
        assert tok.decode(tok.encode("hello world")) == "hello world"
