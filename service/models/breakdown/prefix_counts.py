"""The token counts of a conversation's prefixes (k = 0..n messages, no generation prompt), what a
per-message breakdown is made of: a template's from the renderings `prefixes` derives and the
rest rendered, harmony's in one pass. Each is encoded with the count's memo of stretches.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from service.bpe.deadline import Deadline
from service.bpe.pipeline.pipeline import StretchMemo
from service.errors import LimitExceededError, TemplateError
from service.models.breakdown import prefixes as chat_prefixes
from service.models.chat import harmony as harmony_format
from service.store.formats.model import HarmonyChat, JinjaChat
from service.store.registry import LoadedTokenizer

BREAKDOWN_CHARS = 4 * 1024 * 1024  # rendered for one breakdown, beside the whole conversation
BREAKDOWN = "characters rendered for a per-message breakdown (`breakdown: false`: one rendering)"
Render = Callable[[list[dict[str, Any]], list[dict[str, Any]] | None, bool], tuple[str, list[int]]]


def template(
    chat: JinjaChat,
    tok: LoadedTokenizer,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    *,
    kwargs: dict[str, Any],
    max_chars: int,
    deadline: Deadline,
    memo: StretchMemo,
    render: Render,
) -> list[int | None]:
    """`rendered` of a template, with the renderings `prefixes` derives."""
    variables = {**specials(chat), **kwargs, "tools": tools, "add_generation_prompt": False}
    derived = chat_prefixes.prefix_renderings(
        chat.template,
        variables,
        messages,
        max_chars=max_chars,
        seconds_left=lambda: seconds_left(deadline),
    )

    def count(text: str) -> int:
        deadline.check()
        return len(tok.tokenizer.encode(text, allowed_special="all", memo=memo))

    return rendered(render, messages, tools, derived, count)


def rendered(
    render: Render,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    derived: list[chat_prefixes.Rendering | None] | None = None,
    count: Callable[[str], int] | None = None,
    *,
    strict: bool = True,
) -> list[int | None]:
    """Tokens of messages[:k] rendered, k = 0..n (None: the template refused that prefix; the
    whole too unless `strict`): the `derived` rendering counted where there is one
    (`prefixes`), else the prefix rendered."""
    counts: list[int | None] = []
    for k in range(len(messages) + 1):
        if derived is not None and count is not None and (rendering := derived[k]) is not None:
            counts.append(count(rendering.text()))
            continue
        try:
            counts.append(len(render(messages[:k], tools, False)[1]))
        except TemplateError:
            if strict and k == len(messages):
                raise
            counts.append(None)
    return counts


def harmony(
    chat: HarmonyChat,
    tok: LoadedTokenizer,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    deadline: Deadline,
    *,
    memo: StretchMemo | None = None,
) -> list[int | None]:
    """What `rendered` gives, in one pass: a prefix's rendering is its preamble, then its turns,
    which are the conversation's first turns (`harmony.turns`); the segments are encoded apart
    (special tokens between them), so counts add up. The preamble changes only at a system or
    developer message (its instructions): it is counted again there only, within
    BREAKDOWN_CHARS for all of them."""
    tokenizer = tok.tokenizer

    def count(segments: list[tuple[str, bool]]) -> int:
        deadline.check()
        return sum(
            1 if special else len(tokenizer.encode_ordinary(text, memo))
            for text, special in segments
        )

    turns = [count(segments) for _, segments in harmony_format.turns(messages)]
    counts: list[int | None] = []
    preamble, chars, running = 0, 0, 0
    for k in range(len(messages) + 1):
        if k == 0 or messages[k - 1]["role"] in ("system", "developer"):
            segments = harmony_format.preamble(chat, messages[:k], tools, max_chars=BREAKDOWN_CHARS)
            chars += sum(len(text) for text, _ in segments)
            if chars > BREAKDOWN_CHARS:
                raise LimitExceededError(BREAKDOWN, BREAKDOWN_CHARS, chars)
            preamble = count(segments)
        counts.append(preamble + running)
        if k < len(messages):
            running += turns[k]
    return counts


def specials(chat: JinjaChat) -> dict[str, str]:
    return {"bos_token": chat.bos_token or "", "eos_token": chat.eos_token or ""}


def seconds_left(deadline: Deadline) -> float:
    deadline.check()
    return max(deadline.at - time.monotonic(), 0.001)
