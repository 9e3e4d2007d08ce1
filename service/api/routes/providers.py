"""The providers' own count routes, computed locally for any model in the store.

`POST /v1/messages/count_tokens` (Anthropic), `POST /v1/responses/input_tokens` (OpenAI
Responses), `POST /tokenize` and `POST /detokenize` (vLLM): a gateway or an agent that asks its
provider for a count can ask this service instead. A conversation of plain text messages gets the
same count here as from `/v1/models/{model}/count`.
"""

from __future__ import annotations

from litestar.params import JSONBody

from service.api import pieces as token_pieces
from service.api.budget import check_output, run_work
from service.api.dependencies import RegistryDep, WorkerDep, model_ready
from service.api.openapi import json_post
from service.api.routes.encoding import PIECES_COST
from service.api.routes.models import work_size
from service.api.wire.providers import (
    AnthropicCountRequest,
    DetokenizeRequest,
    DetokenizeResponse,
    InputTokens,
    ResponsesInputRequest,
    ResponsesInputTokens,
    TokenizeRequest,
    TokenizeResponse,
)
from service.bpe.deadline import Deadline
from service.errors import ChatInputError
from service.models import billing, framing, providers
from service.store.registry import Registry

TAG = "provider-shaped"


@json_post(
    "/v1/messages/count_tokens",
    name="anthropic_count_tokens",
    tag=TAG,
    summary="Count tokens, Anthropic's shape",
    returns="the input tokens",
)
async def anthropic_count_tokens(
    registry: RegistryDep, worker: WorkerDep, data: JSONBody[AnthropicCountRequest]
) -> InputTokens:
    """Anthropic's `messages/count_tokens` request (`model`, `system`, `messages` with text,
    image, thinking, tool_use and tool_result blocks, `tools`), counted for `model` as
    `/v1/models/{model}/count` counts the same conversation (images by the model's rule)."""

    ref = data.model_ref()

    def count(deadline: Deadline) -> int:
        chat = providers.from_anthropic(data.system, data.messages, data.tools)
        return _input_tokens(registry, ref, chat, worker.settings.max_body_bytes, deadline)

    await model_ready(registry, ref)
    size = work_size([data.system, *data.messages], data.tools, None, breakdown=False)
    return InputTokens(input_tokens=await run_work(size, count))


@json_post(
    "/v1/responses/input_tokens",
    name="responses_input_tokens",
    tag=TAG,
    summary="Count input tokens, OpenAI Responses' shape",
    returns="the input tokens",
)
async def responses_input_tokens(
    registry: RegistryDep, worker: WorkerDep, data: JSONBody[ResponsesInputRequest]
) -> ResponsesInputTokens:
    """OpenAI's `responses/input_tokens` request (`model`, `instructions`, `input` as a string or
    items, function `tools`), counted for `model` as `/v1/models/{model}/count` counts the same
    conversation."""

    ref = data.model_ref()
    data.check_self_contained()

    def count(deadline: Deadline) -> int:
        chat = providers.from_responses(data.instructions, data.input, data.tools)
        return _input_tokens(registry, ref, chat, worker.settings.max_body_bytes, deadline)

    items = [data.input] if isinstance(data.input, str) else data.input
    await model_ready(registry, ref)
    size = work_size([data.instructions, *items], data.tools, None, breakdown=False)
    return ResponsesInputTokens(
        object="response.input_tokens", input_tokens=await run_work(size, count)
    )


@json_post(
    "/tokenize",
    name="vllm_tokenize",
    tag=TAG,
    summary="Tokenize, vLLM's shape",
    returns="the ids, their count and the model's context window",
)
async def tokenize(
    registry: RegistryDep, worker: WorkerDep, data: JSONBody[TokenizeRequest]
) -> TokenizeResponse:
    """vLLM's `/tokenize`: a `prompt` encoded by the model's tokenizer (special-token literals
    become their ids, as vLLM does), or `messages` rendered by the model's chat format (exact
    formats only: an estimated model has no ids). `add_special_tokens` puts the model's BOS
    around them (`models.framing`); `continue_final_message` and `chat_template` are 422s."""
    if data.continue_final_message:
        raise ChatInputError(None, "continue_final_message", "not supported here")
    if data.chat_template is not None:
        raise ChatInputError(
            None, "chat_template", "not supported: the model's own chat format renders"
        )
    ref = data.model_ref()
    model = await model_ready(registry, ref)
    tok = registry.resolve(model.tokenizer_ref).tokenizer
    add = data.add_special_tokens
    framed = add if add is not None else data.prompt is not None
    before, after = framing.frame(model, tok) if framed else ((), ())

    def ids_and_strs(deadline: Deadline) -> tuple[list[int], list[str] | None]:
        tokens = ids(deadline)
        if not data.return_token_strs:
            return tokens, None
        strs, size = token_pieces.token_strs(tok, tokens)
        check_output(worker.settings, size + 8 * len(tokens), "bytes of tokens and token_strs")
        return tokens, strs

    def ids(deadline: Deadline) -> list[int]:
        return [*before, *unframed(deadline), *after]

    def unframed(deadline: Deadline) -> list[int]:
        if (data.prompt is None) == (data.messages is None):
            raise ChatInputError(None, "prompt", "give exactly one of prompt or messages")
        if data.prompt is not None:
            return tok.encode(data.prompt, allowed_special="all")
        counted = billing.count_conversation(
            registry,
            ref,
            data.messages or [],
            data.tools,
            breakdown=False,
            add_generation_prompt=data.add_generation_prompt,
            template_kwargs=data.chat_template_kwargs,
            deadline=deadline,
            max_chars=worker.settings.max_body_bytes * 4,
        )
        if counted.count.ids is None:
            how = (
                "images count by an estimate"
                if counted.count.method != "openai-estimate"
                else f"{model.ref} counts by an estimate ({counted.count.method})"
            )
            raise ChatInputError(None, "messages", f"{how}; there are no token ids")
        return counted.count.ids

    kwargs = data.chat_template_kwargs
    size = len(data.prompt or "") + work_size(data.messages or [], data.tools, kwargs, False)
    tokens, strs = await run_work(
        size * (PIECES_COST if data.return_token_strs else 1), ids_and_strs
    )
    return TokenizeResponse(
        count=len(tokens),
        max_model_len=model.profile.context_window,
        tokens=tokens,
        token_strs=strs,
    )


@json_post(
    "/detokenize",
    name="vllm_detokenize",
    tag=TAG,
    summary="Detokenize, vLLM's shape",
    returns="the text",
)
async def detokenize(
    registry: RegistryDep, worker: WorkerDep, data: JSONBody[DetokenizeRequest]
) -> DetokenizeResponse:
    """vLLM's `/detokenize`: ids decoded by the model's tokenizer, special tokens included, bytes
    of an unfinished character as U+FFFD."""
    model = await model_ready(registry, data.model_ref())
    tok = registry.resolve(model.tokenizer_ref).tokenizer

    def text(_: Deadline) -> str:
        check_output(worker.settings, tok.decoded_size(data.tokens))
        return tok.decode(data.tokens, "replace")

    return DetokenizeResponse(prompt=await run_work(len(data.tokens) * 4, text))


def _input_tokens(
    registry: Registry,
    model: str,
    chat: providers.Conversation,
    max_body_bytes: int,
    deadline: Deadline,
) -> int:
    counted = billing.count_conversation(
        registry,
        model,
        chat.messages,
        chat.tools,
        breakdown=False,
        max_chars=max_body_bytes * 4,
        deadline=deadline,
    )
    return counted.count.input_tokens


ROUTES = [anthropic_count_tokens, responses_input_tokens, tokenize, detokenize]
