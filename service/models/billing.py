"""The library calls behind the HTTP routes and the CLI: count a conversation for a model, and
estimate what a request costs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from service.bpe.deadline import Deadline
from service.errors import ChatInputError
from service.models.chat import mistral
from service.models.conversation import check_messages, check_tools
from service.models.counting import ChatCount, count_chat
from service.models.images import parts as images
from service.models.pricing import Estimate, estimate
from service.store.formats.model import MistralChat
from service.store.modelstore import LoadedModel
from service.store.registry import LoadedTokenizer, Registry


@dataclass(frozen=True, slots=True)
class Counted:
    model: LoadedModel
    tokenizer: LoadedTokenizer
    count: ChatCount


def count_conversation(
    registry: Registry,
    model_ref: str,
    messages: list[Any],
    tools: list[Any] | None = None,
    *,
    add_generation_prompt: bool = True,
    template_kwargs: dict[str, Any] | None = None,
    max_chars: int = 32 * 1024 * 1024,
    deadline: Deadline | None = None,
    breakdown: bool = True,
) -> Counted:
    model = registry.resolve_model(model_ref)
    tok = registry.resolve(model.tokenizer_ref)
    messages, found = images.split(messages)  # image parts: counted by the model's rule
    images.check_counted(model, found)
    mistral_format = isinstance(model.profile.chat, MistralChat)
    checked = check_messages(messages, mistral.join_parts if mistral_format else "\n".join)
    result = count_chat(
        model,
        tok,
        checked,
        check_tools(tools),
        add_generation_prompt=add_generation_prompt,
        template_kwargs=template_kwargs,
        max_chars=max_chars,
        deadline=deadline,
        breakdown=breakdown,
    )
    images.add_tokens(result, model, found)
    return Counted(model, tok, result)


@dataclass(frozen=True, slots=True)
class Estimated:
    model: LoadedModel
    tokenizer: LoadedTokenizer
    estimate: Estimate
    exact: bool
    method: str


def estimate_request(
    registry: Registry,
    model_ref: str,
    *,
    messages: list[Any] | None = None,
    tools: list[Any] | None = None,
    text: str | None = None,
    add_generation_prompt: bool = True,
    template_kwargs: dict[str, Any] | None = None,
    max_output_tokens: int | None = None,
    output_tokens: int | None = None,
    cached_input_tokens: int = 0,
    max_chars: int = 32 * 1024 * 1024,
    deadline: Deadline | None = None,
) -> Estimated:
    """Input tokens from a conversation or a text (exactly one); output tokens from
    `output_tokens` (expected), else `max_output_tokens` (the request's limit: the worst case),
    else none: the input alone is priced, and the model's maximum output apart."""
    if (messages is None) == (text is None):
        raise ChatInputError(None, "messages", "give exactly one of messages or text")
    if output_tokens is not None and max_output_tokens is not None:
        raise ChatInputError(None, "output_tokens", "give output_tokens or max_output_tokens")
    model = registry.resolve_model(model_ref)
    tok = registry.resolve(model.tokenizer_ref)
    if text is not None:
        n_input, exact, method = (
            tok.tokenizer.count(text, disallowed_special=frozenset()),
            True,
            "text",
        )
    else:
        counted = count_conversation(
            registry,
            model_ref,
            messages or [],
            tools,
            add_generation_prompt=add_generation_prompt,
            template_kwargs=template_kwargs,
            max_chars=max_chars,
            deadline=deadline,
            breakdown=False,
        )
        n_input, exact, method = (
            counted.count.input_tokens,
            counted.count.exact,
            counted.count.method,
        )
    if cached_input_tokens > n_input:
        raise ChatInputError(None, "cached_input_tokens", f"exceeds the {n_input} input tokens")
    if output_tokens is not None:
        n_output = output_tokens
    elif max_output_tokens is not None:
        if max_output_tokens > model.profile.max_output_tokens:
            raise ChatInputError(
                None,
                "max_output_tokens",
                f"exceeds the model's maximum of {model.profile.max_output_tokens}",
            )
        n_output = max_output_tokens
    else:
        n_output = 0
    result = estimate(registry.models, model, n_input, n_output, cached_input_tokens)
    return Estimated(model, tok, result, exact, method)
