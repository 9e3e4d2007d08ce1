"""OpenAI's harmony format (gpt-oss), rendered as text whose structure tokens are special.

The mapping from chat messages is the one the gpt-oss chat template and vLLM use: a default
system message (identity, knowledge cutoff, reasoning effort, valid channels); the `system` and
`developer` roles' content as the developer message's instructions; tools as developer functions
(`namespace functions`, a TypeScript-like signature per tool); earlier assistant turns as
`final`-channel messages; assistant tool calls to `functions.NAME` on the commentary channel;
tool results from `functions.NAME` to the assistant; the prompt ends in `<|start|>assistant`.
Message text is ordinary text (a special-token literal typed in it is not special): `render`
returns segments of (text, is_special) so the caller encodes each correctly.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from service.errors import ChatInputError, LimitExceededError
from service.models.conversation import message_text
from service.store.formats.model import HarmonyChat

Segments = list[tuple[str, bool]]  # (text, True: one special token literal)
TOOLS_TEXT = "characters of the rendered tool definitions"


def render(
    fmt: HarmonyChat,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    add_generation_prompt: bool,
    *,
    max_chars: int,
) -> Segments:
    """`max_chars` bounds the rendering of the tools (their schemas are indented at each level
    of nesting, so their text can be many times the request's size): LimitExceededError."""
    out = preamble(fmt, messages, tools, max_chars=max_chars)
    for _, segments in turns(messages):
        out += segments
    if add_generation_prompt:
        out += [("<|start|>", True), ("assistant", False)]
    return out


def preamble(
    fmt: HarmonyChat,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    *,
    max_chars: int,
) -> Segments:
    """The system message and the developer message (the instructions of every system and
    developer message, and the tools): what comes before the turns."""
    out: Segments = []
    system = (
        f"{fmt.model_identity}\nKnowledge cutoff: {fmt.knowledge_cutoff}\n\n"
        f"Reasoning: {fmt.reasoning_effort}\n\n"
        "# Valid channels: analysis, commentary, final. Channel must be included for every message."
    )
    if tools:
        system += "\nCalls to these tools must go to the commentary channel: 'functions'."
    _message(out, "system", system)
    instructions = "\n".join(
        message_text(m) for m in messages if m["role"] in ("system", "developer")
    )
    developer = ""
    if instructions:
        developer = f"# Instructions\n\n{instructions}"
    if tools:
        developer += ("\n\n" if developer else "") + _tools_text(tools, max_chars)
    if developer:
        _message(out, "developer", developer)
    return out


def turns(messages: list[dict[str, Any]]) -> Iterator[tuple[int, Segments]]:
    """Each message's own segments, by index (none for system and developer messages, which are
    in the preamble). A turn depends on the messages before it only (a tool's name), so the
    turns of a prefix of the conversation are a prefix of its turns."""
    names: dict[str, str] = {}  # tool_call_id -> function name
    last_call = ""
    for i, m in enumerate(messages):
        out: Segments = []
        role = m["role"]
        if role in ("system", "developer"):
            pass
        elif role == "user":
            _message(out, "user", message_text(m))
        elif role == "assistant":
            if text := message_text(m):
                _message(out, "assistant", text, channel="final")
            for call in m.get("tool_calls", []):
                fn = call["function"]
                last_call = fn["name"]
                if call.get("id"):
                    names[call["id"]] = last_call
                args = json.dumps(fn["arguments"], ensure_ascii=False, separators=(",", ":"))
                out += [
                    ("<|start|>", True),
                    (f"assistant to=functions.{last_call}", False),
                    ("<|channel|>", True),
                    ("commentary ", False),
                    ("<|constrain|>", True),
                    ("json", False),
                    ("<|message|>", True),
                    (args, False),
                    ("<|call|>", True),
                ]
        else:  # tool
            name = names.get(m.get("tool_call_id") or "", m.get("name") or last_call)
            if not name:
                raise ChatInputError(i, "tool_call_id", "names no earlier tool call")
            author = f"functions.{name} to=assistant"
            _message(out, author, message_text(m), channel="commentary")
        yield i, out


def _message(out: Segments, header: str, text: str, channel: str | None = None) -> None:
    out += [("<|start|>", True), (header, False)]
    if channel is not None:
        out += [("<|channel|>", True), (channel, False)]
    out += [("<|message|>", True), (text, False), ("<|end|>", True)]


class _Lines(list[str]):
    """Lines that keep count of their characters and refuse to pass `max_chars`."""

    def __init__(self, max_chars: int) -> None:
        super().__init__()
        self.max_chars, self.chars = max_chars, 0

    def append(self, line: str) -> None:
        self.chars += len(line) + 1
        if self.chars > self.max_chars:
            raise LimitExceededError(TOOLS_TEXT, self.max_chars, self.chars)
        super().append(line)


def _tools_text(tools: list[dict[str, Any]], max_chars: int) -> str:
    lines = _Lines(max_chars)
    for line in ("# Tools", "", "## functions", "", "namespace functions {", ""):
        lines.append(line)
    for tool in tools:
        fn = tool["function"]
        if fn.get("description"):
            lines.append(f"// {fn['description']}")
        params = fn.get("parameters") or {}
        if isinstance(params.get("properties"), dict):
            lines.append(f"type {fn['name']} = (_: {{")
            _properties(params, "", lines)
            lines.append("}) => any;")
        else:
            lines.append(f"type {fn['name']} = () => any;")
        lines.append("")
    lines.append("} // namespace functions")
    return "\n".join(lines)


# A tool's parameters are a JSON Schema the client wrote; what is not the shape the format
# expects (`properties` not an object, `enum` not a list, `items` not a schema, `required` not a
# list of names) renders as `any` or is left out: a count, not a schema validator.


def _properties(schema: dict[str, Any], indent: str, lines: _Lines) -> None:
    required = schema.get("required")
    names = {r for r in required if isinstance(r, str)} if isinstance(required, list) else set()
    for key, value in schema["properties"].items():
        prop = value if isinstance(value, dict) else {}
        if prop.get("description"):
            lines.append(f"{indent}// {prop['description']}")
        mark = "" if key in names else "?"
        default = f" // default: {json.dumps(prop['default'])}" if "default" in prop else ""
        if prop.get("type") == "object" and isinstance(prop.get("properties"), dict):
            lines.append(f"{indent}{key}{mark}: {{")
            _properties(prop, indent + "    ", lines)
            lines.append(f"{indent}    }},{default}")
        else:
            lines.append(f"{indent}{key}{mark}: {_type(prop)},{default}")


def _type(prop: object) -> str:
    if not isinstance(prop, dict):
        return "any"
    if isinstance(prop.get("enum"), list):
        return " | ".join(json.dumps(v, ensure_ascii=False) for v in prop["enum"])
    kind = prop.get("type")
    if kind == "array":
        return f"{_type(prop.get('items'))}[]"
    if kind in ("integer", "number"):
        return "number"
    if kind in ("string", "boolean", "null"):
        return str(kind)
    return "any"
