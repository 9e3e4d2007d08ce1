"""Seeded generator of OpenAI-style conversations for the chat-count oracle tests and benchmark.

Every role, multi-turn, tools and tool calls, tool responses, reasoning content, Chinese, emoji,
empty content and special-token literals typed inside message text (Qwen's, harmony's, DeepSeek's,
Llama 3's, Gemma's, Phi-4's). `alternating` keeps to what templates that refuse other orders take
(Gemma's): an optional system message, then user and assistant turns by turns.
"""

from __future__ import annotations

import json
import random
from typing import Any

WORDS = [
    "hello",
    "world",
    "the",
    "weather",
    "in",
    "Paris",
    "is",
    "nice",
    "today",
    "42",
    "3.14",
    "你好",
    "世界",
    "天气",
    "很好",
    "🎉",
    "👩‍💻",
    "🇫🇷",
    "naïve",
    "café",
    "\n",
    "  ",
    "\t",
    "?",
    "don't",
    'JSON: {"a": 1}',
    "<b>html</b>",
    "x" * 30,
]
LITERALS = [
    "<|im_end|>",
    "<|im_start|>",
    "<tool_call>",
    "</tool_call>",
    "<think>",
    "</think>",
    "<|endoftext|>",
    "<|start|>",
    "<|end|>",
    "<|message|>",
    "<|channel|>",
    "<|eot_id|>",
    "<|start_header_id|>",
    "<|begin_of_text|>",
    "<start_of_turn>",
    "<end_of_turn>",
    "<bos>",
    "<start_of_image>",
    "<|im_sep|>",
    *(
        f"<\uff5c{name}\uff5c>"
        for name in [  # DeepSeek's, between full-width bars
            "end▁of▁sentence",
            "User",
            "Assistant",
            "tool▁call▁begin",
            "begin▁of▁sentence",
        ]
    ),
]

# Mistral's control tokens (v3 tekken and v7 SentencePiece), added to the above for its models
MISTRAL_LITERALS = [
    *LITERALS,
    "[INST]",
    "[/INST]",
    "[TOOL_CALLS]",
    "[AVAILABLE_TOOLS]",
    "[TOOL_RESULTS]",
    "[SYSTEM_PROMPT]",
    "[TOOL_CONTENT]",
    "</s>",
    "<s>",
]

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the current weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "The city, e.g. Paris"},
                    "unit": {
                        "type": "string",
                        "enum": ["celsius", "fahrenheit"],
                        "description": "Unit",
                    },
                    "days": {"type": "integer", "description": "How many days"},
                },
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "search",
            "description": "Search the web",
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "什么 to search"},
                    "tags": {"type": "array", "items": {"type": "string"}, "description": "Tags"},
                    "exact": {"type": "boolean", "description": "Exact match"},
                },
                "required": ["query", "exact"],
            },
        },
    },
    {"type": "function", "function": {"name": "now", "description": "The time now"}},
]


def text(rng: random.Random, literals: bool | list[str] = True) -> str:
    """`literals`: True for LITERALS, or the list to insert from."""
    if rng.random() < 0.08:
        return ""
    parts = [rng.choice(WORDS) for _ in range(rng.randint(1, 12))]
    if literals and rng.random() < 0.25:
        choices = LITERALS if literals is True else literals
        parts.insert(rng.randint(0, len(parts)), rng.choice(choices))
    return " ".join(parts) if rng.random() < 0.7 else "".join(parts)


def conversation(
    rng: random.Random,
    *,
    reasoning: bool = True,
    literals: bool | list[str] = True,
    call_id: str = "call_{}",
) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
    """`literals` as for `text`; `call_id`: the tool call ids' format (Mistral's formats take 9
    letters or digits only)."""
    messages: list[dict[str, Any]] = []
    if rng.random() < 0.6:
        messages.append({"role": "system", "content": text(rng, literals)})
    n_calls = 0
    for _ in range(rng.randint(1, 4)):
        messages.append({"role": "user", "content": text(rng, literals) or "hi"})
        if rng.random() < 0.4:
            calls = []
            for _ in range(rng.randint(1, 2)):
                n_calls += 1
                args = {"city": rng.choice(WORDS), "days": rng.randint(1, 9)}
                arguments = json.dumps(args, ensure_ascii=False)
                function = {"name": "get_weather", "arguments": arguments}
                calls.append(
                    {"id": call_id.format(n_calls), "type": "function", "function": function}
                )
            messages.append({"role": "assistant", "content": "", "tool_calls": calls})
            for call in calls:
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": call["id"],
                        "content": json.dumps({"temp": rng.randint(-5, 30)}),
                    }
                )
        if rng.random() < 0.85:
            reply: dict[str, Any] = {"role": "assistant", "content": text(rng, literals)}
            if reasoning and rng.random() < 0.4:
                reply["reasoning_content"] = text(rng, False)
            messages.append(reply)
    tools = rng.sample(TOOLS, rng.randint(1, len(TOOLS))) if rng.random() < 0.5 else None
    return messages, tools


def alternating(
    rng: random.Random,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
    """A system message or not, then user, assistant, user, ...: an assistant turn is a tool
    call (content "") or text; tools are offered at random (such templates ignore them)."""
    messages, tools = conversation(rng)
    out = [m for m in messages[:1] if m["role"] == "system"]
    turns = [m for m in messages if m["role"] in ("user", "assistant")]
    want = "user"
    for m in turns:
        if m["role"] == want:
            out.append(m)
            want = "assistant" if want == "user" else "user"
    return out, tools
