"""Mistral's instruct formats v3 and v7, as mistral-common 1.13.1's `encode_chat_completion` builds
them from an OpenAI-style request (its validator in test mode, its normalizer, its tokenizer).

Checked first, refused as mistral-common refuses (`ChatFormatError`, naming the message): no
message; a single message that is not a user or system message; a last message that is an
assistant's, unless it is continued (`add_generation_prompt: false`, mistral-common's
`continue_final_message`); a role after one it may not follow (tool after system or user, system
after assistant or tool); an assistant message while earlier tool calls wait for results, or more
results than calls; tool call ids that are not 9 letters or digits once cut to their last 9
characters (as vLLM, serving these models, cuts OpenAI's `call_...` ids first); function names
beyond `[a-zA-Z0-9_-]{1,64}`; in v3, an assistant message with both text and tool calls, or with
neither (v7 takes both, and refuses neither); reasoning content (v3 and v7 have no thinking).

Then normalized: `developer` is `system`; a content of text parts is one text (`join_parts`: by
a blank line, empty parts left out); consecutive messages of one role are one message (texts
joined by a blank line, empty ones left out; tool results stay apart); v3 joins every system text
into the system prompt, put before the last user message's text; v7 keeps each system message in
place between [SYSTEM_PROMPT] and [/SYSTEM_PROMPT]; v3 starts with an empty user message when the
first is not a user's. Encoded: <s>, then per message: a user's `[INST]text[/INST]`, the tools'
JSON between [AVAILABLE_TOOLS] and [/AVAILABLE_TOOLS] before the last user message; an assistant's
text (trailing spaces cut), its calls after [TOOL_CALLS] as a JSON list of {name, arguments, id},
then </s> unless continued; a tool result as [TOOL_RESULTS]{"content", "call_id"}[/TOOL_RESULTS]
(v3, content parsed as JSON where it is) or [TOOL_RESULTS]id[TOOL_CONTENT]text[/TOOL_RESULTS] (v7).
`render` returns segments of (text, is_special); each text is encoded on its own, as
mistral-common does (so a SentencePiece model puts its `▁` in front of each), and a special-token
literal typed in a text is ordinary text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NoReturn

from service.errors import ChatFormatError
from service.store.formats.model import MistralChat

Segments = list[tuple[str, bool]]  # (text, True: one special token literal)

# mistral-common's own patterns, matched with re.match as it does
_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_CALL_ID = re.compile(r"^[a-zA-Z0-9]{9}$")
_FOLLOWS = {  # the roles that may follow each role
    "system": {"user", "assistant", "system"},
    "user": {"assistant", "system", "user"},
    "assistant": {"assistant", "user", "tool"},
    "tool": {"assistant", "tool", "user"},
}
_JOIN = "\n\n"


@dataclass(slots=True)
class _Turn:
    """A message after mistral-common's normalization; `index`: the (last) message it came from."""

    role: str
    index: int
    content: str = ""
    calls: list[dict[str, Any]] = field(default_factory=list)
    call_id: str = ""
    source: object = None  # a tool result's message
    prefix: bool = False


def join_parts(texts: list[str]) -> str:
    """A content given as text parts, as mistral-common joins its text chunks: by a blank line,
    empty ones left out."""
    return _JOIN.join(text for text in texts if text)


def render(
    fmt: MistralChat,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    add_generation_prompt: bool,
    *,
    partial: bool = False,
    texts: dict[tuple[object, ...], tuple[object, str]] | None = None,
) -> Segments:
    """`partial`: the messages are a prefix of a conversation (for a per-message breakdown): a
    last assistant message is closed by its </s>, as more messages follow. `texts`: the JSON
    texts made, by the identity of what they were made of, kept by a caller that renders the
    same messages again while they live (every prefix of a conversation, for a breakdown)."""
    name = f"Mistral's {fmt.instruct_version} format"
    msgs = [_cut_ids({**m, "role": "system"} if m["role"] == "developer" else m) for m in messages]
    last_assistant = bool(msgs) and msgs[-1]["role"] == "assistant"
    continued = not add_generation_prompt and last_assistant and not partial
    _check(fmt, name, msgs, tools or [], continued or partial)
    turns, system_prompt = _normalize(fmt, msgs, continued)
    return _encode(fmt, name, turns, system_prompt, tools, texts={} if texts is None else texts)


def _cut_ids(message: dict[str, Any]) -> dict[str, Any]:
    """The message with its tool call ids cut to their last 9 characters, as vLLM does before it
    hands an OpenAI request to mistral-common (`truncate_tool_call_ids`): OpenAI's `call_...` ids
    are what Mistral's servers bill as their last 9."""
    calls = message.get("tool_calls")
    if calls and any(len(c.get("id") or "") > 9 for c in calls):
        message = {
            **message,
            "tool_calls": [
                {**c, "id": c["id"][-9:]} if len(c.get("id") or "") > 9 else c for c in calls
            ],
        }
    call_id = message.get("tool_call_id")
    if isinstance(call_id, str) and len(call_id) > 9:
        message = {**message, "tool_call_id": call_id[-9:]}
    return message


def _check(
    fmt: MistralChat,
    name: str,
    msgs: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    assistant_last: bool,
) -> None:
    """`assistant_last`: an assistant message may be last (continued, or a prefix)."""

    def refuse(index: int | None, reason: str) -> NoReturn:
        raise ChatFormatError(name, index, reason)

    for i, tool in enumerate(tools):
        if not _NAME.match(tool["function"]["name"]):
            refuse(None, f"tools[{i}].function.name must be 1 to 64 of a-z, A-Z, 0-9, _ and -")
    n = len(msgs)
    if n == 0:
        refuse(None, "a conversation needs at least one message")
    if n == 1 and msgs[0]["role"] not in ("user", "system"):
        refuse(0, "a conversation of one message must be a user or system message")
    if n > 1 and msgs[-1]["role"] == "assistant" and not assistant_last:
        refuse(
            n - 1,
            "the last message must be a user or tool message (an assistant message "
            "last is continued only with add_generation_prompt false)",
        )
    waiting = 0  # tool calls not yet answered (mistral-common skips the first message)
    for i in range(1, n):
        role, previous = msgs[i]["role"], msgs[i - 1]["role"]
        if role not in _FOLLOWS[previous]:
            refuse(i, f"a {role} message cannot follow a {previous} message")
        if role == "tool":
            waiting -= 1
        elif role == "assistant":
            if waiting != 0:
                refuse(i, "not the same number of tool calls and tool results before it")
            waiting = len(msgs[i].get("tool_calls") or [])
    for i, m in enumerate(msgs):
        if m["role"] == "assistant":
            calls = m.get("tool_calls") or []
            if fmt.instruct_version == "v3" and bool(m["content"]) == bool(calls):
                refuse(i, "an assistant message needs text or tool calls, not both (v3)")
            if m.get("reasoning_content"):
                refuse(i, "reasoning_content: this format has no reasoning")
            for j, call in enumerate(calls):
                if not _CALL_ID.match(call.get("id") or "null"):
                    refuse(i, f"tool_calls[{j}].id must be 9 of a-z, A-Z and 0-9")
                if not _NAME.match(call["function"]["name"]):
                    refuse(
                        i,
                        f"tool_calls[{j}].function.name must be 1 to 64 of a-z, A-Z, 0-9, _ and -",
                    )
        elif m["role"] == "tool":
            if m.get("name") is not None and not _NAME.match(m["name"]):
                refuse(i, "name must be 1 to 64 of a-z, A-Z, 0-9, _ and -")
            if not _CALL_ID.match(m.get("tool_call_id") or ""):
                refuse(i, "tool_call_id must be 9 of a-z, A-Z and 0-9")


def _normalize(
    fmt: MistralChat, msgs: list[dict[str, Any]], continued: bool
) -> tuple[list[_Turn], str | None]:
    """mistral-common's InstructRequestNormalizer (v3) or InstructRequestNormalizerV7."""
    v3 = fmt.instruct_version == "v3"
    system_prompt = None
    if v3:
        system_prompt = (
            _JOIN.join(m["content"] for m in msgs if m["role"] == "system" and m["content"]) or None
        )
    turns: list[_Turn] = []
    start = 0
    for i in range(1, len(msgs) + 1):
        if i < len(msgs) and msgs[i]["role"] == msgs[start]["role"]:
            continue
        group, role, last = msgs[start:i], msgs[start]["role"], i - 1
        if role == "tool":
            turns += [
                _Turn("tool", k, m["content"], call_id=m["tool_call_id"], source=m)
                for k, m in enumerate(group, start)
            ]
        elif role == "system" and not v3:
            turns += [_Turn("system", start + k, m["content"]) for k, m in enumerate(group)]
        elif role in ("user", "assistant"):
            text = _JOIN.join(m["content"] for m in group if m["content"])
            calls = [c for m in group for c in m.get("tool_calls") or []]
            prefix = continued and i == len(msgs)
            turns.append(_Turn(role, last, text, calls, prefix=prefix))
        start = i
    if not turns or (v3 and turns[0].role != "user"):
        turns.insert(0, _Turn("user", 0))
    return turns, system_prompt


def _json_or_text(fmt: MistralChat, index: int, content: str) -> Any:
    """v3 reads a tool result that is JSON as JSON ("" as {}), any other text as it is."""
    if not content:
        return {}
    try:
        return json.loads(content)
    except ValueError:
        return content
    except RecursionError:
        raise ChatFormatError(
            f"Mistral's {fmt.instruct_version} format", index, "content: JSON nested too deeply"
        ) from None


def _encode(
    fmt: MistralChat,
    name: str,
    turns: list[_Turn],
    system_prompt: str | None,
    tools: list[dict[str, Any]] | None,
    *,
    texts: dict[tuple[object, ...], tuple[object, str]],
) -> Segments:
    def once(anchor: object, key: tuple[object, ...], make: Callable[..., str], *args: Any) -> str:
        # the entry keeps `anchor` (what the ids in `key` are of) alive: no other object takes
        # its id while the memo lives
        if (entry := texts.get(key)) is None:
            entry = texts[key] = (anchor, make(*args))
        return entry[1]

    v3 = fmt.instruct_version == "v3"
    users = [k for k, t in enumerate(turns) if t.role == "user"]
    last_user = users[-1] if users else -1
    out: Segments = [("<s>", True)]
    for k, t in enumerate(turns):
        if t.role == "user":
            if k == last_user and tools:
                tools_json = once(tools, ("tools", id(tools)), _tools_json, tools)
                out += [
                    ("[AVAILABLE_TOOLS]", True),
                    (tools_json, False),
                    ("[/AVAILABLE_TOOLS]", True),
                ]
            text = t.content
            if v3 and k == last_user and system_prompt:
                text = system_prompt + _JOIN + text
            out += [("[INST]", True), (text, False), ("[/INST]", True)]
        elif t.role == "system":
            out += [("[SYSTEM_PROMPT]", True), (t.content, False), ("[/SYSTEM_PROMPT]", True)]
        elif t.role == "tool":
            if v3:
                result = once(t.source, ("result", id(t.source)), _result_json, fmt, t)
                out += [("[TOOL_RESULTS]", True), (result, False), ("[/TOOL_RESULTS]", True)]
            else:
                out += [
                    ("[TOOL_RESULTS]", True),
                    (t.call_id, False),
                    ("[TOOL_CONTENT]", True),
                    (t.content, False),
                    ("[/TOOL_RESULTS]", True),
                ]
        else:
            if not t.content and not t.calls:
                raise ChatFormatError(
                    name, t.index, "an assistant message needs text or tool calls"
                )
            if v3 and t.content and t.calls:
                raise ChatFormatError(
                    name,
                    t.index,
                    "consecutive assistant messages with text and "
                    "with tool calls become one with both (v3)",
                )
            if t.content:
                out.append((t.content.rstrip(" "), False))
            if t.calls:
                calls = once(t.calls, ("calls", *map(id, t.calls)), _calls_json, t.calls)
                out += [("[TOOL_CALLS]", True), (calls, False)]
            if not t.prefix:
                out.append(("</s>", True))
    return out


def _result_json(fmt: MistralChat, turn: _Turn) -> str:
    result = {"content": _json_or_text(fmt, turn.index, turn.content), "call_id": turn.call_id}
    return json.dumps(result, ensure_ascii=False)


def _calls_json(calls: list[dict[str, Any]]) -> str:
    return json.dumps(
        [
            {"name": c["function"]["name"], "arguments": c["function"]["arguments"], "id": c["id"]}
            for c in calls
        ],
        ensure_ascii=False,
    )


def _tools_json(tools: list[dict[str, Any]]) -> str:
    """mistral-common's Tool.from_openai, then model_dump without `strict`."""
    dumped = []
    for tool in tools:
        fn = tool["function"]
        description = fn.get("description")
        parameters = fn.get("parameters")
        dumped.append(
            {
                "type": "function",
                "function": {
                    "name": fn["name"],
                    "description": "" if description is None else description,
                    "parameters": {} if parameters is None else parameters,
                },
            }
        )
    return json.dumps(dumped, ensure_ascii=False)
