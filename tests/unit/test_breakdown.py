"""The per-message breakdown of a harmony conversation is worked out in one pass (issue 23,
high 4: it rendered every prefix again, quadratic); it must equal rendering every prefix."""

from __future__ import annotations

from typing import Any

import pytest

from service.bpe.deadline import Deadline
from service.errors import LimitExceededError
from service.models import counting, harmony
from service.store.modelfile import HarmonyChat
from service.store.registry import Registry

CALL = {
    "id": "c1",
    "type": "function",
    "function": {"name": "get_weather", "arguments": {"city": "Paris"}},
}
CITY = {"type": "object", "properties": {"city": {"type": "string"}}}
WEATHER = {"name": "get_weather", "description": "Weather", "parameters": CITY}
TOOLS = [{"type": "function", "function": WEATHER}]
CONVERSATION: list[dict[str, Any]] = [
    {"role": "user", "content": "Hi"},
    {"role": "system", "content": "Be brief."},
    {"role": "assistant", "content": "Hello!", "tool_calls": [CALL]},
    {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
    {"role": "developer", "content": "Answer in French."},
    {"role": "user", "content": "Merci <|end|> beaucoup"},
    {"role": "assistant", "content": "De rien."},
]


@pytest.mark.parametrize("tools", [None, TOOLS])
def test_harmony_breakdown_equals_rendering_every_prefix(registry: Registry,
                                                        tools: Any) -> None:  # fmt: skip
    model = registry.resolve_model("gpt-oss")
    tok = registry.resolve(model.tokenizer_ref)
    chat = model.profile.chat
    assert isinstance(chat, HarmonyChat)

    def rendered(msgs: list[dict[str, Any]]) -> int:  # the reference: each prefix from scratch
        return sum(1 if special else len(tok.tokenizer.encode_ordinary(text))
                   for text, special in harmony.render(chat, msgs, tools, False))  # fmt: skip

    expected = [rendered(CONVERSATION[:k]) for k in range(len(CONVERSATION) + 1)]
    got = counting._harmony_prefixes(chat, tok, CONVERSATION, tools, Deadline())
    assert got == expected


def test_a_template_breakdown_too_large_to_render_is_refused(registry: Registry) -> None:
    model = registry.resolve_model("qwen2.5")
    tok = registry.resolve(model.tokenizer_ref)
    many = [{"role": "user", "content": "x"}] * 1000  # ~30 KB rendered, 1000 times over
    with pytest.raises(LimitExceededError):
        counting.count_chat(model, tok, many, None)
    total = counting.count_chat(model, tok, many, None, breakdown=False)
    assert total.input_tokens > 5000
