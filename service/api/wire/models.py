"""Request and response bodies of the model, estimate and text-budget routes (strict Structs).

Every field carries a description (and an example where one helps) for the OpenAPI document;
whole example bodies are in `examples.py`.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from msgspec import Meta, Raw

from service.api.wire.tokens import RequestBody, ResponseBody, TokenizerRef, doc
from service.models.conversation import check_nesting

Tokens = Annotated[int, Meta(ge=0)]

_SHA = "fbffe3d708f675c68ce830508176c73823632b8784ef19bed834d4fdc180b090"
_PRICE_SHA = "9b6eb8ea0d1aa34f37b670e7aed7e48279def2d5db5206ea0ec2c3293252ec14"
_MESSAGES = (
    "OpenAI-style messages: `role`, `content` (a string or a list of text and `image_url` parts), "
    "and optionally `name`, `tool_calls`, `tool_call_id`, `reasoning_content`; a problem names "
    "the index"
)
_TOOLS = "OpenAI-style tool (function) definitions offered to the model, if any"
_AGP = (
    "count the prompt that starts the assistant's reply, as a chat completion request does "
    "(Mistral's formats have none: false continues a last assistant message)"
)
_KWARGS = "extra variables for a Jinja chat template (e.g. `enable_thinking` for Qwen3)"
_METHOD = (
    "how the input was counted: `jinja-template`, `harmony` or `mistral` (exact), "
    "`openai-estimate` (OpenAI's published per-message rule), or `text` (a plain text, exact); "
    "image parts, "
    "counted by the model's `images` rule, make any count an estimate"
)
_MONEY = "a decimal string in `currency`, never a float"


class PriceInfo(ResponseBody, frozen=True):
    """A model's list prices, per million tokens, and the price file they come from."""

    currency: Annotated[str, doc("ISO 4217 currency of the prices", "USD")]
    input_per_million: Annotated[str, doc("price of a million input tokens, " + _MONEY, "2.50")]
    output_per_million: Annotated[str, doc("price of a million output tokens, " + _MONEY, "10.00")]
    source: Annotated[str, doc("where the prices come from, and how far to trust them")]
    read_on: Annotated[str, doc("when the prices were read (ISO 8601 date)", "2026-12-01")]
    price_file: Annotated[str, doc("the price file, `name@version`", "openai@1")]
    price_file_sha256: Annotated[str, doc("sha256 of the price file, hex", _PRICE_SHA)]
    cached_input_per_million: Annotated[
        str | None, doc("price of a million input tokens served from a prompt cache", "1.25")
    ] = None


class ModelInfo(ResponseBody, frozen=True):
    """A served model profile: its tokenizer, chat format, limits and prices."""

    name: Annotated[str, doc("model name", "gpt-4o")]
    version: Annotated[str, doc("version of this profile", "1")]
    ref: Annotated[str, doc("the `name@version` reference of exactly this profile", "gpt-4o@1")]
    default: Annotated[bool, doc("whether plain `name` (and each alias) resolves to this version")]
    sha256: Annotated[str, doc("sha256 of the model profile file, hex", _SHA)]
    aliases: Annotated[
        list[str], doc("other names that resolve to this model", ["gpt-4o-2024-08-06"])
    ]
    tokenizer: Annotated[str, doc("the tokenizer it counts with, `name@version`", "o200k_base@1")]
    chat_format: Annotated[
        str,
        doc(
            "how a conversation becomes tokens: `jinja` (the model's chat template), `harmony` "
            "(OpenAI's gpt-oss format), `mistral` (Mistral's instruct format, as mistral-common "
            "builds it) or `openai-estimate` (OpenAI's per-message rule)",
            "openai-estimate",
        ),
    ]
    exact: Annotated[bool, doc("whether conversation counts are exact (not an estimate)")]
    context_window: Annotated[int, doc("input and output tokens the model can hold", 128000)]
    max_output_tokens: Annotated[int, doc("most tokens the model may generate", 16384)]
    description: Annotated[str, doc("what this profile is")]
    source: Annotated[str, doc("where its format and limits come from")]
    template_sha256: Annotated[
        str | None, doc("sha256 of the Jinja chat template, hex (`jinja` only)")
    ] = None
    prices: Annotated[PriceInfo | None, doc("its list prices, if a price file has them")] = None
    images: Annotated[
        dict[str, Any] | None,
        doc(
            "how its image parts count, as in the profile (`rule`: openai-tiles, openai-patches, "
            "anthropic or fixed); absent: images are refused",
            {"rule": "openai-tiles", "base": 85, "per_tile": 170},
        ),
    ] = None


class ModelListResponse(ResponseBody, frozen=True):
    """Every loaded model profile, every version."""

    models: Annotated[list[ModelInfo], doc("the loaded model profiles")]


class ModelRef(ResponseBody, frozen=True):
    """Which exact model profile produced a result: name, version and the file's sha256."""

    name: Annotated[str, doc("model name", "gpt-4o")]
    version: Annotated[str, doc("model profile version", "1")]
    sha256: Annotated[str, doc("sha256 of the model profile file, hex", _SHA)]


ABSENT = msgspec.field(default_factory=Raw)  # an ignored parameter not given: b""
_IGNORED = "an OpenAI chat-completions parameter: accepted, not counted, listed in `ignored`"


class ChatRequestParams(RequestBody, frozen=True):
    """The parameters of an OpenAI chat-completions request that do not change its input
    tokens: a whole request body is accepted as it is sent, and the answer lists what it
    ignored. (Any other unknown field is still a 400, so a typo is not silently dropped.)
    Each is kept as its raw JSON (checked well-formed, never built into objects): a `logit_bias`
    of a million keys or `stop` of a million lists cost the event loop seconds of allocation
    and garbage collection as `Any`."""

    model: Annotated[Raw, doc(_IGNORED + " (the path names the model)")] = ABSENT
    temperature: Annotated[Raw, doc(_IGNORED)] = ABSENT
    top_p: Annotated[Raw, doc(_IGNORED)] = ABSENT
    n: Annotated[Raw, doc(_IGNORED)] = ABSENT
    stream: Annotated[Raw, doc(_IGNORED)] = ABSENT
    stream_options: Annotated[Raw, doc(_IGNORED)] = ABSENT
    stop: Annotated[Raw, doc(_IGNORED)] = ABSENT
    presence_penalty: Annotated[Raw, doc(_IGNORED)] = ABSENT
    frequency_penalty: Annotated[Raw, doc(_IGNORED)] = ABSENT
    logit_bias: Annotated[Raw, doc(_IGNORED)] = ABSENT
    logprobs: Annotated[Raw, doc(_IGNORED)] = ABSENT
    top_logprobs: Annotated[Raw, doc(_IGNORED)] = ABSENT
    seed: Annotated[Raw, doc(_IGNORED)] = ABSENT
    user: Annotated[Raw, doc(_IGNORED)] = ABSENT
    response_format: Annotated[Raw, doc(_IGNORED)] = ABSENT
    tool_choice: Annotated[Raw, doc(_IGNORED)] = ABSENT
    parallel_tool_calls: Annotated[Raw, doc(_IGNORED)] = ABSENT
    service_tier: Annotated[Raw, doc(_IGNORED)] = ABSENT
    store: Annotated[Raw, doc(_IGNORED)] = ABSENT
    metadata: Annotated[Raw, doc(_IGNORED)] = ABSENT
    reasoning_effort: Annotated[Raw, doc(_IGNORED)] = ABSENT
    verbosity: Annotated[Raw, doc(_IGNORED)] = ABSENT
    modalities: Annotated[Raw, doc(_IGNORED)] = ABSENT
    prediction: Annotated[Raw, doc(_IGNORED)] = ABSENT
    prompt_cache_key: Annotated[Raw, doc(_IGNORED)] = ABSENT
    safety_identifier: Annotated[Raw, doc(_IGNORED)] = ABSENT
    web_search_options: Annotated[Raw, doc(_IGNORED)] = ABSENT
    max_tokens: Annotated[Tokens | None, doc("the older name of `max_completion_tokens`")] = None
    max_completion_tokens: Annotated[
        Tokens | None, doc("the request's output limit: what an estimate prices as the output")
    ] = None

    def ignored(self) -> list[str] | None:
        """The OpenAI parameters this body carries that the count does not use (None: none)."""
        used = ("max_tokens", "max_completion_tokens") if isinstance(self, EstimateRequest) else ()
        names = [
            name for name in _OPENAI_PARAMS if name not in used and _given(getattr(self, name))
        ]
        return names or None


class ChatCountRequest(ChatRequestParams, frozen=True, kw_only=True):
    """OpenAI-style messages (role, content, name, tool_calls, tool_call_id, reasoning_content)
    and tools; each message is checked on its own so a problem names its index. A whole OpenAI
    chat-completions request is accepted: its other parameters are listed in `ignored`."""

    messages: Annotated[
        list[dict[str, Any]], doc(_MESSAGES, [{"role": "user", "content": "Hello, world"}])
    ]
    tools: Annotated[list[dict[str, Any]] | None, doc(_TOOLS)] = None
    add_generation_prompt: Annotated[bool, doc(_AGP)] = True
    chat_template_kwargs: Annotated[
        dict[str, Any] | None, doc(_KWARGS, {"enable_thinking": False})
    ] = None
    return_text: Annotated[bool, doc("also return the rendered prompt (exact formats only)")] = (
        False
    )
    return_ids: Annotated[bool, doc("also return the prompt's token ids (exact formats only)")] = (
        False
    )
    breakdown: Annotated[
        bool,
        doc(
            "also count each message (`true`: `messages`, `tools_tokens` and `overhead` per part, "
            "from the renderings of the conversation's prefixes, up to (n + 1) / 2 times the "
            "work of the total; `false`, the default: the total only, one rendering; the "
            "estimate rule's breakdown costs nothing and is always given)"
        ),
    ] = False

    def __post_init__(self) -> None:  # as it is decoded: nothing below recurses too deep
        check_nesting(self.messages, self.tools, self.chat_template_kwargs)


class MessageTokens(ResponseBody, frozen=True):
    """The tokens one message adds to the conversation."""

    index: Annotated[int, doc("the message's index in `messages`", 0)]
    role: Annotated[str, doc("the message's role", "user")]
    tokens: Annotated[int, doc("tokens the message adds, its formatting included", 7)]
    merged_with_next: Annotated[
        bool,
        doc("the template renders it together with the next message, which counts both (0 here)"),
    ] = False


class ChatCountResponse(ResponseBody, frozen=True):
    """The input tokens of a conversation; `messages`, `tools_tokens` and `overhead` add up to
    `input_tokens`."""

    input_tokens: Annotated[int, doc("the prompt's tokens, as the model is billed", 18)]
    messages: Annotated[list[MessageTokens], doc("per message, in order (empty without breakdown)")]
    tools_tokens: Annotated[int, doc("tokens that adding the tools adds", 0)]
    overhead: Annotated[
        dict[str, int],
        doc(
            "tokens no message owns: `preamble` (before the first message), `generation_prompt` "
            "(the start of the reply), or `unattributed` (without breakdown)",
            {"preamble": 0, "generation_prompt": 3},
        ),
    ]
    exact: Annotated[bool, doc("whether the count is exact (false for `openai-estimate`)")]
    method: Annotated[str, doc(_METHOD, "openai-estimate")]
    model: ModelRef  # described by ModelRef (a field description would wrap the $ref)
    tokenizer: TokenizerRef  # described by TokenizerRef (a field description would wrap the $ref)
    template_sha256: Annotated[
        str | None, doc("sha256 of the Jinja chat template that rendered the prompt, hex")
    ] = None
    text: Annotated[str | None, doc("the rendered prompt, with `return_text`")] = None
    ids: Annotated[list[int] | None, doc("the prompt's token ids, with `return_ids`")] = None
    ignored: Annotated[
        list[str] | None, doc("OpenAI request parameters the body carried and the count ignored")
    ] = None


class EstimateRequest(ChatRequestParams, frozen=True, kw_only=True):
    """A conversation (`messages`, `tools`) or a `text`; `output_tokens` (an expected count) or
    `max_output_tokens` (the request's limit, also read from an OpenAI request's
    `max_completion_tokens` or `max_tokens`; without any, the input alone is priced and the
    model's maximum output apart); `cached_input_tokens` of the input served by a prompt cache."""

    messages: Annotated[
        list[dict[str, Any]] | None,
        doc(_MESSAGES + "; give `messages` or `text`", [{"role": "user", "content": "Hi"}]),
    ] = None
    tools: Annotated[list[dict[str, Any]] | None, doc(_TOOLS)] = None
    text: Annotated[
        str | None, doc("a plain text as the whole input; give `messages` or `text`", "Hello")
    ] = None
    add_generation_prompt: Annotated[bool, doc(_AGP)] = True
    chat_template_kwargs: Annotated[
        dict[str, Any] | None, doc(_KWARGS, {"enable_thinking": False})
    ] = None
    max_output_tokens: Annotated[
        Tokens | None,
        doc(
            "the request's output limit, priced as the worst case (default: no output priced)", 1000
        ),
    ] = None
    output_tokens: Annotated[
        Tokens | None, doc("an expected number of output tokens instead of the limit", 100)
    ] = None
    cached_input_tokens: Annotated[
        Tokens, doc("input tokens served from a prompt cache (at most the input)", 0)
    ] = 0

    def __post_init__(self) -> None:  # as it is decoded: nothing below recurses too deep
        check_nesting(self.messages, self.tools, self.chat_template_kwargs)


class Costs(ResponseBody, frozen=True):
    """The cost of each part of a request and in total, decimal strings in `currency`."""

    input: Annotated[str, doc("uncached input tokens", "0.000045")]
    cached_input: Annotated[str, doc("cached input tokens", "0.0")]
    output: Annotated[str, doc("output tokens", "0.001")]
    total: Annotated[str, doc("the sum of the parts", "0.001045")]


class MaxOutput(ResponseBody, frozen=True):
    """What the model's longest reply would cost: a bound, not part of `cost`."""

    tokens: Annotated[int, doc("the model's maximum output tokens", 16384)]
    cost: Annotated[str, doc("their cost, " + _MONEY, "0.16384")]


class EstimateResponse(ResponseBody, frozen=True):
    """Input and output tokens of a request, the cost of each part and in total; the cost of the
    model's longest reply apart (`max_output`)."""

    input_tokens: Annotated[int, doc("all input tokens, cached ones included", 18)]
    cached_input_tokens: Annotated[int, doc("of which served from a prompt cache", 0)]
    output_tokens: Annotated[int, doc("output tokens priced", 100)]
    exact: Annotated[bool, doc("whether the input count is exact (false for `openai-estimate`)")]
    method: Annotated[str, doc(_METHOD, "openai-estimate")]
    cost: Costs  # described by Costs (a field description would wrap the $ref)
    currency: Annotated[str, doc("ISO 4217 currency of `cost`", "USD")]
    price_file: Annotated[str, doc("the price file used, `name@version`", "openai@1")]
    price_file_sha256: Annotated[str, doc("sha256 of the price file, hex", _PRICE_SHA)]
    context_window: Annotated[int, doc("the model's context window", 128000)]
    remaining_context: Annotated[
        int, doc("context left after input and output (negative: it does not fit)", 127882)
    ]
    max_output: MaxOutput  # described by MaxOutput (a field description would wrap the $ref)
    model: ModelRef  # described by ModelRef (a field description would wrap the $ref)
    tokenizer: TokenizerRef  # described by TokenizerRef (a field description would wrap the $ref)
    ignored: Annotated[
        list[str] | None, doc("OpenAI request parameters the body carried and the count ignored")
    ] = None


def _given(value: object) -> bool:
    """Whether a parameter was sent, other than as null (a raw one, or `max_tokens`)."""
    return value is not None and not (isinstance(value, Raw) and bytes(value) in (b"", b"null"))


_OPENAI_PARAMS = tuple(
    n for n in ChatRequestParams.__struct_fields__ if n not in RequestBody.__struct_fields__
)
