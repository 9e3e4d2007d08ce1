"""Counting a conversation as a model bills it: the total, and where the tokens come from.

Exact formats (Jinja templates, harmony) render the whole conversation and encode it with the
model's tokenizer. A Jinja template's output is encoded with every special-token literal matched
anywhere, as transformers and vLLM do (so `<|im_end|>` typed inside a user message counts as one
special token, which is what such a server feeds the model). The per-message figures are
marginal: message i's figure is what rendering messages[:i+1] adds to rendering messages[:i].
A template may rewrite earlier turns (Qwen3 drops old reasoning), so a figure can be negative;
where a template refuses a prefix, that message's tokens are counted with the next one
(`merged_with_next`). Tools are what adding the tools adds. Everything adds up to the total:
`preamble + tools + sum(messages) + generation_prompt == input_tokens`. `breakdown=False` renders
once and gives the total only (what `estimate` needs).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from service.errors import LimitExceededError, TemplateError
from service.models import estimate_rule, harmony, jinja_chat
from service.store.modelfile import HarmonyChat, JinjaChat, OpenAIEstimateChat
from service.store.modelstore import LoadedModel
from service.store.registry import LoadedTokenizer

Render = Callable[[list[dict[str, Any]], list[dict[str, Any]] | None, bool], tuple[str, list[int]]]


@dataclass(frozen=True, slots=True)
class MessageCount:
    role: str
    tokens: int
    merged_with_next: bool = False


@dataclass(slots=True)
class ChatCount:
    input_tokens: int
    messages: list[MessageCount]
    tools_tokens: int
    overhead: dict[str, int]
    exact: bool
    method: str
    template_sha256: str | None = None
    text: str | None = None
    ids: list[int] | None = field(default=None)


def count_chat(
    model: LoadedModel,
    tok: LoadedTokenizer,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    *,
    add_generation_prompt: bool = True,
    template_kwargs: dict[str, Any] | None = None,
    max_chars: int = 32 * 1024 * 1024,
    max_seconds: float = 10.0,
    breakdown: bool = True,
) -> ChatCount:
    """`max_chars` bounds each rendering, `max_seconds` all of them (the breakdown renders every
    prefix of the conversation): beyond either, LimitExceededError."""
    chat = model.profile.chat
    if isinstance(chat, OpenAIEstimateChat):
        return _estimate(chat, tok, messages, tools, add_generation_prompt)
    render = _renderer(chat, tok, template_kwargs or {}, max_chars, max_seconds)
    text, ids = render(messages, tools, add_generation_prompt)
    total = len(ids)
    sha = (
        hashlib.sha256(chat.template.encode()).hexdigest() if isinstance(chat, JinjaChat) else None
    )
    method = "jinja-template" if isinstance(chat, JinjaChat) else "harmony"
    if not breakdown:  # the total only: one rendering
        return ChatCount(total, [], 0, {"unattributed": total}, True, method, sha, text, ids)
    counts: list[int | None] = []  # tokens of messages[:k] rendered, k = 0..n (None: refused)
    for k in range(len(messages) + 1):
        try:
            counts.append(len(render(messages[:k], tools, False)[1]))
        except TemplateError:
            if k == len(messages):
                raise
            counts.append(None)
    first = next(k for k, c in enumerate(counts) if c is not None)
    tools_tokens = 0
    if tools:
        try:
            tools_tokens = (counts[first] or 0) - len(render(messages[:first], None, False)[1])
        except TemplateError:
            tools_tokens = 0
    per: list[MessageCount] = []
    previous = first
    for i, m in enumerate(messages):
        c = counts[i + 1]
        if i + 1 < first or c is None:
            per.append(MessageCount(m["role"], 0, merged_with_next=True))
        elif i + 1 == first:  # the first prefix the template renders (tools are apart)
            per.append(MessageCount(m["role"], c - tools_tokens))
        else:
            per.append(MessageCount(m["role"], c - (counts[previous] or 0)))
            previous = i + 1
    preamble = (counts[0] or 0) - tools_tokens if first == 0 else 0
    overhead = {"preamble": preamble, "generation_prompt": total - (counts[-1] or 0)}
    sha = (
        hashlib.sha256(chat.template.encode()).hexdigest() if isinstance(chat, JinjaChat) else None
    )
    method = "jinja-template" if isinstance(chat, JinjaChat) else "harmony"
    return ChatCount(total, per, tools_tokens, overhead, True, method, sha, text, ids)


def _renderer(
    chat: JinjaChat | HarmonyChat,
    tok: LoadedTokenizer,
    kwargs: dict[str, Any],
    max_chars: int,
    max_seconds: float,
) -> Render:
    tokenizer = tok.tokenizer
    deadline = time.monotonic() + max_seconds

    def seconds_left() -> float:
        left = deadline - time.monotonic()
        if left <= 0:
            raise LimitExceededError("chat counting time (ms)", int(max_seconds * 1000))
        return left

    if isinstance(chat, JinjaChat):
        specials = {"bos_token": chat.bos_token or "", "eos_token": chat.eos_token or ""}

        def render_jinja(
            msgs: list[dict[str, Any]], tools: list[dict[str, Any]] | None, agp: bool
        ) -> tuple[str, list[int]]:
            variables = {**specials, **kwargs, "messages": msgs, "tools": tools,
                         "add_generation_prompt": agp}  # fmt: skip
            text = jinja_chat.render(
                chat.template, variables, max_chars=max_chars, max_seconds=seconds_left()
            )
            return text, tokenizer.encode(text, allowed_special="all")

        return render_jinja

    def render_harmony(
        msgs: list[dict[str, Any]], tools: list[dict[str, Any]] | None, agp: bool
    ) -> tuple[str, list[int]]:
        seconds_left()
        ids: list[int] = []
        parts: list[str] = []
        for segment, special in harmony.render(chat, msgs, tools, agp):
            parts.append(segment)
            if special:
                ids.append(tokenizer.special_tokens[segment])
            else:
                ids += tokenizer.encode_ordinary(segment)
        return "".join(parts), ids

    return render_harmony


def _estimate(
    rule: OpenAIEstimateChat,
    tok: LoadedTokenizer,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    add_generation_prompt: bool,
) -> ChatCount:
    def count(text: str) -> int:
        return tok.tokenizer.count(text, disallowed_special=frozenset())

    per = [MessageCount(m["role"], estimate_rule.message_tokens(rule, m, count)) for m in messages]
    tools_tokens = estimate_rule.tools_tokens(rule, tools or [], count)
    priming = rule.reply_priming if add_generation_prompt else 0
    total = sum(m.tokens for m in per) + tools_tokens + priming
    overhead = {"preamble": 0, "generation_prompt": priming}
    return ChatCount(total, per, tools_tokens, overhead, False, "openai-estimate")
