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


@pytest.mark.parametrize(("model", "system"), [("mistral-large-2411", True),
                                               ("mistral-nemo", False)])  # fmt: skip
def test_a_mistral_breakdown_gives_each_message_its_own_tokens(
    registry: Registry, model: str, system: bool
) -> None:
    """Each message's figure is its own tokens, counted apart from the format: <s> with the first
    message; [SYSTEM_PROMPT]text[/SYSTEM_PROMPT] (v7), [INST]text[/INST], an assistant's text and
    its </s> (counted with the assistant, though a prefix ending there is open)."""
    from service.models.billing import count_conversation  # noqa: PLC0415

    messages = [{"role": "user", "content": "Hi 你好 [INST]"},
                {"role": "assistant", "content": "Hello 🎉"},
                {"role": "user", "content": "Thanks"}]  # fmt: skip
    if system:
        messages.insert(0, {"role": "system", "content": "Be brief."})
    counted = count_conversation(registry, model, messages).count
    encode = registry.resolve(registry.resolve_model(model).tokenizer_ref).tokenizer.encode_ordinary
    own = {"system": 2, "user": 2, "assistant": 1}  # the control tokens around each text
    want = [own[m["role"]] + len(encode(m["content"])) for m in messages]
    want[0] += 1  # <s>
    assert [(m.role, m.tokens) for m in counted.messages] == [
        (m["role"], n) for m, n in zip(messages, want, strict=True)
    ]
    assert counted.tools_tokens == 0 and counted.overhead == {"preamble": 0, "generation_prompt": 0}
    assert sum(want) == counted.input_tokens
