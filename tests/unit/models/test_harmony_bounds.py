"""Harmony renders a tool's schema indented at each level of nesting, so its text can be many
times the request's size: the rendering is held to `max_chars` as it grows, and refused past it,
before the whole of it is made."""

from __future__ import annotations

import tracemalloc
from typing import Any

import pytest

from service.errors import LimitExceededError
from service.models.billing import count_conversation
from service.store.registry import Registry

MESSAGES = [{"role": "user", "content": "hi"}]


def nested(depth: int, width: int) -> dict[str, Any]:
    """A schema `depth` objects deep whose innermost object has `width` properties."""
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {f"p{i}": {"type": "string"} for i in range(width)},
    }
    for level in range(depth):
        schema = {"type": "object", "properties": {f"level{level}": schema}}
    return schema


def tool(parameters: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": "f", "parameters": parameters}}


def test_a_deep_schema_is_refused_before_its_rendering_is_made(registry: Registry) -> None:
    tools = [tool(nested(28, 20_000))]  # about 0.3 MB of JSON, about 2.6 MB rendered
    tracemalloc.start()
    with pytest.raises(LimitExceededError) as info:
        count_conversation(registry, "gpt-oss", MESSAGES, tools, max_chars=256 * 1024)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert "tool definitions" in str(info.value) and info.value.limit == 256 * 1024
    assert peak < 2 * 1024 * 1024, f"{peak} bytes allocated to refuse it"


def test_a_schema_within_the_bound_is_counted_the_same_with_any_larger_bound(
    registry: Registry,
) -> None:
    tools = [tool(nested(3, 50))]
    small = count_conversation(registry, "gpt-oss", MESSAGES, tools, max_chars=64 * 1024)
    large = count_conversation(registry, "gpt-oss", MESSAGES, tools)
    assert small.count.input_tokens == large.count.input_tokens > 50
