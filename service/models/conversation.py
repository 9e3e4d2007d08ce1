"""OpenAI-style chat messages and tool definitions: checked, then handed to a chat format as dicts.

What a template sees is what vLLM hands it: content given as a list of text parts is joined with
newlines, content that is null or left out is "", and a tool call's `arguments` given as a JSON
string is parsed into an object. Image parts are taken out before (`service.models.images.parts`
counts them by the model's rule). Every problem names the message index and the field.

Every renderer (Jinja's `tojson`, harmony's schema walk, the estimate rule's JSON) recurses over
what it is given, so nothing may nest deeper than `MAX_NESTING` lists and objects
(`check_nesting`, run as the body is decoded; a string of `arguments` when it is parsed): a
thousand levels raised RecursionError.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Literal, cast

import msgspec
from msgspec import Struct

from service.errors import ChatInputError

Role = Literal["system", "developer", "user", "assistant", "tool"]
MAX_NESTING = 64  # lists and objects inside one another in a message, a tool or template kwargs


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


def check_messages(
    raw: list[Any], join_parts: Callable[[list[str]], str] = "\n".join
) -> list[dict[str, Any]]:
    """The messages as plain dicts, checked; a problem raises ChatInputError naming the field.
    `join_parts` makes one text of a content given as text parts (vLLM's: newlines)."""
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
            as_dict["content"] = join_parts([part.text for part in message.content])
        for j, call in enumerate(message.tool_calls or []):
            if isinstance(call.function.arguments, str):
                field = f"tool_calls[{j}].function.arguments"
                arguments = parse_arguments(call.function.arguments, i, field)
                as_dict["tool_calls"][j]["function"]["arguments"] = arguments
        out.append(as_dict)
    return out


def parse_arguments(text: str, i: int, field: str) -> dict[str, Any]:
    """A tool call's `arguments` string as the JSON object it holds, nested no deeper than the
    same object given inline (messages, message, tool_calls, call and function are the 5 levels
    above it); ChatInputError naming `field` otherwise."""
    try:
        arguments = json.loads(text)
    except ValueError as exc:
        raise ChatInputError(i, field, f"is not JSON: {exc}") from None
    except RecursionError:
        raise ChatInputError(i, field, _too_deep(MAX_NESTING)) from None
    if not isinstance(arguments, dict):
        raise ChatInputError(i, field, "must be a JSON object")
    if (at := _too_deep_at(arguments, MAX_NESTING - 5)) is not None:
        raise ChatInputError(i, f"{field}{at}", _too_deep(MAX_NESTING))
    return arguments


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


def check_nesting(
    messages: list[Any] | None, tools: list[Any] | None, kwargs: dict[str, Any] | None
) -> None:
    """Refuse (422 naming the message and the field) lists and objects nested deeper than
    `MAX_NESTING`, before anything recurses over them; an iterative walk, bounded by the size."""
    for name, value in (("messages", messages), ("tools", tools), ("chat_template_kwargs", kwargs)):
        if value is None or (at := _too_deep_at(value, MAX_NESTING)) is None:
            continue
        if name == "messages":
            index, _, rest = at.removeprefix("[").partition("]")
            raise ChatInputError(int(index), rest.lstrip("."), _too_deep(MAX_NESTING))
        raise ChatInputError(None, name + at, _too_deep(MAX_NESTING))


def _too_deep(limit: int) -> str:
    return f"nests lists and objects deeper than {limit} levels"


def _too_deep_at(value: object, limit: int) -> str | None:
    """The path (`[0].content[1].a`) to the first list or object below `limit` levels of
    `value`'s, or None. Depth first, without recursion; only containers are pushed."""
    stack: list[tuple[object, int, str]] = [(value, 1, "")]
    while stack:
        node, depth, path = stack.pop()
        if depth > limit:
            return path
        items = node.items() if isinstance(node, dict) else enumerate(cast(list[Any], node))
        for key, child in items:
            if isinstance(child, (dict, list)):
                step = f"[{key}]" if isinstance(node, list) else f".{key}"
                stack.append((child, depth + 1, path + step))
    return None


def message_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    return content if isinstance(content, str) else ""


def _split(error: str) -> tuple[str, str]:
    """msgspec's "reason - at `$.a.b`" as ("a.b", "reason")."""
    reason, sep, where = error.rpartition(" - at `$")
    if not sep:
        return "message", error
    return where.rstrip("`").lstrip(".") or "message", reason
