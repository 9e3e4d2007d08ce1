"""A pattern from a file is untrusted: one that backtracks catastrophically is refused at import
(a quick probe), and one that stalls on some text anyway stops at the work's deadline with a
typed error instead of holding the worker."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from service.bpe import PythonEngine, Vocabulary
from service.bpe.deadline import Deadline, within
from service.bpe.engine import matching, native
from service.bpe.engine.patterns import PATTERNS
from service.bpe.pipeline.pre_tokenizers import split
from service.errors import FormatError, LimitExceededError, PatternTimeoutError, StoreError
from service.store.importers.hf_tokenizer import from_tokenizer_json

CATASTROPHIC = "(a|aa)+$"
ATTACK = "a" * 39 + "!"
VOCAB = Vocabulary.build("pairs", [(97, 97, 256)])


def test_the_probe_finds_catastrophic_patterns_and_passes_the_shipped_ones() -> None:
    assert all(map(matching.stalls, [CATASTROPHIC, r"(\w|\w\w)+$", r"(\s|\s\s)+$"]))
    assert not any(matching.stalls(p) for p in PATTERNS.values())
    assert not matching.stalls(r"\w+|\s+|.")


def test_a_split_that_backtracks_is_refused_at_import(tmp_path: Path) -> None:
    vocab = {chr(c): c - 33 for c in range(33, 127)}
    doc = {
        "model": {"type": "BPE", "vocab": vocab, "merges": []},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": CATASTROPHIC}, "behavior": "Isolated",
             "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "use_regex": False},
        ]},
        "decoder": {"type": "ByteLevel"},
    }  # fmt: skip
    source = tmp_path / "tokenizer.json"
    source.write_text(json.dumps(doc), "utf-8")
    with pytest.raises((FormatError, StoreError), match="backtracks"):
        from_tokenizer_json(source)


def engines(pattern: str) -> list[object]:
    built: list[object] = [PythonEngine(VOCAB, pattern)]
    return [*built, native.NativeEngine(VOCAB, pattern)] if native.AVAILABLE else built


def test_a_stalling_pattern_stops_at_the_deadline_on_both_engines() -> None:
    """Within work's deadline the pattern's time is the work's: its limit is what is reported."""
    for engine in engines(CATASTROPHIC + "|."):
        with within(Deadline(0.05)), pytest.raises(LimitExceededError, match="seconds of work"):
            engine.encode_ordinary(ATTACK)  # type: ignore[attr-defined]
        assert engine.count_ordinary("ab") == 2  # type: ignore[attr-defined]
    cut = split(CATASTROPHIC, "isolated", is_regex=True, invert=False)
    with within(Deadline(0.05)), pytest.raises(LimitExceededError, match="seconds of work"):
        cut(ATTACK, True)


def test_without_a_deadline_the_fixed_bound_holds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(matching, "NO_DEADLINE_SECONDS", 0.05)
    for engine in engines(CATASTROPHIC + "|."):
        with pytest.raises(PatternTimeoutError):
            engine.count_ordinary(ATTACK)  # type: ignore[attr-defined]
