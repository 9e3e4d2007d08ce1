"""Model routes: list and describe models, count a conversation, estimate a request's cost."""

from __future__ import annotations

import hashlib
from typing import Any

import msgspec
from litestar.params import FromPath, JSONBody

from service.api.budget import check_output, run_work
from service.api.dependencies import RegistryDep, WorkerDep, model_ready
from service.api.openapi import json_get, json_post
from service.api.routes.catalog import ref_of
from service.api.wire.models import (
    ChatCountRequest,
    ChatCountResponse,
    Costs,
    EstimateRequest,
    EstimateResponse,
    MaxOutput,
    MessageTokens,
    ModelInfo,
    ModelListResponse,
    ModelRef,
    PriceInfo,
)
from service.models import billing
from service.models.pricing import money
from service.store.formats.model import JinjaChat, OpenAIEstimateChat
from service.store.modelstore import LoadedModel
from service.store.registry import Registry


def info_of(registry: Registry, m: LoadedModel) -> ModelInfo:
    p = m.profile
    price = registry.models.prices.get(m.name)
    prices = None
    if price is not None:
        pr = price.price
        prices = PriceInfo(
            currency=price.currency,
            input_per_million=pr.input_per_million,
            cached_input_per_million=pr.cached_input_per_million,
            output_per_million=pr.output_per_million,
            source=pr.source,
            read_on=pr.read_on,
            price_file=price.file_ref,
            price_file_sha256=price.file_sha256,
        )
    template = p.chat.template if isinstance(p.chat, JinjaChat) else None
    return ModelInfo(
        name=m.name,
        version=m.version,
        ref=m.ref,
        default=m.is_default,
        sha256=m.sha256,
        aliases=p.aliases,
        tokenizer=p.tokenizer,
        chat_format=type(p.chat).__struct_config__.tag,  # type: ignore[arg-type]
        exact=not isinstance(p.chat, OpenAIEstimateChat),
        context_window=p.context_window,
        max_output_tokens=p.max_output_tokens,
        description=p.metadata.description,
        source=p.metadata.source,
        prices=prices,
        template_sha256=hashlib.sha256(template.encode()).hexdigest() if template else None,
        images=msgspec.to_builtins(p.images) if p.images is not None else None,
    )


PER_ITEM = 256  # the work of a message or tool beside its bytes: a template's loop step, its tags


def work_size(
    messages: list[Any], tools: list[Any] | None, kwargs: dict[str, Any] | None, breakdown: bool
) -> int:
    """The work a conversation costs, in bytes of text (for `run_work`): its whole size (every
    field of every message and tool, not the text alone) and a step per message and tool; a
    per-message breakdown encodes every prefix (renders some again), about (n + 1) / 2 times
    the whole."""
    items = len(messages) + len(tools or [])
    size = _size([messages, tools, kwargs]) + PER_ITEM * items
    return size * (len(messages) + 1) // 2 if breakdown else size


def _size(value: Any) -> int:
    """The JSON size of a decoded body, about: its strings and keys and 2 bytes per value,
    walked without recursion (bodies may nest deeply)."""
    size, stack = 0, [value]
    while stack:
        item = stack.pop()
        size += 2
        if isinstance(item, str):
            size += len(item)
        elif isinstance(item, dict):
            size += sum(len(k) for k in item if isinstance(k, str))
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return size


def model_ref(m: LoadedModel) -> ModelRef:
    return ModelRef(name=m.name, version=m.version, sha256=m.sha256)


@json_get(
    "/v1/models",
    name="models",
    tag="models",
    summary="List the models",
    returns="the loaded model profiles",
)
def list_models(registry: RegistryDep) -> ModelListResponse:
    """Every loaded model profile (every version of every name): its tokenizer, chat format, whether
    its counts are exact, context and output limits, and list prices."""
    return ModelListResponse(models=[info_of(registry, m) for m in registry.models.models.values()])


@json_get(
    "/v1/models/{model:str}",
    name="models",
    tag="models",
    summary="Describe one model",
    returns="the model profile",
    problems=(400, 404, 503),
)
def get_model(registry: RegistryDep, model: FromPath[str]) -> ModelInfo:
    """The profile `{model}` (a name, an alias or `name@version`) resolves to: exact version,
    sha256, tokenizer, chat format, limits and prices."""
    return info_of(registry, registry.resolve_model(model))


@json_post(
    "/v1/models/{model:str}/count",
    name="count_chat",
    tag="models",
    summary="Count a conversation's tokens",
    returns="the counts, and the model and vocabulary that counted",
)
async def count_chat(
    registry: RegistryDep, worker: WorkerDep, model: FromPath[str], data: JSONBody[ChatCountRequest]
) -> ChatCountResponse:
    """The input tokens of a chat completion request (`messages`, `tools`) as the model is billed
    for them: rendered with the model's chat template or harmony format (exact), or by OpenAI's
    published per-message rule (`exact: false`). Per-message `messages`, `tools_tokens` and
    `overhead` add up to `input_tokens`. A malformed message is a 422 naming its index."""
    await model_ready(registry, model)
    size = work_size(data.messages, data.tools, data.chat_template_kwargs, data.breakdown)
    counted = await run_work(
        size,
        lambda deadline: billing.count_conversation(
            registry,
            model,
            data.messages,
            data.tools,
            breakdown=data.breakdown,
            add_generation_prompt=data.add_generation_prompt,
            template_kwargs=data.chat_template_kwargs,
            max_chars=worker.settings.max_body_bytes * 4,
            deadline=deadline,
        ),
    )
    c = counted.count
    if data.return_text or data.return_ids:  # what was counted, sized before it is answered
        t = c.text if data.return_text and c.text else ""
        text = len(t) if t.isascii() else len(t.encode("utf-8", "replace"))
        ids = 8 * len(c.ids) if data.return_ids and c.ids else 0
        check_output(worker.settings, text + ids, "bytes of text and ids per answer")
    return ChatCountResponse(
        input_tokens=c.input_tokens,
        tools_tokens=c.tools_tokens,
        overhead=c.overhead,
        messages=[
            MessageTokens(
                index=i, role=m.role, tokens=m.tokens, merged_with_next=m.merged_with_next
            )
            for i, m in enumerate(c.messages)
        ],
        exact=c.exact,
        method=c.method,
        model=model_ref(counted.model),
        tokenizer=ref_of(counted.tokenizer),
        template_sha256=c.template_sha256,
        text=c.text if data.return_text else None,
        ids=c.ids if data.return_ids else None,
        ignored=data.ignored(),
    )


@json_post(
    "/v1/models/{model:str}/estimate",
    name="estimate",
    tag="models",
    summary="Estimate a request's cost",
    returns="tokens, costs, and the model, tokenizer and prices used",
)
async def estimate(
    registry: RegistryDep, worker: WorkerDep, model: FromPath[str], data: JSONBody[EstimateRequest]
) -> EstimateResponse:
    """Input tokens of a conversation (as count) or a `text`, output tokens (`output_tokens`, else
    `max_output_tokens` or an OpenAI request's `max_completion_tokens`/`max_tokens`, else none),
    and the cost of each part and in total as decimal strings, from the model's price file;
    `max_output` is what the model's longest reply would cost, apart; `remaining_context` is
    what is left of the context window."""
    limit = next(
        (
            n
            for n in (data.max_output_tokens, data.max_completion_tokens, data.max_tokens)
            if n is not None
        ),
        None,
    )
    await model_ready(registry, model)
    size = len(data.text or "") + work_size(
        data.messages or [], data.tools, data.chat_template_kwargs, breakdown=False
    )
    est = await run_work(
        size,
        lambda deadline: billing.estimate_request(
            registry,
            model,
            messages=data.messages,
            tools=data.tools,
            text=data.text,
            add_generation_prompt=data.add_generation_prompt,
            template_kwargs=data.chat_template_kwargs,
            max_output_tokens=limit,
            output_tokens=data.output_tokens,
            cached_input_tokens=data.cached_input_tokens,
            max_chars=worker.settings.max_body_bytes * 4,
            deadline=deadline,
        ),
    )
    e = est.estimate
    return EstimateResponse(
        input_tokens=e.input_tokens,
        cached_input_tokens=e.cached_input_tokens,
        output_tokens=e.output_tokens,
        exact=est.exact,
        method=est.method,
        cost=Costs(
            input=money(e.input_cost),
            cached_input=money(e.cached_input_cost),
            output=money(e.output_cost),
            total=money(e.total_cost),
        ),
        currency=e.price.currency,
        price_file=e.price.file_ref,
        price_file_sha256=e.price.file_sha256,
        context_window=est.model.profile.context_window,
        remaining_context=e.remaining_context,
        model=model_ref(est.model),
        tokenizer=ref_of(est.tokenizer),
        ignored=data.ignored(),
        max_output=MaxOutput(tokens=e.max_output_tokens, cost=money(e.max_output_cost)),
    )


ROUTES = [list_models, get_model, count_chat, estimate]
