"""OpenAI-style chat messages and tool definitions: checked, then handed to a chat format as dicts.

What a template sees is what vLLM hands it: content given as a list of text parts is joined with
newlines, content that is null or left out is "", and a tool call's `arguments` given as a JSON
string is parsed into an object. Image parts are taken out before (`service.models.images`
counts them by the model's rule). Every problem names the message index and the field.
"""

from __future__ import annotations

import json
from typing import Any, Literal

import msgspec
from msgspec import Struct

from service.errors import ChatInputError

Role = Literal["system", "developer", "user", "assistant", "tool"]


class TextPart(Struct, frozen=True, forbid_unknown_fields=True):
    type: Literal["text"]
    text: str


class FunctionCall(Struct, frozen=True, forbid_unknown_fields=True):
    name: str
    arguments: str | dict[str, Any]


class ToolCall(Struct, frozen=True, forbid_unknown_fields=True):
    function: FunctionCall
    id: str | None = None
    type: Literal["function"] = "function"


class Message(Struct, frozen=True, forbid_unknown_fields=True, omit_defaults=True):
    role: Role
    content: str | list[TextPart] | None = None
    name: str | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    reasoning_content: str | None = None


class FunctionDef(Struct, frozen=True, forbid_unknown_fields=True, omit_defaults=True):
    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class Tool(Struct, frozen=True, forbid_unknown_fields=True):
    function: FunctionDef
    type: Literal["function"] = "function"


def check_messages(raw: list[Any]) -> list[dict[str, Any]]:
    """The messages as plain dicts, checked; a problem raises ChatInputError naming the field."""
    out: list[dict[str, Any]] = []
    for i, item in enumerate(raw):
        try:
            message = msgspec.convert(item, type=Message)
        except msgspec.ValidationError as exc:
            field, reason = _split(str(exc))
            raise ChatInputError(i, field, reason) from None
        as_dict: dict[str, Any] = msgspec.to_builtins(message)
        if as_dict.get("content") is None:  # null or left out: "", as vLLM hands it on
            as_dict["content"] = ""
        if isinstance(message.content, list):
            as_dict["content"] = "\n".join(part.text for part in message.content)
        for j, call in enumerate(message.tool_calls or []):
            if isinstance(call.function.arguments, str):
                try:
                    arguments = json.loads(call.function.arguments)
                except ValueError as exc:
                    field = f"tool_calls[{j}].function.arguments"
                    raise ChatInputError(i, field, f"is not JSON: {exc}") from None
                if not isinstance(arguments, dict):
                    field = f"tool_calls[{j}].function.arguments"
                    raise ChatInputError(i, field, "must be a JSON object")
                as_dict["tool_calls"][j]["function"]["arguments"] = arguments
        out.append(as_dict)
    return out


def check_tools(raw: list[Any] | None) -> list[dict[str, Any]] | None:
    if raw is None:
        return None
    out: list[dict[str, Any]] = []
    for i, item in enumerate(raw):
        try:
            msgspec.convert(item, type=Tool)
        except msgspec.ValidationError as exc:
            field, reason = _split(str(exc))
            raise ChatInputError(None, f"tools[{i}].{field}", reason) from None
        out.append(item)
    return out


def message_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    return content if isinstance(content, str) else ""


def _split(error: str) -> tuple[str, str]:
    """msgspec's "reason - at `$.a.b`" as ("a.b", "reason")."""
    reason, sep, where = error.rpartition(" - at `$")
    if not sep:
        return "message", error
    return where.rstrip("`").lstrip(".") or "message", reason
