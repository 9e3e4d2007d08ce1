"""Cutting long texts at newline-before-letter points never changes the ids (preset patterns)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from service.store import engines
from service.store.engines import cut
from service.store.registry import Registry
from tests.property.test_roundtrip import texts

LINES = st.lists(st.one_of(texts, st.sampled_from(["\n", "\n\n", " \n", ".\n", "x\n", "\r\n"])),
                 max_size=30).map("".join)  # fmt: skip


def test_cut_keeps_every_character_and_cuts_only_at_safe_points() -> None:
    text = "alpha.\nBeta\n\ngamma \ndelta\n1 two\n" * 50
    parts = cut(text, 20)
    assert "".join(parts) == text and len(parts) > 10
    for part in parts[1:]:
        assert part[0].isalnum()


@pytest.mark.parametrize("ref", ["gpt2", "cl100k_base", "o200k_base", "qwen2", "bard@2"])
@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(text=LINES)
def test_cut_encoding_equals_whole_encoding(registry: Registry, reference: Registry, ref: str,
                                            text: str, monkeypatch_cut: None) -> None:  # fmt: skip
    fast = registry.resolve(ref).tokenizer
    assert fast.engine._cuttable  # type: ignore[attr-defined]
    expected = reference.resolve(ref).tokenizer.encode(text, disallowed_special=frozenset())
    assert fast.encode(text, disallowed_special=frozenset()) == expected


@pytest.fixture
def monkeypatch_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    """Cut after 8 characters, so generated texts are cut many times."""
    monkeypatch.setattr(engines, "CUT_CHARS", 8)
