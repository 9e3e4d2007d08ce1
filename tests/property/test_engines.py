"""Differential: the fast engine equals the reference engine on generated text, for every shipped
tokenizer (the corpora are covered in tests/slow/test_exactness.py). Generated text keeps to
characters assigned by Unicode 14; see `assigned_texts` for why."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from service.store.registry import Registry
from tests.property.test_roundtrip import SHIPPED, assigned_texts


@pytest.mark.parametrize("ref", SHIPPED)
@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=assigned_texts)
def test_fast_engine_equals_reference(
    registry: Registry, reference: Registry, piece_cache: int, ref: str, text: str
) -> None:
    """Three times: with the native piece cache on, the third pass is answered from it."""
    fast, ref_tok = registry.resolve(ref).tokenizer, reference.resolve(ref).tokenizer
    ids = ref_tok.encode(text, disallowed_special=frozenset())
    count = ref_tok.count(text, allowed_special="all", disallowed_special=frozenset())
    for _ in range(3):  # with the piece cache on: noted, kept, then read from it
        assert fast.encode(text, disallowed_special=frozenset()) == ids
        assert fast.count(text, allowed_special="all", disallowed_special=frozenset()) == count
