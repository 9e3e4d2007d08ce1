"""The per-message breakdown costs about one rendering (harmony's in one pass, issue 23; a
template's prefixes derived from one tracked rendering, issue 21); it must equal rendering and
encoding every prefix alone."""

from __future__ import annotations

import os
import random
from typing import Any

import jinja2
import jinja2.sandbox
import pytest

from service.bpe.deadline import Deadline
from service.bpe.pipeline.pipeline import StretchMemo
from service.errors import LimitExceededError
from service.models import counting
from service.models.breakdown import prefix_counts
from service.models.chat import harmony, jinja
from service.models.conversation import check_messages, check_tools
from service.store.formats.model import HarmonyChat, JinjaChat
from service.store.registry import LoadedTokenizer, Registry
from tests.support.chatgen import LITERALS, WORDS, conversation

N_CONVERSATIONS = int(os.environ.get("TOKSVC_ORACLE_CONVERSATIONS", "150")) // 3

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
def test_harmony_breakdown_equals_rendering_every_prefix(registry: Registry, tools: Any) -> None:
    model = registry.resolve_model("gpt-oss")
    tok = registry.resolve(model.tokenizer_ref)
    chat = model.profile.chat
    assert isinstance(chat, HarmonyChat)

    def rendered(msgs: list[dict[str, Any]]) -> int:  # the reference: each prefix from scratch
        return sum(
            1 if special else len(tok.tokenizer.encode_ordinary(text))
            for text, special in harmony.render(chat, msgs, tools, False, max_chars=1 << 25)
        )

    expected = [rendered(CONVERSATION[:k]) for k in range(len(CONVERSATION) + 1)]
    got = prefix_counts.harmony(chat, tok, CONVERSATION, tools, Deadline())
    assert got == expected


def test_a_template_breakdown_too_large_to_render_is_refused(registry: Registry) -> None:
    model = registry.resolve_model("qwen2.5")
    tok = registry.resolve(model.tokenizer_ref)
    many = [{"role": "user", "content": "x"}] * 1000  # ~30 KB rendered, 1000 times over
    with pytest.raises(LimitExceededError):
        counting.count_chat(model, tok, many, None)
    total = counting.count_chat(model, tok, many, None, breakdown=False)
    assert total.input_tokens > 5000


@pytest.mark.parametrize(
    ("model", "system"), [("mistral-large-2411", True), ("mistral-nemo", False)]
)
def test_a_mistral_breakdown_gives_each_message_its_own_tokens(
    registry: Registry, model: str, system: bool
) -> None:
    """Each message's figure is its own tokens, counted apart from the format: <s> with the first
    message; [SYSTEM_PROMPT]text[/SYSTEM_PROMPT] (v7), [INST]text[/INST], an assistant's text and
    its </s> (counted with the assistant, though a prefix ending there is open)."""
    from service.models.billing import count_conversation  # noqa: PLC0415

    messages = [
        {"role": "user", "content": "Hi 你好 [INST]"},
        {"role": "assistant", "content": "Hello 🎉"},
        {"role": "user", "content": "Thanks"},
    ]
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


def reference_prefixes(
    template: jinja2.Template,
    tok: LoadedTokenizer,
    variables: dict[str, Any],
    messages: list[dict[str, Any]],
) -> list[int | None]:
    """The prefix method from scratch: each prefix rendered in jinja2's own sandbox and encoded
    alone (None: the template refuses that prefix)."""
    counts: list[int | None] = []
    for k in range(len(messages) + 1):
        try:
            text = template.render(**variables, messages=messages[:k])
        except (jinja2.TemplateError, TypeError, ValueError, AttributeError, KeyError, IndexError):
            counts.append(None)
            continue
        counts.append(len(tok.tokenizer.encode(text, allowed_special="all")))
    return counts


def jinja_models(registry: Registry) -> list[str]:
    return sorted(
        model.profile.name
        for model in registry.models.models.values()
        if isinstance(model.profile.chat, JinjaChat)
    )


def test_every_template_breakdown_equals_the_prefix_method(registry: Registry) -> None:
    """Random conversations (tools, tool calls, reasoning, CJK, emoji, special literals), every
    bundled Jinja model: the breakdown's prefix counts (derived renderings where chat_prefixes
    proves them, the rest rendered; one memo) are the reference's."""
    names = jinja_models(registry)
    assert {"qwen2.5", "qwen3", "deepseek-v3"} <= set(names)
    for name in names:
        model = registry.resolve_model(name)
        tok = registry.resolve(model.tokenizer_ref)
        chat = model.profile.chat
        assert isinstance(chat, JinjaChat)
        reference = jinja.environment(jinja2.sandbox.ImmutableSandboxedEnvironment)
        template = reference.from_string(chat.template)
        rng = random.Random(f"breakdown-{name}")
        for _ in range(N_CONVERSATIONS):
            messages, tools = conversation(rng)
            messages = check_messages(messages)
            tools = check_tools(tools)
            kwargs = {"enable_thinking": rng.random() < 0.5}
            memo: StretchMemo = {}
            render = counting._renderer(chat, tok, kwargs, 1 << 24, Deadline(), memo=memo)
            variables = {
                "bos_token": chat.bos_token or "",
                "eos_token": chat.eos_token or "",
                **kwargs,
                "tools": tools,
                "add_generation_prompt": False,
            }
            expected = reference_prefixes(template, tok, variables, messages)
            got = prefix_counts.template(
                chat,
                tok,
                messages,
                tools,
                kwargs=kwargs,
                max_chars=1 << 24,
                deadline=Deadline(),
                memo=memo,
                render=render,
            )
            assert got == expected, messages


@pytest.mark.parametrize("name", ["qwen2.5", "deepseek-v3", "gpt-oss"])
def test_a_memo_encodes_as_no_memo(registry: Registry, name: str) -> None:
    """Texts that share most of their stretches, encoded with one memo: each as alone."""
    tok = registry.resolve(registry.resolve_model(name).tokenizer_ref).tokenizer
    rng = random.Random(f"memo-{name}")
    memo: StretchMemo = {}
    ordinary: StretchMemo = {}  # one memo per special-token policy
    for _ in range(200):
        pieces = [rng.choice([*WORDS, *LITERALS]) for _ in range(rng.randint(0, 12))]
        text = "".join(pieces) if rng.random() < 0.5 else " ".join(pieces)
        assert tok.encode(text, allowed_special="all", memo=memo) == tok.encode(
            text, allowed_special="all"
        )
        assert tok.encode_ordinary(text, memo=ordinary) == tok.encode_ordinary(text)
