"""The providers' own request shapes, as the OpenAI-style conversation every chat format counts.

Gateways and agents ask the provider's count route (Anthropic's `messages/count_tokens`, OpenAI's
`responses/input_tokens`); this module turns those requests into the messages and tools that
`service.models.billing` counts for a model in the store, so the same conversation gets the same
count whichever shape it arrives in:

- Anthropic: `system` (a string or text blocks) becomes the first message; a message's content
  blocks become its text (`text`), its reasoning (`thinking`), its tool calls (`tool_use`), or,
  for `tool_result` blocks, `tool` messages placed where the results stand.
- OpenAI Responses: `instructions` becomes the first (system) message; `input` is a string (one
  user message) or items: messages with text parts, `function_call` items (attached to the
  assistant message before them, or a new one) and `function_call_output` items (`tool` messages).
  Tools are `{"type": "function", "name", "description", "parameters"}`.

Images (Anthropic `image` blocks, Responses `input_image` parts) are read here, where their
index and field are the request's own, and handed on as OpenAI image parts carrying their size
(`service.models.images.parts`); other media are a ChatInputError naming the block. Every problem
names
the message index and the field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from service.errors import ChatInputError
from service.models.conversation import parse_arguments
from service.models.images import parts as images

Messages = list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class Conversation:
    """OpenAI-style `messages` and `tools` (None when none were offered)."""

    messages: Messages
    tools: list[dict[str, Any]] | None


def from_anthropic(
    system: str | Sequence[Any] | None, messages: Sequence[Any], tools: Sequence[Any] | None
) -> Conversation:
    """Anthropic's Messages request as an OpenAI-style conversation."""
    out: Messages = []
    if system is not None:
        out.append({"role": "system", "content": _anthropic_text(system, None, "system")})
    for i, message in enumerate(messages):
        role, content = _role_and_content(message, i, ("user", "assistant"))
        if isinstance(content, str):
            out.append({"role": role, "content": content})
            continue
        out.extend(_anthropic_blocks(role, content, i))
    return Conversation(out, _anthropic_tools(tools))


def from_responses(
    instructions: str | None, items: str | Sequence[Any], tools: Sequence[Any] | None
) -> Conversation:
    """OpenAI's Responses `input` (with `instructions`) as an OpenAI-style conversation."""
    out: Messages = []
    if instructions is not None:
        out.append({"role": "system", "content": instructions})
    if isinstance(items, str):
        out.append({"role": "user", "content": items})
        return Conversation(out, _responses_tools(tools))
    for i, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise ChatInputError(i, "input", "each input item must be an object")
        kind = item.get("type", "message")
        if kind == "message":
            role, content = _role_and_content(item, i, ("user", "assistant", "system", "developer"))
            text = content if isinstance(content, str) else _parts(content, i, "content")
            out.append({"role": role, "content": text})
        elif kind == "function_call":
            call = _call(
                _field(item, "call_id", str, i),
                _field(item, "name", str, i),
                _arguments(item.get("arguments", "{}"), i, "arguments"),
            )
            last = out[-1] if out else None
            if last is not None and last["role"] == "assistant":
                last.setdefault("tool_calls", []).append(call)
            else:
                out.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            output = item.get("output")
            text = output if isinstance(output, str) else _parts_text(output, i, "output")
            out.append(
                {"role": "tool", "tool_call_id": _field(item, "call_id", str, i), "content": text}
            )
        elif kind == "reasoning":
            raise ChatInputError(
                i,
                "type",
                "reasoning items are not counted: their content is encrypted and how the "
                "Responses API counts them is not published; leave them out of `input`",
            )
        else:
            raise ChatInputError(
                i,
                "type",
                f"input items of type {kind!r} are not counted; "
                "give message, function_call or function_call_output",
            )
    return Conversation(out, _responses_tools(tools))


def _role_and_content(message: Any, i: int, roles: tuple[str, ...]) -> tuple[str, Any]:
    if not isinstance(message, Mapping):
        raise ChatInputError(i, "message", "must be an object")
    role = message.get("role")
    if role not in roles:
        raise ChatInputError(i, "role", f"must be one of {', '.join(roles)}")
    content = message.get("content")
    if not isinstance(content, (str, list)):
        raise ChatInputError(i, "content", "must be a string or a list of content blocks")
    return str(role), content


def _anthropic_blocks(role: str, blocks: Sequence[Any], i: int) -> Messages:
    """One Anthropic message's blocks: `tool` messages for its tool results (in order), then the
    message itself with its text, reasoning and tool calls (left out if it has none)."""
    results: Messages = []
    texts: list[str] = []
    pictures: list[dict[str, Any]] = []
    thinking: list[str] = []
    calls: list[dict[str, Any]] = []
    for j, block in enumerate(blocks):
        kind = block.get("type") if isinstance(block, Mapping) else None
        where = f"content[{j}]"
        if kind == "text":
            texts.append(_field(block, "text", str, i, where))
        elif kind == "image":
            pictures.append(images.anthropic_part(block, i, where))
        elif kind == "thinking":
            thinking.append(_field(block, "thinking", str, i, where))
        elif kind == "redacted_thinking":
            continue  # encrypted reasoning: nothing a template renders
        elif kind == "tool_use":
            arguments = block.get("input", {})
            if not isinstance(arguments, Mapping):
                raise ChatInputError(i, f"{where}.input", "must be an object")
            calls.append(
                _call(
                    _field(block, "id", str, i, where),
                    _field(block, "name", str, i, where),
                    dict(arguments),
                )
            )
        elif kind == "tool_result":
            content = block.get("content", "")
            call_id = _field(block, "tool_use_id", str, i, where)
            text = _anthropic_text(content, i, f"{where}.content")
            results.append({"role": "tool", "content": text, "tool_call_id": call_id})
        else:
            raise ChatInputError(
                i,
                f"{where}.type",
                f"blocks of type {kind!r} are not counted; "
                "give text, image, thinking, tool_use or tool_result",
            )
    if not (texts or pictures or thinking or calls):
        return results
    joined = "\n".join(texts) if texts else None
    message: dict[str, Any] = {"role": role, "content": _with_images(joined, pictures)}
    if thinking:
        message["reasoning_content"] = "\n".join(thinking)
    if calls:
        message["tool_calls"] = calls
    return [*results, message]


def _anthropic_text(content: Any, i: int | None, where: str) -> str:
    """A string, or text blocks joined by newlines (as vLLM joins text parts)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise ChatInputError(i, where, "must be a string or a list of text blocks")
    texts = []
    for j, block in enumerate(content):
        if not isinstance(block, Mapping) or block.get("type") != "text":
            raise ChatInputError(i, f"{where}[{j}]", "only text blocks are counted here")
        texts.append(_field(block, "text", str, i, f"{where}[{j}]"))
    return "\n".join(texts)


def _parts(parts: Any, i: int, where: str) -> str | list[dict[str, Any]]:
    """Responses content parts: the text ones joined by newlines, with the images after them."""
    if not isinstance(parts, list):
        raise ChatInputError(i, where, "must be a string or a list of content parts")
    pictures = []
    texts = []
    for j, part in enumerate(parts):
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind == "input_image":
            pictures.append(images.responses_part(part, i, f"{where}[{j}]"))
            continue
        if kind not in ("input_text", "output_text", "text"):
            raise ChatInputError(
                i,
                f"{where}[{j}].type",
                f"parts of type {kind!r} are not "
                "counted; give input_text, output_text, input_image",
            )
        texts.append(_field(part, "text", str, i, f"{where}[{j}]"))
    return _with_images("\n".join(texts), pictures) or ""


def _parts_text(parts: Any, i: int, where: str) -> str:
    """A function call output's text parts joined by newlines (images are not counted there)."""
    text = _parts(parts, i, where)
    if not isinstance(text, str):
        raise ChatInputError(i, where, "images in a function call output are not counted")
    return text


def _with_images(text: str | None, pictures: list[dict[str, Any]]) -> Any:
    """The content: the text alone, or a text part followed by the sized image parts."""
    if not pictures:
        return text
    return [*([{"type": "text", "text": text}] if text is not None else []), *pictures]


def _anthropic_tools(tools: Sequence[Any] | None) -> list[dict[str, Any]] | None:
    """Custom tools (`type` absent or `custom`) as function tools; a server tool
    (`web_search_20250305`, `bash_20250124`, ...) is a 422: Anthropic's count for it is its own."""
    if tools is None:
        return None
    for k, tool in enumerate(tools):
        kind = tool.get("type", "custom") if isinstance(tool, Mapping) else "custom"
        if kind not in ("custom", None):
            raise ChatInputError(
                None,
                f"tools[{k}].type",
                f"server tools ({kind!r}) are not counted; only custom tools are",
            )
    return [_function(tool, f"tools[{k}]", "input_schema") for k, tool in enumerate(tools)]


def _responses_tools(tools: Sequence[Any] | None) -> list[dict[str, Any]] | None:
    if tools is None:
        return None
    for k, tool in enumerate(tools):
        if not isinstance(tool, Mapping) or tool.get("type") != "function":
            raise ChatInputError(None, f"tools[{k}].type", "only function tools are counted")
    return [_function(tool, f"tools[{k}]", "parameters") for k, tool in enumerate(tools)]


def _function(tool: Any, where: str, schema_key: str) -> dict[str, Any]:
    """An OpenAI-style function tool, its keys in OpenAI's order (templates print them as JSON)."""
    if not isinstance(tool, Mapping):
        raise ChatInputError(None, where, "must be an object")
    function: dict[str, Any] = {"name": _field(tool, "name", str, None, where)}
    if tool.get("description") is not None:
        function["description"] = _field(tool, "description", str, None, where)
    if tool.get(schema_key) is not None:
        function["parameters"] = _schema(tool[schema_key], f"{where}.{schema_key}")
    return {"type": "function", "function": function}


def _schema(schema: Any, where: str) -> dict[str, Any]:
    if not isinstance(schema, Mapping):
        raise ChatInputError(None, where, "must be a JSON Schema object")
    return dict(schema)


def _call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def _arguments(raw: Any, i: int, where: str) -> dict[str, Any]:
    """A function call's arguments: a JSON object, or a string holding one."""
    if isinstance(raw, str):  # its nesting checked as it is parsed (an object's, as decoded)
        return parse_arguments(raw, i, where)
    if not isinstance(raw, dict):
        raise ChatInputError(i, where, "must be a JSON object")
    return raw


def _field(obj: Mapping[str, Any], key: str, kind: type, i: int | None, where: str = "") -> Any:
    value = obj.get(key)
    if not isinstance(value, kind):
        name = f"{where}.{key}" if where else key
        raise ChatInputError(i, name, f"must be a {kind.__name__}")
    return value
