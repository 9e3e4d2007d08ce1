"""Counting a conversation as a model bills it: the total, and where the tokens come from.

Exact formats (Jinja templates, harmony, Mistral's instruct formats) render the whole conversation
and encode it with the model's tokenizer. Harmony and Mistral's formats give their special tokens
apart from the text, which is encoded as ordinary text. A Jinja template's output is encoded
with every special-token literal matched anywhere, as transformers and vLLM do (so `<|im_end|>`
typed inside a user message counts as one special token, which is what such a server feeds the
model). The per-message figures are marginal: message i's figure is what rendering
messages[:i+1] adds to rendering messages[:i]. A template may rewrite earlier turns (Qwen3 drops
old reasoning; Mistral's formats move the tools and, in v3, the system prompt to the last user
message), so a figure can be negative; where a template refuses a prefix, that message's tokens
are counted with the next one (`merged_with_next`). Tools are what adding the tools adds.
Everything adds up to the total: `preamble + tools + sum(messages) + generation_prompt ==
input_tokens`. `breakdown=False` renders once and gives the total only (what `estimate` needs).

The figures are those of rendering every prefix, computed for less: a template's prefix
renderings are derived from one tracked rendering of the whole wherever it proves them
(breakdown/prefix_counts.py, breakdown/prefixes.py), the rest rendered alone; harmony counts
each turn once. All the encodings of one count share a memo of the stretches of ordinary text
already encoded, so the prefixes' text costs about its new stretches, and its renderings
serialize an object once.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from service.bpe.deadline import Deadline
from service.bpe.pipeline.pipeline import StretchMemo
from service.errors import ChatFormatError, LimitExceededError, TemplateError
from service.models.breakdown import prefix_counts
from service.models.breakdown.prefix_counts import BREAKDOWN, BREAKDOWN_CHARS, Render, seconds_left
from service.models.chat import harmony, jinja, mistral, openai_estimate
from service.store.formats.model import HarmonyChat, JinjaChat, MistralChat, OpenAIEstimateChat
from service.store.modelstore import LoadedModel
from service.store.registry import LoadedTokenizer

DEFAULT_SECONDS = 10.0  # without a deadline of the caller's
_METHODS = {JinjaChat: "jinja-template", HarmonyChat: "harmony", MistralChat: "mistral"}


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


@jinja.shared_json()
def count_chat(
    model: LoadedModel,
    tok: LoadedTokenizer,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    *,
    add_generation_prompt: bool = True,
    template_kwargs: dict[str, Any] | None = None,
    max_chars: int = 32 * 1024 * 1024,
    deadline: Deadline | None = None,
    breakdown: bool = True,
) -> ChatCount:
    """`max_chars` bounds each rendering, BREAKDOWN_CHARS what a breakdown renders or encodes
    beside the whole (a template's prefixes, derived or rendered, are each encoded: about
    (n + 1) / 2 times the whole's characters; harmony counts each turn once, and its preamble
    again at each system or developer message); `deadline` bounds the time of all and stops them
    when asked: beyond any, LimitExceededError (or WorkStoppedError)."""
    chat = model.profile.chat
    deadline = deadline or Deadline(DEFAULT_SECONDS)
    if isinstance(chat, OpenAIEstimateChat):
        return _estimate(chat, tok, messages, tools, add_generation_prompt, deadline=deadline)
    memo: StretchMemo = {}  # the renderings share most of their text: each stretch encoded once
    render = _renderer(chat, tok, template_kwargs or {}, max_chars, deadline, memo=memo)
    try:
        text, ids = render(messages, tools, add_generation_prompt)
    except ChatFormatError:  # the format's own checks name the message
        raise
    except TemplateError as exc:
        at, located = _refused(render, messages, tools, exc.template_message)
        raise TemplateError(exc.template_message, at, located) from None
    total = len(ids)
    prefixes = len(text) * (len(messages) + 1) // 2  # what a template's breakdown encodes
    if breakdown and isinstance(chat, (JinjaChat, MistralChat)) and prefixes > BREAKDOWN_CHARS:
        raise LimitExceededError(BREAKDOWN, BREAKDOWN_CHARS, prefixes)
    sha = (
        hashlib.sha256(chat.template.encode()).hexdigest() if isinstance(chat, JinjaChat) else None
    )
    method = _METHODS[type(chat)]
    if not breakdown:  # the total only: one rendering
        return ChatCount(total, [], 0, {"unattributed": total}, True, method, sha, text, ids)
    prefix_render = render
    if isinstance(chat, HarmonyChat):
        counts = prefix_counts.harmony(chat, tok, messages, tools, deadline, memo=memo)
    elif isinstance(chat, MistralChat):  # a prefix's last assistant message closed by its </s>
        prefix_render = _renderer(chat, tok, {}, max_chars, deadline, memo=memo, partial=True)
        counts = [*prefix_counts.rendered(prefix_render, messages[:-1], tools, strict=False), total]
    else:
        counts = prefix_counts.template(
            chat,
            tok,
            messages,
            tools,
            kwargs=template_kwargs or {},
            max_chars=max_chars,
            deadline=deadline,
            memo=memo,
            render=render,
        )
    first = next(k for k, c in enumerate(counts) if c is not None)
    tools_tokens = 0
    if tools:
        try:
            prefix = prefix_render(messages[:first], None, False)
            tools_tokens = (counts[first] or 0) - len(prefix[1])
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
    return ChatCount(total, per, tools_tokens, overhead, True, method, sha, text, ids)


def _refused(
    render: Render, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, refusal: str
) -> tuple[int | None, str]:
    """The message a template refused, and how it was found: bisection over the prefixes, about
    log2(n) renderings. The whole conversation is refused and the empty one is not, so some
    message k turns a prefix the template accepts (or refuses for a reason of its own, e.g. no
    user message yet) into one it refuses with the same message as the whole: `(k, "found")`.
    It is the first such message whenever refusals only grow with the conversation, as they do
    when a template checks each message in turn. `(None, "whole")`: the conversation without
    the generation prompt renders, so no message is to blame. `(None, "not found in time")`:
    the deadline or the size bound ended the search (each rendering checks both)."""

    def refuses(k: int) -> bool:
        try:
            render(messages[:k], tools, False)
        except TemplateError as exc:
            return exc.template_message == refusal
        return False

    accepted, refused = 0, len(messages)  # prefix lengths: accepted is not refused so, refused is
    try:
        if not refuses(refused):  # every prefix renders: the generation prompt is refused
            return None, "whole"
        while refused - accepted > 1:
            middle = (accepted + refused) // 2
            if refuses(middle):
                refused = middle
            else:
                accepted = middle
    except LimitExceededError:
        return None, "not found in time"
    return refused - 1, "found"


def _renderer(
    chat: JinjaChat | HarmonyChat | MistralChat,
    tok: LoadedTokenizer,
    kwargs: dict[str, Any],
    max_chars: int,
    deadline: Deadline,
    *,
    memo: StretchMemo,
    partial: bool = False,
) -> Render:
    """`memo`: the stretches encoded so far (the renderings of one count share most of their
    text), Jinja's kept with every special token allowed, harmony's and Mistral's with none.
    `partial`: Mistral's prefixes (a last assistant message closed)."""
    tokenizer = tok.tokenizer

    def time_left() -> float:
        return seconds_left(deadline)

    if isinstance(chat, JinjaChat):
        specials = prefix_counts.specials(chat)

        def render_jinja(
            msgs: list[dict[str, Any]], tools: list[dict[str, Any]] | None, agp: bool
        ) -> tuple[str, list[int]]:
            variables = {
                **specials,
                **kwargs,
                "messages": msgs,
                "tools": tools,
                "add_generation_prompt": agp,
            }
            text = jinja.render(
                chat.template, variables, max_chars=max_chars, max_seconds=time_left()
            )
            return text, tokenizer.encode(text, allowed_special="all", memo=memo)

        return render_jinja

    texts: dict[tuple[object, ...], tuple[object, str]] = {}  # Mistral's JSON texts, once a count

    def render_segments(
        msgs: list[dict[str, Any]], tools: list[dict[str, Any]] | None, agp: bool
    ) -> tuple[str, list[int]]:
        time_left()
        ids: list[int] = []
        parts: list[str] = []
        if isinstance(chat, MistralChat):
            segments = mistral.render(chat, msgs, tools, agp, partial=partial, texts=texts)
        else:
            segments = harmony.render(chat, msgs, tools, agp, max_chars=max_chars)
        for segment, special in segments:
            parts.append(segment)
            if special:
                ids.append(tokenizer.special_tokens[segment])
            else:
                ids += tokenizer.encode_ordinary(segment, memo)
        return "".join(parts), ids

    return render_segments


def _estimate(
    rule: OpenAIEstimateChat,
    tok: LoadedTokenizer,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    add_generation_prompt: bool,
    *,
    deadline: Deadline,
) -> ChatCount:
    def count(text: str) -> int:
        deadline.check()
        return tok.tokenizer.count(text, disallowed_special=frozenset())

    per = [
        MessageCount(m["role"], openai_estimate.message_tokens(rule, m, count)) for m in messages
    ]
    tools_tokens = openai_estimate.tools_tokens(rule, tools or [], count)
    priming = rule.reply_priming if add_generation_prompt else 0
    total = sum(m.tokens for m in per) + tools_tokens + priming
    overhead = {"preamble": 0, "generation_prompt": priming}
    return ChatCount(total, per, tools_tokens, overhead, False, "openai-estimate")
